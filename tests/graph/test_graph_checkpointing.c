/* activation_checkpointing: 1 (each level keeps its blocks' tensors in two buffers and its two
 * gradient buffers; the backward recomputes pre_a, act_a, pre_b and out from the concat or max-pool
 * output, graph_backward.c) must give bitwise the training of the run without it: losses,
 * gradients, parameters and Adam moments after each of 3 steps, for single samples under
 * more_determinism (2 workers, eager and lws) and for batches of 2 and 3 (2 workers, lws), at ps 5
 * (two U-Net levels, so decoder, encoder and bottleneck blocks all recompute). Leaving out any
 * recompute fails it (checked by removing the act_a recompute after GroupNorm b's backward). */
#include <stdio.h>

#include "graph_compare.h"
#include "graph_testlib.h"
#include "testutil.h"

#define NSTEPS 3

int main(void)
{
  gt_problem p;
  gt_problem_init(&p, 5, 8, 4, 4, 7);
  const char *scheds[] = {"eager", "lws"};
  for (int s = 0; s < 2; s++) {
    gt_runtime_start(scheds[s], 2);
    gt_result off, on;
    gt_set_checkpointing(0);
    gt_run_graph(&p, 0, 1, NSTEPS, 1e-3, &off);
    gt_set_checkpointing(1);
    gt_run_graph(&p, 0, 1, NSTEPS, 1e-3, &on);
    gt_runtime_stop();
    printf("%s: %d slabs, loss without %.9g %.9g %.9g, with %.9g %.9g %.9g\n", scheds[s], on.nslabs, off.out[0][2],
           off.out[1][2], off.out[2][2], on.out[0][2], on.out[1][2], on.out[2][2]);
    char what[64];
    snprintf(what, sizeof what, "%s: checkpointing vs not", scheds[s]);
    gt_compare_bitwise(what, &on, &off, p.u.total_params, NSTEPS);
    gt_result_free(&on);
    gt_result_free(&off);
  }
  int batch[NSTEPS] = {2, 3, 2};
  gt_runtime_start("lws", 2);
  gt_result off, on;
  gt_set_checkpointing(0);
  gt_run_graph_batches(&p, 0, 1, NSTEPS, batch, 1e-3, &off);
  gt_set_checkpointing(1);
  gt_run_graph_batches(&p, 0, 1, NSTEPS, batch, 1e-3, &on);
  gt_runtime_stop();
  gt_compare_bitwise("batches 2, 3, 2: checkpointing vs not", &on, &off, p.u.total_params, NSTEPS);
  gt_result_free(&on);
  gt_result_free(&off);
  gt_set_checkpointing(0);
  gt_problem_free(&p);
  gt_cleanup();
  return sf_test_end();
}
