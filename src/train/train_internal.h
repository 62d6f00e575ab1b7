/* Private state of the training loop (scaffold/trainer.h), shared by trainer.c (the epoch loop),
 * train_step.c (one optimizer step, warm-up, the per-run context) and train_resume.c (checkpoints,
 * resume, the train_stats.csv set-up). */
#ifndef SF_TRAIN_INTERNAL_H
#define SF_TRAIN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "epoch_log.h"
#include "scaffold/trainer.h"

typedef struct sf_ckpt_saver sf_ckpt_saver; /* ckpt_async.c */

/* Everything one sf_train / sf_train_warmup call works with. */
/* The step probes of `bound` and `export_graph` (step_probes.c): which window the next step is. */
typedef struct {
  int bound_next;        /* 1: record the next step, 3: report pending, 0: none */
  int graph_next;        /* 1: write the next step's task graph to export_graph */
  double deps_s;         /* the recorded step's measured seconds */
} sf_step_probes;

typedef struct {
  const sf_train_setup *s;
  const sf_config *c;
  sf_graph *g;
  size_t N;                 /* parameters */
  int B;                    /* local batch size */
  int n_train, n_val, per;  /* per = training samples per replica per epoch */
  float **x;                /* B samples: this rank's box (box_n[0], box_n[1], box_n[2], cin) */
  uint16_t **lab;           /* B label volumes (P,G,G) of the same planes */
  int box_lo[3], box_n[3];  /* sf_graph_sample_box: the whole grid unless spatially sharded */
  uint64_t read_bytes;      /* bytes the sample loads read from the dataset files (headers included) */
  long read_loads;          /* sample loads (training, validation, warm-up) */
  int *order;
  sf_ckpt_state st;
  char *ckpt_dir, *last_path, *best_path, *csv_path;
  int R, rep;               /* replicas and this rank's replica (1, 0 in a single process) */
  int contrib;              /* 1: this rank's sums count in the global ones (shard 0 of its replica) */
  int check_replicas;       /* SF_CHECK_REPLICAS=1: parameters compared across ranks after each step */
  long checked;             /* steps whose parameters were compared */
  long saved_epoch;         /* last epoch whose end was checkpointed (-1: none this run) */
  sf_ckpt_saver *saver;     /* async_save: 1 on rank 0: the background writer (else NULL) */
  long failed_epoch;        /* the epoch whose checkpoint could not be written (after a failed save) */
  sf_epoch_log elog;         /* upstream's per-epoch line and minibatch medians (epoch_log.c) */
  sf_step_probes probes;     /* bound / export_graph (step_probes.c); armed after warm-up */
} sf_tctx;

/* What one optimizer step returns. */
typedef struct {
  double loss, dice, ce;    /* the batch's loss, soft Dice and CE times its sample count */
  double flops;
  double norm;              /* gradient norm before clipping */
  int ok;                   /* loss finite */
} sf_step_out;

/* ---- train_step.c ---- */
void sf_tctx_init(sf_tctx *t, const sf_train_setup *s);
void sf_tctx_free(sf_tctx *t);
/* Loads this rank's planes of sample i of split into batch slot b (dies with a message on a read
 * error), counting the bytes read. */
void sf_train_load_sample(sf_tctx *t, sf_split split, int i, int slot);
/* The "data read:" line: this rank's sample loads and bytes read per sample (stdout; non-root
 * ranks' only with SF_DIST_ALL_STDOUT=1, scaffold/dist.h). */
void sf_train_report_reads(const sf_tctx *t);
/* One optimizer step on the samples idx[0..b-1] with lr at Adam step adam_step. */
void sf_train_batch_step(sf_tctx *t, const int *idx, int b, double lr, long adam_step, sf_step_out *o);
/* SF_CHECK_REPLICAS=1: dies unless the parameters are bitwise identical on every rank. */
/* step_probes.c: arm after warm-up; before/after wrap the graph's part of each training step. */
void sf_step_probes_arm(sf_tctx *t);
void sf_step_probes_before(sf_tctx *t);
void sf_step_probes_after(sf_tctx *t, double secs);
void sf_step_probes_finish(sf_tctx *t); /* the bound report; warns about a probe the run ended before */
void sf_train_check_replicas(sf_tctx *t, const char *phase, long step);
/* Warm-up with rollback (spec §6.10); returns its seconds. */
double sf_train_run_warmup(sf_tctx *t);

/* ---- train_resume.c ---- */
/* The checkpoint directory, stale temporary files, resume (or not) from a checkpoint and
 * train_stats.csv (truncated to the restored epochs, or fresh); r gets the restored rows' totals.
 * Returns 0, or -1 with r->status and r->error set. */
int sf_train_resume_setup(sf_tctx *t, sf_train_result *r);
/* Writes checkpoint_last (and checkpoint_best on a new strict minimum of val_loss_avg when
 * consider_best). Returns 0 or -1 (message printed); every rank gets the same answer. */
int sf_train_save_checkpoint(sf_tctx *t, int consider_best);
/* async_save: 1: waits for the save in flight. Returns 0, or -1 when it failed (message printed
 * by the writer; t->failed_epoch says which); every rank gets the same answer. 0 without async_save. */
int sf_train_join_checkpoint(sf_tctx *t);
/* SIGINT/SIGTERM inside an epoch: rank 0 appends the epoch's partial row; note says what happened. */
void sf_train_write_partial_row(sf_tctx *t, long epoch, int steps_done, long opt_steps, double loss_sum,
                                double dice_sum, double nsamp, char *note, size_t len);
/* r->status = status, r->error = the message. */
void sf_train_fail(sf_train_result *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- ckpt_async.c: the background checkpoint writer of async_save: 1 ---- */
sf_ckpt_saver *sf_ckpt_saver_new(size_t nparams);
/* Copies the state and the three arrays (the caller holds them, after the step's wait), then writes
 * last_path (and best_path when write_best) on a background thread. The previous save must have been
 * joined. Returns 0, or the write's outcome when no thread could be started (written here). */
int sf_ckpt_saver_start(sf_ckpt_saver *sv, const sf_ckpt_state *st, const float *p, const float *m, const float *v,
                        const char *last_path, const char *best_path, int write_best);
/* Waits for the save in flight (none: returns 0). Returns its outcome (0 or -1); *epoch gets its
 * epoch and err_copy (1024 bytes) its message when not NULL. */
int sf_ckpt_saver_join(sf_ckpt_saver *sv, long *epoch, char *err_copy);
void sf_ckpt_saver_free(sf_ckpt_saver *sv); /* joins first */

#endif
