/* Timed training steps of a config's task graph on synthetic samples, without a dataset: the engine of
 * `scaffold steps` (a real run on this machine) and of `scaffold-sim` (the same steps under StarPU's
 * SimGrid mode, where sf_now() reads the simulated clock: docs/simulation.md). Both report the same
 * figures, so a prediction and a measurement compare line by line.
 *
 *   sf_steps_opts o = {.warmup = 1, .steps = 5, .out_dir = "run"};
 *   sf_steps_result r;
 *   if (sf_steps_run(&cfg, &o, &r, err, sizeof err) != 0) ...;
 *   sf_steps_print(&cfg, &o, &r, stdout);   (human report)
 *   sf_steps_print_json(&cfg, &o, &r, stdout); (one "SFSTEPS {...}" line)
 *
 * A step is one optimizer step on a local batch of cfg->local_batch_size synthetic samples (uniform
 * input, labels = boxes of foreground classes; the timings do not depend on the values). The runtime is
 * started and shut down inside sf_steps_run, with the config's scheduler and worker counts. On StarPU every
 * timed step is traced (scaffold/trace.h) into out_dir, for the per-worker busy shares and the bytes moved
 * per bus; with cfg->trace the trace.json / worker_stats files stay there, otherwise they are removed. The
 * openmp and sequential runtimes have no StarPU profiling: their result has no per-worker figures
 * (stats.nworkers == 0) and the report says so. */
#ifndef SF_STEPS_H
#define SF_STEPS_H

#include <stddef.h>
#include <stdio.h>

#include "scaffold/config.h"
#include "scaffold/trace.h"

#define SF_STEPS_MAX 1000
#define SF_STEPS_MAX_RANKS 256 /* ranks whose bytes a distributed run reports */

typedef struct {
  int warmup, steps;    /* untimed, then timed steps (1 <= steps <= SF_STEPS_MAX) */
  const char *out_dir;  /* created if missing */
  int simulated;        /* 1 under StarPU's SimGrid mode: times are predictions, no loss is computed */
  const char *machine;  /* the machine or class the figures are for (printed as given) */
} sf_steps_opts;

typedef struct {
  double step_s[SF_STEPS_MAX]; /* timed steps, in order */
  double median_s, min_s, max_s, samples_per_s;
  long tasks_per_step;
  int nslabs, batch;
  double step_gflop;  /* declared flops of one step */
  char runtime[256];  /* sf_runtime_describe */
  double main_cpu_s;  /* CPU time of the submitting (main) thread per timed step: submission, the scheduling
                       * decisions StarPU makes at submission, host work. Real runs only (0 simulated) */
  sf_trace_summary stats; /* of the timed steps */
  int rank, ranks, replicas, shards; /* under mpirun or SMPI (scaffold/dist.h); 0, 1, 1, 1 in one process */
  double sent_per_step[SF_STEPS_MAX_RANKS]; /* bytes StarPU-MPI sent from this rank to each rank, per timed step */
} sf_steps_result;

int sf_steps_run(const sf_config *c, const sf_steps_opts *o, sf_steps_result *r, char *err, size_t errlen);
void sf_steps_print(const sf_config *c, const sf_steps_opts *o, const sf_steps_result *r, FILE *out);
void sf_steps_print_json(const sf_config *c, const sf_steps_opts *o, const sf_steps_result *r, FILE *out);

/* Under mpirun (or SimGrid's SMPI) the steps are distributed as `scaffold benchmark` distributes training:
 * replicas x the shard grid of dc_num_shards / spatial_ranks; rank 0 prints the report, every rank its
 * SFSTEPS line (with its rank and the bytes it sent to each rank per timed step), and ranks other than 0
 * write their traces into out_dir/rank<r>.
 *
 * The whole command (argv[0] = its name): `scaffold steps` with simulated = 0, `scaffold-sim` with 1.
 * Returns the exit status; bad options exit 2 before any work. */
int sf_steps_main(int argc, char **argv, int simulated);

/* The config keys that shape timed steps (NULL-terminated): a command built on sf_steps_run refuses others */
extern const char *const sf_steps_config_keys[];

#endif
