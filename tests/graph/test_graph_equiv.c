/* Task-graph correctness: each of two training steps (forward, loss, backward, clip, Adam) through the
 * StarPU graph with 1 slab and with 3 (uneven) slabs equals the step of the sequential reference
 * (sf_unet_ref_train_step + clip + Adam) from the run's own state: losses, gradients and Adam moments
 * within 1e-5, parameter update within 1e-3 lr (gt_check_vs_ref). (The two graph runs are not
 * compared with each other after two steps: independent trajectories drift apart by more than
 * rounding, graph_compare.h.)
 * Cases: ps 4 and ps 5, base 8, K = 4, 4 GroupNorm groups; 2 CPU workers, lws. Also: forward
 * logits, validation (loss, soft and hard Dice), gradient-only steps and the declared step flops
 * against the reference, and a bad `slabs` value is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_compare.h"
#include "graph_testlib.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/graph.h"
#include "scaffold/ops.h"
#include "testutil.h"
#include "unet_ref.h"

#define RTOL 1e-5
#define NSTEPS 2

static void run_case(int ps, int slabs_b)
{
  gt_problem p;
  gt_problem_init(&p, ps, 8, 4, 4, 7);
  size_t n = p.u.total_params;
  gt_result one, many;
  gt_run_graph(&p, 1, 0, NSTEPS, 1e-3, &one);
  gt_run_graph(&p, slabs_b, 0, NSTEPS, 1e-3, &many);
  printf("ps %d: %zu parameters, loss step 1 = %.6f, step 2 = %.6f; slabs %d and %d\n", ps, n, many.out[0][2],
         many.out[1][2], one.nslabs, many.nslabs);
  char what[64];
  snprintf(what, sizeof what, "ps%d 1 slab", ps);
  gt_check_vs_ref(what, &p, &one, RTOL);
  snprintf(what, sizeof what, "ps%d %d slabs", ps, slabs_b);
  gt_check_vs_ref(what, &p, &many, RTOL);
  SF_CHECK(one.nslabs == 1 && many.nslabs == slabs_b, "slab counts %d, %d (wanted 1, %d)", one.nslabs, many.nslabs,
           slabs_b);
  gt_result_free(&one);
  gt_result_free(&many);
  gt_problem_free(&p);
}

/* forward, eval, grad-only step and flops of a 3-slab graph vs the reference */
static void check_api(void)
{
  gt_problem p;
  gt_problem_init(&p, 4, 8, 4, 4, 21);
  const size_t n = p.u.total_params, nv = p.nvox;
  const int K = p.u.n_classes;
  float *params = sf_malloc(n * sizeof(float), "params");
  memcpy(params, p.params0, n * sizeof(float));
  sf_config c;
  sf_config_init(&c);
  char err[512];
  c.slabs = 9; /* above the bottleneck edge (8) */
  SF_CHECK(sf_graph_create(&p.u, &c, params, err, sizeof err) == NULL, "slabs 9 accepted");
  SF_CHECK(strstr(err, "slabs") != NULL, "error does not name the key: %s", err);
  printf("ok   slabs 9 refused: %s\n", err);
  c.slabs = 3;
  sf_graph *g = sf_graph_create(&p.u, &c, params, err, sizeof err);
  SF_CHECK(g != NULL, "sf_graph_create: %s", err);
  if (!g) return;
  float *x = sf_malloc(nv * 3 * sizeof(float), "x");
  uint16_t *lab = sf_malloc(nv * sizeof(uint16_t), "lab");
  float *lg = sf_malloc(nv * K * sizeof(float), "logits"), *lr = sf_malloc(nv * K * sizeof(float), "ref logits");
  gt_sample(&p, 4, x, lab);
  sf_unet_ref *ref = sf_unet_ref_create(&p.u);
  sf_unet_ref_forward(ref, p.params0, x, lr, 0);
  sf_graph_forward(g, x, lg);
  sf_check_close_f("forward logits, 3 slabs vs reference", lg, lr, nv * K, 1e-5);

  double acc[SF_LOSS_NACC(16)] = {0}, dacc[3 * 16] = {0}, want[4], got[4];
  sf_loss_partial_ref(acc, lr, lab, p.cw, nv, K);
  sf_loss_finalize(&want[0], &want[1], &want[2], acc, K);
  sf_dice_hard_partial_ref(dacc, lr, lab, nv, K);
  want[3] = sf_dice_hard_finalize(dacc, K);
  sf_graph_eval(g, x, lab, p.cw, got);
  sf_check_close_d("eval [ce, soft dice, loss, hard dice] vs reference", got, want, 4, 1e-5);

  float *gref = sf_calloc(n, sizeof(float), "ref grads");
  double oref[3], ograph[3];
  sf_unet_ref_train_step(ref, p.params0, gref, x, lab, p.cw, oref, 0);
  sf_graph_grad_step(g, x, lab, p.cw, ograph);
  sf_graph_acquire_state(g, 0);
  gt_match_ref_grads("grad-only step vs reference", &p, ref, p.params0, x, sf_graph_grads(g), gref, 1e-5);
  sf_check_bitwise_f("grad-only step: parameters unchanged", sf_graph_params(g), p.params0, n);
  sf_graph_release_state(g);
  sf_check_close_d("grad-only step: [ce, dice, loss] vs reference", ograph, oref, 3, 1e-6);

  double out[3];
  sf_graph_train_step(g, x, lab, p.cw, 1e-3, 1, out);
  double f = sf_graph_step_flops(g), ratio = f / p.u.forward_flops;
  char desc[256];
  sf_graph_describe(g, desc, sizeof desc);
  printf("%s; step flops %.4g = %.3f x forward conv flops\n", desc, f, ratio);
  SF_CHECK(ratio > 2.5 && ratio < 3.5, "declared step flops %.4g = %.3f x forward (expected about 3)", f, ratio);
  SF_CHECK(sf_graph_last_grad_norm(g) > 0, "gradient norm %g", sf_graph_last_grad_norm(g));

  sf_graph_destroy(g);
  sf_unet_ref_destroy(ref);
  sf_config_free(&c);
  free(params);
  free(x);
  free(lab);
  free(lg);
  free(lr);
  free(gref);
  gt_problem_free(&p);
}

int main(void)
{
  gt_runtime_start("lws", 2);
  check_api();
  run_case(4, 3);
  run_case(5, 3);
  gt_runtime_stop();
  gt_cleanup();
  return sf_test_end();
}
