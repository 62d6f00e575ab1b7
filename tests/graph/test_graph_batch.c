/* Batches (local_batch_size > 1) through the task graph against the sequential reference's batch
 * step (sf_unet_ref_batch_step: CE pooled over the batch, Dice averaged over it, the samples'
 * gradients summed; then clip + Adam on the host): a batch of 3, then a ragged batch of 2 on the
 * same graph. Each way the graph adds the samples' weight gradients up is covered: per-slab partials
 * written by the first sample and added to by the others (the default for small weights), RW|COMMUTE
 * accumulation and tap blocks across the samples (SF_GRAD_PART_MAX_FLOATS=0; base 24 has
 * Cout >= 17 layers), and more_determinism, which must stay bitwise whatever the scheduler and
 * worker count. Every step is checked against the reference's batch step from the run's own state
 * before it (gt_check_vs_ref_batches: losses, gradients and Adam moments within 1e-5 of each
 * tensor's max |value|, the parameter update within 1e-3 lr): comparing with the reference's own
 * trajectory had failed once the AVX2 3x3x3 and the direct 1x1x1 / transposed conv kernels were
 * both in (second step's gradient 8.7e-5 off in one up-path weight, the first step 5.8e-7): after
 * Adam's first update the two runs sit at different parameters, where a ReLU or max-pool decision
 * near its kink may go either way (graph_compare.h). From the run's own state every step is as
 * well-conditioned as the first, so the learning rate is the training's usual 1e-3 (at 1e-6 an
 * update of 1e-3 lr is below the parameters' float resolution and cannot be checked). */
#include <stdio.h>
#include <stdlib.h>

#include "graph_compare.h"
#include "graph_testlib.h"
#include "testutil.h"

#define NSTEPS 2
#define LR 1e-3

int main(void)
{
  static const int batch[NSTEPS] = {3, 2};
  gt_problem p;
  gt_problem_init(&p, 4, 24, 4, 4, 9);
  size_t n = p.u.total_params;

  struct {
    const char *what, *sched, *part_max;
    int ncpu, determinism;
  } runs[] = {
      {"per-slab partials (eager, 2 workers)", "eager", NULL, 2, 0},
      {"RW|COMMUTE and tap blocks (lws, 2 workers)", "lws", "0", 2, 0},
      {"more_determinism (eager, 2 workers)", "eager", NULL, 2, 1},
      {"more_determinism (lws, 1 worker)", "lws", NULL, 1, 1},
  };
  gt_result det;
  int have_det = 0;
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    if (runs[i].part_max) setenv("SF_GRAD_PART_MAX_FLOATS", runs[i].part_max, 1);
    else unsetenv("SF_GRAD_PART_MAX_FLOATS");
    gt_runtime_start(runs[i].sched, runs[i].ncpu);
    gt_result r;
    gt_run_graph_batches(&p, runs[i].determinism ? 0 : 4, runs[i].determinism, NSTEPS, batch, LR, &r);
    gt_runtime_stop();
    printf("%s: %d slabs, batch losses %.9g %.9g\n", runs[i].what, r.nslabs, r.out[0][2], r.out[1][2]);
    char what[160];
    snprintf(what, sizeof what, "%s vs reference", runs[i].what);
    gt_check_vs_ref_batches(what, &p, &r, batch, 1e-5);
    if (runs[i].determinism && have_det) {
      snprintf(what, sizeof what, "%s vs the first more_determinism run", runs[i].what);
      gt_compare(what, &r, &det, n, NSTEPS, 0.0);
    }
    if (runs[i].determinism && !have_det) {
      det = r;
      have_det = 1;
    } else {
      gt_result_free(&r);
    }
  }
  unsetenv("SF_GRAD_PART_MAX_FLOATS");
  gt_result_free(&det);
  gt_problem_free(&p);
  gt_cleanup();
  return sf_test_end();
}
