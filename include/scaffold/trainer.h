/* Training for `scaffold benchmark` (spec §6-7, docs/architecture.md §7): everything around the task-graph
 * step (scaffold/graph.h) - the samplers, the epoch loop with validation, the learning-rate
 * schedule, warm-up with rollback, convergence and divergence checks, checkpoints and resume, and
 * the run directory's outputs (config copies, restart.sh, train_stats.csv, figures).
 *
 *   src/train/sampler.c     DistributedSampler semantics (train: shuffled + padded; val: contiguous)
 *   src/train/checkpoint.c  our checkpoint format (header, state, params, Adam m and v, FNV-1a 64)
 *   src/train/outputs.c     run directory, config.yaml/overrides.yaml/restart.sh, CSV, gnuplot figures
 *   src/train/trainer.c     the epoch loop: training steps, validation, end of epoch, SIGINT/SIGTERM, --max-count
 *   src/train/train_step.c  one optimizer step (a batch through the task graph), warm-up, the run context
 *   src/train/train_resume.c resume, checkpoint writes, train_stats.csv set-up and partial rows
 *   src/cli/cmd_benchmark.c the command: CLI, runtime, dataset, model, graph, then sf_train */
#ifndef SF_TRAINER_H
#define SF_TRAINER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scaffold/config.h"
#include "scaffold/dataset.h"
#include "scaffold/graph.h"
#include "scaffold/model.h"
#include "scaffold/ratelog.h"

/* ============================== samplers (sampler.c) ====================================== */

/* DistributedSampler's own seed (spec §6.6, §11.21): the epoch-e permutation is seeded with
 * SF_SAMPLER_SEED + e, independent of the config's `seed`. torch.randperm cannot be bit-matched,
 * so the permutation comes from our RNG (scaffold/rng.h, stream SF_SAMPLER_STREAM), Fisher-Yates. */
#define SF_SAMPLER_SEED 0
#define SF_SAMPLER_STREAM 0x53414d504c4552ULL /* "SAMPLER" */

/* Samples per replica per epoch: ceil(n / replicas). */
int sf_sampler_per_replica(int n, int replicas);
/* Steps per epoch per replica: ceil(ceil(n / replicas) / batch). */
int sf_sampler_steps(int n, int replicas, int batch);
/* The training order of `rank` for `epoch`: a permutation of 0..n-1 (seeded SF_SAMPLER_SEED +
 * epoch), padded to ceil(n/R)*R by repeating its head, then every R-th element from `rank`.
 * out needs sf_sampler_per_replica(n, R) entries; returns that count. */
int sf_sampler_train_order(int n, int replicas, int rank, long epoch, int *out);
/* The validation block of `rank`: contiguous, unpadded; the first n mod R replicas get one more. */
void sf_sampler_val_range(int n, int replicas, int rank, int *start, int *count);

/* ============================== checkpoints (checkpoint.c) ================================= */

#define SF_CKPT_MAGIC "SFCKPT\x1a\n"   /* 8 bytes */
#define SF_CKPT_FORMAT_VERSION 1u

/* What a checkpoint must match to be loaded into a network. */
typedef struct {
  int32_t problem_scale, bottleneck, base_channels, n_classes, groups, in_channels;
  uint64_t nparams;
} sf_ckpt_topology;

/* Training state stored with the parameters and the Adam moments. */
typedef struct {
  sf_ckpt_topology topo;
  char code_version[32];       /* SF_VERSION of the writer (informational) */
  long epoch;                  /* last completed epoch (0: none) */
  double val_loss_avg;         /* of that epoch (NaN when none) */
  double val_dice;             /* of that epoch (0 when none); restored so a converged run exits */
  double best_val_loss;        /* lowest val_loss_avg seen at a save point (+inf: none) */
  long global_step;            /* training steps taken (the Adam step counter) */
  long total_optimizer_steps;  /* optimizer steps applied */
  long sched_steps;            /* scheduler steps taken (lr = schedule(sched_steps)) */
  long sampler_seed;           /* SF_SAMPLER_SEED */
  /* An epoch interrupted at a step boundary (SIGINT/SIGTERM, --max-count): resume continues it
   * at step partial_steps with these running sums, so the result equals an uninterrupted run. */
  long partial_epoch;          /* 0: none; else the epoch in progress (= epoch + 1) */
  long partial_steps, partial_opt_steps;
  double partial_loss, partial_dice, partial_samples, partial_seconds;
  /* Distribution of the writer (0 in files from before these fields: read as 1). The running sums
   * above are global (over replicas); an epoch stopped midway resumes only with `replicas`. */
  long replicas, spatial_ranks;
  /* The writer's `optimizer` (what the m / v arrays hold; "" in files from before it: read as ADAM,
   * the only optimizer then). A resume refuses a different optimizer. */
  char optimizer[16];
} sf_ckpt_state;

typedef enum {
  SF_CKPT_OK = 0,
  SF_CKPT_MISSING,   /* no such file */
  SF_CKPT_CORRUPT,   /* bad magic, truncated, wrong size or checksum */
  SF_CKPT_MISMATCH,  /* a valid checkpoint of another format version or topology */
  SF_CKPT_IOERR,     /* cannot read or write */
} sf_ckpt_status;

void sf_ckpt_topology_of(const sf_unet *u, sf_ckpt_topology *t);
/* Initial state: epoch 0, no best, val_dice 0. */
void sf_ckpt_state_init(sf_ckpt_state *s, const sf_unet *u);
/* Writes header, state, params, m, v (n floats each) and an FNV-1a 64 checksum of everything
 * before it, atomically (scaffold/fsutil.h). Returns 0, or -1 with a message in err. */
int sf_checkpoint_write(const char *path, const sf_ckpt_state *s, const float *params, const float *m,
                        const float *v, char *err, size_t errlen);
/* Reads and verifies a checkpoint: magic, format version, file size, checksum, and (expect != NULL)
 * the topology. params/m/v (nparams floats each) may be NULL to verify without keeping them.
 * Returns SF_CKPT_OK, or a status with a message in err that names the file and what is wrong. */
sf_ckpt_status sf_checkpoint_read(const char *path, const sf_ckpt_topology *expect, sf_ckpt_state *s,
                                  float *params, float *m, float *v, char *err, size_t errlen);
/* FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3), continuing from h. */
uint64_t sf_fnv1a64(uint64_t h, const void *data, size_t len);
#define SF_FNV1A64_INIT 0xcbf29ce484222325ULL

/* ============================== outputs (outputs.c) ======================================= */

#define SF_TRAIN_STATS_HEADER                                                                        \
  "epoch,epoch_loss,overall_loss,val_loss_epoch,val_loss_avg,train_dice,val_dice,epoch_duration," \
  "optimizer_steps,total_optimizer_steps"

/* One train_stats.csv row (spec §7.2). */
typedef struct {
  long epoch;
  double epoch_loss, overall_loss, val_loss_epoch, val_loss_avg, train_dice, val_dice, epoch_duration;
  long optimizer_steps, total_optimizer_steps;
} sf_epoch_row;

/* The row written for an epoch stopped by SIGINT/SIGTERM: the training columns cover the steps run
 * so far, the three validation columns are nan (no validation ran; a finished epoch never has a
 * nan there) and optimizer_steps counts the steps applied. A resume starts at that epoch, so the
 * partial row is cut (upstream's truncation at the first row >= start epoch) and replaced by the
 * finished epoch's row. The header stays upstream's. */
/* (A finished epoch's row is this one with its validation columns filled in.) */
sf_epoch_row sf_epoch_row_partial(long epoch, double loss_sum, double dice_sum, double nsamp, double seconds,
                                  long optimizer_steps, long total_optimizer_steps);
int sf_epoch_row_is_partial(const sf_epoch_row *r);

/* Creates a fresh <base>/<job_name>_<YYYYmmdd-HHMMSS>[-k] (k from 1 on a same-second collision).
 * Returns the malloc'ed path, or NULL with a message in err. */
char *sf_run_dir_create(const char *base, const char *job_name, char *err, size_t errlen);
/* config.yaml, overrides.yaml and restart.sh (executable) in run_dir; with copy_source, also a
 * copy of c->source_file under its own name. Returns 0, or -1 with a message in err. */
int sf_run_dir_write_configs(const sf_config *c, const char *run_dir, int copy_source, char *err, size_t errlen);
/* restart.sh: `scaffold benchmark --config $RUN_DIR/config.yaml --restart --run-dir $RUN_DIR`. */
int sf_write_restart_script(const char *run_dir, const char *scaffold_exe, char *err, size_t errlen);

/* A row as upstream writes it: integers, and floats as Python's str(). buf >= 512 bytes. */
void sf_epoch_row_format(const sf_epoch_row *r, char *buf, size_t len);
/* Parses one data line. Returns 0, or -1 if it is not 10 numeric fields. */
int sf_epoch_row_parse(const char *line, sf_epoch_row *r);
/* Writes the header alone (atomically). */
int sf_stats_csv_create(const char *path);
/* Appends one row (fsync'ed). */
int sf_stats_csv_append(const char *path, const sf_epoch_row *r);
/* Loads every row (*rows malloc'ed). A missing file gives 0 rows. Returns 0, or -1 with err set
 * (wrong header, unparsable line - naming the file and line). */
int sf_stats_csv_load(const char *path, sf_epoch_row **rows, size_t *n, char *err, size_t errlen);
/* Keeps the rows with epoch < start_epoch (rewritten atomically with the header); *rows gets
 * them. A missing file is created with the header. Returns 0 or -1 with err set. */
int sf_stats_csv_truncate(const char *path, long start_epoch, sf_epoch_row **rows, size_t *n, char *err,
                          size_t errlen);
/* figures/train_loss.png (log y), val_dice.png, val_loss.png from the CSV through gnuplot, titled
 * "v=<vol_size>, c=<n_categories>, u=<unet_layers>". Returns 0 when written; 1 when skipped
 * (gnuplot missing, no rows: the reason in err); -1 on failure (err). */
int sf_write_figures(const sf_config *c, const char *run_dir, char *err, size_t errlen);
/* The gnuplot PNG terminal available ("pngcairo" or "png"), or NULL when gnuplot is missing. */
const char *sf_gnuplot_png_terminal(void);

/* ============================== the training loop (trainer.c) ============================= */

typedef struct {
  const sf_config *cfg;
  const sf_dataset *data;
  const sf_unet *unet;
  sf_graph *graph;
  float *params;              /* the arena registered with the graph (initialised) */
  const float *class_w;       /* n_classes */
  const char *run_dir;
  int resume;                 /* load checkpoint_last (fallback best) if present */
  int require_checkpoint;     /* --restart: no usable checkpoint is an error */
  sf_ratelog *rates;          /* every training step is fed here; its max_count stops training */
  int verbose;
  FILE *log;                  /* progress lines (stdout) */
} sf_train_setup;

typedef struct {
  int status;                 /* 0, SF_EXIT_FAILURE (diverged, I/O), SF_EXIT_USAGE (bad checkpoint,
                               * bad batch size), SF_EXIT_INTERRUPTED */
  int converged;              /* val_dice >= target_dice */
  int already_converged;      /* restored from a checkpoint that had converged */
  int stopped_max_count;      /* --max-count reached */
  int interrupted;            /* the signal number, or 0 */
  long start_epoch;           /* first epoch this invocation ran */
  long epochs;                /* last completed epoch */
  long epochs_run;            /* epochs completed by this invocation */
  long total_optimizer_steps;
  double sum_epoch_time;      /* Σ epoch_duration over every CSV row (upstream's total_train_time) */
  double best_val_dice, final_val_dice, final_val_loss, final_train_loss, final_lr;
  double warmup_seconds;
  double train_samples;       /* samples trained by this invocation */
  /* The granularity of the timed training steps (docs/runtimes.md; the result JSON's "granularity"): steps counted
   * (every one of this invocation but its first, which pays first touches and workspace growth), their summed wall
   * seconds, the summed run time of their task bodies (host executors; 0 under StarPU) and the tasks of a step;
   * the first step's own two times, for a run of one step */
  long gran_steps;
  double gran_step_seconds, gran_body_seconds, gran_first_step_seconds, gran_first_body_seconds;
  long gran_tasks_per_step;
  char error[4096];
} sf_train_result;

/* SIGINT/SIGTERM: the first one asks training to stop at the next step boundary (then a consistent
 * checkpoint, exit status 130); a second one exits at once with 130. */
void sf_train_install_signals(void);
int sf_train_stop_requested(void); /* the signal number, or 0 */

/* Warm-up (spec §6.10): min(warmup_batches, steps/epoch) training steps in epoch-0 order (plus one
 * per ragged batch size) and min(warmup_batches, n_val) validation samples, then params, Adam m/v
 * and the step counter are restored. Returns the seconds it took. */
double sf_train_warmup(const sf_train_setup *s);
/* The epoch loop: resume, epochs until val_dice >= target_dice or the cap, CSV rows,
 * checkpoints, the final checkpoint. Returns r->status. */
int sf_train(const sf_train_setup *s, sf_train_result *r);
/* lr of the epoch after `sched_steps` scheduler steps (constant when disable_scheduler). */
double sf_train_lr(const sf_config *c, long sched_steps);

#endif
