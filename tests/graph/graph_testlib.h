/* Shared helpers of the task-graph tests (tests/graph): a small U-Net problem with deterministic
 * samples, StarPU start/stop with a chosen scheduler and worker count (each process gets its own
 * STARPU_HOME temp dir), N training steps (single samples or batches) through the graph, and the
 * same N steps through the sequential reference (sf_unet_ref_train_step / _batch_step + clip + the
 * optimizer: Adam unless gt_set_optimizer chose another). Comparisons of runs: graph_compare.h. */
#ifndef SF_GRAPH_TESTLIB_H
#define SF_GRAPH_TESTLIB_H

#include <stddef.h>
#include <stdint.h>

#include "scaffold/graph.h"
#include "scaffold/model.h"

#define GT_MAX_STEPS 32

typedef struct {
  sf_unet u;
  float *params0; /* initial parameters */
  size_t nvox;    /* G^3 */
  float *cw;      /* (K) class weights of sample 0 (spec §6.2 rule) */
} gt_problem;

#define GT_MAX_CHECKED_STEPS 4 /* runs of up to this many steps keep every step's state */

typedef struct {
  float *params, *grads, *m, *v; /* after the last step */
  float *hist;                   /* runs of <= GT_MAX_CHECKED_STEPS steps: the state after every step
                                  * (gt_result_state), else NULL */
  const float *params0;          /* the problem's initial parameters (not owned) */
  double lr;
  double out[GT_MAX_STEPS][3];   /* ce, soft dice, loss per step */
  double step_s[GT_MAX_STEPS];   /* wall time per step */
  int nslabs, nsteps;
} gt_result;

void gt_problem_init(gt_problem *p, int ps, int base, int K, int groups, uint64_t seed);
/* The same with the bottleneck dimension given (gt_problem_init: 3, unet_bottleneck_dim's default):
 * bench_train_step's smallest shapes (problem scale 2-3) need a shallower one. */
void gt_problem_init_bn(gt_problem *p, int ps, int bottleneck, int base, int K, int groups, uint64_t seed);
void gt_problem_free(gt_problem *p);
/* Sample i: x (G^3, 3) uniform in [0,1) plus a class-dependent offset inside a few boxes; labels
 * (G^3) 0 outside the boxes, the box's class inside. Buffers are malloc'ed by the caller. */
void gt_sample(const gt_problem *p, int i, float *x, uint16_t *lab);

/* Start StarPU with scheduler (NULL = StarPU's default) and ncpu CPU workers (-1 = default). */
/* Starts the runtime: StarPU with the given scheduler, or the one environment variable
 * SF_TEST_RUNTIME names (openmp, sequential: no scheduler; sequential has 1 thread), so CTest runs
 * the same test on every runtime. */
void gt_runtime_start(const char *scheduler, int ncpu);
/* The same on the named runtime ("starpu", "openmp", "sequential"; NULL = SF_TEST_RUNTIME's). */
void gt_runtime_start_on(const char *runtime, const char *scheduler, int ncpu);
/* The worker_nice of the runtimes started after it (config key worker_nice); -1 = the config default. */
void gt_runtime_set_worker_nice(int nice);
void gt_runtime_stop(void);
/* Remove the temporary STARPU_HOME (call at the end of main). */
void gt_cleanup(void);

/* nsteps training steps through the task graph (StarPU must be running), sample i at step i.
 * slabs 0 = automatic. */
/* The `optimizer` config name the next graph and reference runs use ("ADAM" until set). */
void gt_set_optimizer(const char *name);
/* activation_checkpointing of the next graph runs (0 until set). */
void gt_set_checkpointing(int on);
void gt_run_graph(const gt_problem *p, int slabs, int determinism, int nsteps, double lr, gt_result *r);
/* The same, calling after_step(g, step, ctx) after every step (e.g. to inspect the gradients). */
typedef void (*gt_step_hook)(sf_graph *g, int step, void *ctx);
void gt_run_graph_hook(const gt_problem *p, int slabs, int determinism, int nsteps, double lr, gt_result *r,
                       gt_step_hook after_step, void *ctx);
/* The same with the sequential reference network (its own trajectory; gt_check_vs_ref is the
 * comparison of a graph run with the reference). */
void gt_run_ref(const gt_problem *p, int nsteps, double lr, gt_result *r);
/* nsteps training steps on batches (local_batch_size = the largest): step s takes batch[s] samples,
 * the next ones in order (sample 0 first), through the graph (sf_graph_train_batch); the reference's
 * batch step is in gt_check_vs_ref_batches (graph_compare.h). */
#define GT_MAX_BATCH 8
void gt_run_graph_batches(const gt_problem *p, int slabs, int determinism, int nsteps, const int *batch, double lr,
                          gt_result *r);

/* Compares two results' final states (params, m, v, grads within rtol relative to each array's max
 * |value|; rtol 0 = bitwise) and per-step losses. For runs whose trajectories may legitimately differ
 * (a reference), prefer gt_check_vs_ref (graph_compare.h). Returns 1 if equal enough. */
int gt_compare(const char *what, const gt_result *a, const gt_result *b, size_t n, int nsteps, double rtol);
/* The reference optimizer step: clip to SF_CLIP_MAX_NORM (the norm summed per tensor, as the graph
 * does) and Adam step t, in place on params, m, v. */
void gt_ref_clip_adam(const sf_unet *u, float *params, float *m, float *v, const float *grads, double lr, int t);
/* Zeroed result arrays for n parameters (and the per-step history when nsteps <=
 * GT_MAX_CHECKED_STEPS); free with gt_result_free. */
void gt_result_alloc(gt_result *r, size_t n, int nsteps);
void gt_result_free(gt_result *r);
/* Copies the graph's parameters, gradients and Adam moments (n floats each) into r's arrays. */
void gt_result_take_state(sf_graph *g, gt_result *r, size_t n);
/* Records the state after step `step` (0-based) into the history (no-op without one). */
void gt_result_note_step(gt_result *r, size_t n, int step, const float *params, const float *grads,
                         const float *m, const float *v);
/* The state after step `step` (0-based): which 0 params, 1 grads, 2 m, 3 v (n floats). */
float *gt_result_state(const gt_result *r, size_t n, int step, int which);

/* Resident set size in bytes (from /proc/self/statm). */
size_t gt_rss_bytes(void);

#endif
