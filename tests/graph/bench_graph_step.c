/* Step-time benchmark of the task graph (not a CTest): trains on synthetic samples and prints the
 * median step time over the timed steps after warm-up ones, with the declared flops per step.
 *   bench_graph_step [ps] [base] [ncpu] [scheduler] [slabs] [warmup] [timed] [more_determinism]
 *                    [activation_checkpointing]
 * defaults: 5 8 2 lws 0 2 5 0 0 (slabs 0 = automatic). Scheduler "ref" times the sequential reference
 * network (sf_unet_ref_train_step + clip + Adam, one thread) instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_testlib.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/graph.h"
#include "scaffold/runtime.h"

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
  int ps = argc > 1 ? atoi(argv[1]) : 5, base = argc > 2 ? atoi(argv[2]) : 8;
  int ncpu = argc > 3 ? atoi(argv[3]) : 2;
  const char *sched = argc > 4 ? argv[4] : "lws";
  int slabs = argc > 5 ? atoi(argv[5]) : 0, warm = argc > 6 ? atoi(argv[6]) : 2, timed = argc > 7 ? atoi(argv[7]) : 5;
  int det = argc > 8 ? atoi(argv[8]) : 0, ckpt = argc > 9 ? atoi(argv[9]) : 0;
  if (warm + timed > GT_MAX_STEPS || timed < 1) sf_die(SF_EXIT_USAGE, "warmup + timed must be <= %d", GT_MAX_STEPS);
  gt_problem p;
  gt_problem_init(&p, ps, base, 6, 8, 42);
  int ref = strcmp(sched, "ref") == 0;
  char desc[256] = "sequential reference network (no StarPU)";
  gt_result r;
  if (ref) {
    gt_run_ref(&p, warm + timed, 1e-3, &r);
  } else {
    gt_runtime_start(sched, ncpu);
    gt_set_checkpointing(ckpt);
    gt_run_graph(&p, slabs, det, warm + timed, 1e-3, &r);
    sf_runtime_describe(desc, sizeof desc);
  }
  double t[GT_MAX_STEPS];
  memcpy(t, r.step_s + warm, (size_t)timed * sizeof(double));
  qsort(t, (size_t)timed, sizeof(double), cmp_d);
  double med = timed % 2 ? t[timed / 2] : 0.5 * (t[timed / 2 - 1] + t[timed / 2]);
  double flops = 3.0 * p.u.forward_flops; /* conv flops of forward + dX + dW */
  printf("%s\n", desc);
  printf("ps %d base %d: %zu params, %d slabs, more_determinism %d, activation_checkpointing %d: median step %.4f s over %d steps "
         "(min %.4f, max %.4f) after %d warm-up; %.2f GFLOP/s (3 x forward conv flops)\n",
         ps, base, p.u.total_params, r.nslabs, det, ckpt, med, timed, t[0], t[timed - 1], warm, flops / med * 1e-9);
  gt_result_free(&r);
  if (!ref) gt_runtime_stop();
  gt_problem_free(&p);
  gt_cleanup();
  return 0;
}
