/* torch_amp: 1 on AMX, "cast once per step": the bf16 weight copies packed once per forward for every slab's
 * forward and dX (scaffold/tasks.h sf_conv3d_packed_bytes) train bit for bit as each task packing its own copy
 * (SF_BF16_PREPACK=0): 3 steps of a ps 4 base 32 U-Net (32 -> 64 -> 128 channels, whose weights the AMX kernels
 * take packed) with more_determinism: 1 on 2 StarPU workers: parameters, gradients, Adam moments and losses after
 * every step. The first run must really have packed (the graph holds packed copies) and the second not. Skipped
 * (77) where the bf16 engine is not AMX (SF_CPU_BF16=amx asks for it). */
#include <stdio.h>
#include <stdlib.h>

#include "graph_compare.h"
#include "graph_testlib.h"
#include "scaffold/cpu_isa.h"
#include "testutil.h"

#define NSTEPS 3

static void note_packed_bytes(sf_graph *g, int step, void *ctx)
{
  (void)step;
  *(size_t *)ctx = sf_graph_packed_weight_bytes(g);
}

int main(void)
{
  if (sf_bf16_engine_active() != SF_BF16_AMX) {
    printf("skip: the bf16 engine is %s, not amx (weights are packed ahead for AMX only)\n",
           sf_bf16_engine_name(sf_bf16_engine_active()));
    return 77;
  }
  gt_problem p;
  gt_problem_init(&p, 4, 32, 4, 4, 9);
  gt_result r[2];
  size_t packed[2] = {0, 0};
  for (int run = 0; run < 2; run++) {
    setenv("SF_BF16_PREPACK", run ? "0" : "1", 1);
    gt_runtime_start("lws", 2);
    gt_run_graph_hook(&p, 0, 1, NSTEPS, 1e-3, &r[run], note_packed_bytes, &packed[run]);
    gt_runtime_stop();
    printf("SF_BF16_PREPACK=%d: %zu bytes of packed weights, losses %.9g %.9g %.9g\n", !run, packed[run],
           r[run].out[0][2], r[run].out[1][2], r[run].out[2][2]);
  }
  SF_CHECK(packed[0] > 0, "the graph packed no weights ahead with SF_BF16_PREPACK=1");
  SF_CHECK(packed[1] == 0, "the graph packed %zu bytes ahead with SF_BF16_PREPACK=0", packed[1]);
  gt_compare_bitwise("weights packed once per forward vs by each task", &r[0], &r[1], p.u.total_params, NSTEPS);
  gt_result_free(&r[0]);
  gt_result_free(&r[1]);
  gt_problem_free(&p);
  gt_cleanup();
  return sf_test_end();
}
