/* Whole U-Net against PyTorch (tests/golden/unet_ps<N>.bin from scripts/make_golden.py): the
 * sequential reference network with the golden parameters, input and labels must reproduce the
 * logits (<= 1e-4), the loss terms (<= 1e-5) and every parameter gradient (<= 1e-4 relative to the
 * tensor's max |value|), with the naive and with the BLAS kernels. Then one training step:
 * clip_grad_norm_(1.0) + Adam on the golden gradients must give the golden updated parameters
 * (update error <= 1e-3 lr), and the same step on our own gradients, followed by our forward, the
 * golden loss after the step (<= 1e-4).
 * Usage: test_unet_golden unet_ps4.bin */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "scaffold/common.h"
#include "scaffold/model.h"
#include "scaffold/ops.h"
#include "testutil.h"
#include "unet_ref.h"

static sf_golden *G;
static sf_unet U;

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: %s unet_psN.bin\n", argv[0]);
    return 2;
  }
  char *path = sf_golden_path(argv[1]);
  G = sf_golden_load(path);
  free(path);
  int ps = sf_golden_int(G, "config.problem_scale"), b = sf_golden_int(G, "config.bottleneck");
  int base = sf_golden_int(G, "config.base_channels"), K = sf_golden_int(G, "config.n_classes");
  int groups = sf_golden_int(G, "config.groups");
  char err[256];
  if (sf_unet_build(&U, ps, b, base, K, groups, err, sizeof err) != 0) {
    fprintf(stderr, "FAIL building the U-Net of %s: %s\n", argv[1], err);
    return 1;
  }
  printf("%s: ps %d, b %d, base %d, K %d, groups %d, %zu parameters\n", argv[1], ps, b, base, K, groups,
         U.total_params);
  SF_CHECK(sf_golden_int(G, "nparams") == U.nparams, "golden has %d parameter tensors, we have %d",
           sf_golden_int(G, "nparams"), U.nparams);

  int E = U.edge[0];
  size_t nvox = (size_t)E * E * E, P = U.total_params;
  int64_t xs[5] = {1, 3, E, E, E}, zs[5] = {1, K, E, E, E};
  sf_golden_expect_shape(G, "x", 5, xs);
  sf_golden_expect_shape(G, "logits", 5, zs);
  float *x = malloc(nvox * 3 * sizeof(float)), *want_z = malloc(nvox * K * sizeof(float));
  float *z = malloc(nvox * K * sizeof(float));
  sf_golden_ncdhw_to_ndhwc(x, sf_golden_f32(G, "x", NULL), 3, E, E, E);
  sf_golden_ncdhw_to_ndhwc(want_z, sf_golden_f32(G, "logits", NULL), K, E, E, E);
  size_t nl = 0;
  const int32_t *lab32 = sf_golden_i32(G, "lab", &nl);
  SF_CHECK(nl == nvox, "lab has %zu voxels, want %zu", nl, nvox);
  uint16_t *lab = malloc(nvox * sizeof(uint16_t));
  for (size_t i = 0; i < nvox; i++) lab[i] = (uint16_t)lab32[i]; /* (D,H,W): same order in both layouts */
  const float *cw = sf_golden_f32(G, "cw", NULL);
  const double *want_loss = sf_golden_f64(G, "loss", NULL);

  float *params = sf_golden_load_arena(G, &U, "param.");
  float *want_g = sf_golden_load_arena(G, &U, "grad.");
  float *want_p1 = sf_golden_load_arena(G, &U, "step.param.");
  float *grads = malloc(P * sizeof(float)), *ours_blas = malloc(P * sizeof(float));
  sf_unet_ref *r = sf_unet_ref_create(&U);

  for (int naive = 1; naive >= 0; naive--) {
    const char *v = naive ? "ref" : "blas";
    char what[160];
    double loss[3];
    double t0 = sf_now();
    sf_unet_ref_forward(r, params, x, z, naive);
    double t1 = sf_now();
    snprintf(what, sizeof what, "logits (%s, forward only)", v);
    sf_check_close_f(what, z, want_z, nvox * K, 1e-4);
    memset(grads, 0, P * sizeof(float));
    sf_unet_ref_train_step(r, params, grads, x, lab, cw, loss, naive);
    double t2 = sf_now();
    printf("     %s kernels: forward %.3f s, forward+backward %.3f s\n", v, t1 - t0, t2 - t1);
    snprintf(what, sizeof what, "logits (%s, train step)", v);
    sf_check_close_f(what, sf_unet_ref_logits(r), want_z, nvox * K, 1e-4);
    snprintf(what, sizeof what, "loss (%s)", v);
    sf_golden_check_loss_terms(what, loss, want_loss, 1e-5);
    for (int i = 0; i < U.nparams; i++) {
      const sf_param_desc *p = &U.params[i];
      snprintf(what, sizeof what, "grad %s (%s)", p->name, v);
      sf_check_close_f(what, grads + p->offset, want_g + p->offset, p->numel, 1e-4);
    }
    /* accumulation: a second step adds the same gradients again */
    if (naive) {
      sf_unet_ref_train_step(r, params, grads, x, lab, cw, loss, naive);
      for (size_t i = 0; i < P; i++) grads[i] *= 0.5f;
      snprintf(what, sizeof what, "gradients accumulate over two train steps (%s)", v);
      sf_check_close_f(what, grads, want_g, P, 1e-4);
    } else {
      memcpy(ours_blas, grads, P * sizeof(float));
    }
  }

  /* (c) one optimizer step: clip to norm 1.0, then Adam(lr, 0.9, 0.999, 1e-8), step 1 */
  double lr = sf_golden_double(G, "step.lr"), max_norm = sf_golden_double(G, "step.max_norm");
  double want_norm = sf_golden_double(G, "step.total_norm");
  for (int pass = 0; pass < 2; pass++) {
    const float *g = pass == 0 ? want_g : ours_blas;
    const char *src = pass == 0 ? "golden gradients" : "our gradients";
    double tol = pass == 0 ? 1e-6 : 1e-4;
    double ss = 0;
    for (int i = 0; i < U.nparams; i++) sf_sumsq_partial(&ss, g + U.params[i].offset, U.params[i].numel);
    double norm = sqrt(ss);
    SF_CHECK(fabs(norm - want_norm) <= tol * want_norm, "gradient norm from %s: %.9g, torch %.9g", src, norm,
             want_norm);
    printf("     gradient norm from %s: %.9g (torch %.9g)\n", src, norm, want_norm);
    float coef = sf_clip_coef(ss, (float)max_norm);
    float *w = malloc(P * sizeof(float)), *m = calloc(P, sizeof(float)), *vv = calloc(P, sizeof(float));
    memcpy(w, params, P * sizeof(float));
    for (int i = 0; i < U.nparams; i++) {
      const sf_param_desc *p = &U.params[i];
      sf_adam_step(w + p->offset, m + p->offset, vv + p->offset, g + p->offset, p->numel, lr, 0.9, 0.999, 1e-8, 1,
                   coef);
    }
    /* the update relative to lr: |dw_ours - dw_torch| / lr (Adam's first step moves each weight by ~lr) */
    double worst = 0;
    int wi = 0;
    for (int i = 0; i < U.nparams; i++) {
      const sf_param_desc *p = &U.params[i];
      for (size_t k = 0; k < p->numel; k++) {
        size_t o = p->offset + k;
        double e = fabs(((double)w[o] - params[o]) - ((double)want_p1[o] - params[o])) / lr;
        if (e > worst) worst = e, wi = i;
      }
    }
    if (pass == 0) { /* Adam itself: golden gradients in, golden parameters out */
      SF_CHECK(worst <= 1e-3, "Adam step from %s: worst update error %.3e lr (in %s) > 1e-3 lr", src, worst,
               U.params[wi].name);
      if (worst <= 1e-3)
        printf("ok   Adam step from %s: worst update error %.3e lr (in %s)\n", src, worst, U.params[wi].name);
    } else { /* g/(|g|+eps) is ill-conditioned for |g| ~ eps: judged by the loss after the step instead */
      printf("     Adam step from %s: worst update error %.3e lr (in %s), not checked\n", src, worst,
             U.params[wi].name);
    }
    if (pass == 1) { /* loss at the updated parameters */
      double loss[3];
      float *dummy = calloc(P, sizeof(float));
      sf_unet_ref_train_step(r, w, dummy, x, lab, cw, loss, 0);
      sf_golden_check_loss_terms("loss after one step (our gradients, blas)", loss, sf_golden_f64(G, "step.loss", NULL), 1e-4);
      free(dummy);
    }
    free(w), free(m), free(vv);
  }

  sf_unet_ref_destroy(r);
  free(x), free(want_z), free(z), free(lab), free(params), free(want_g), free(want_p1), free(grads), free(ours_blas);
  sf_unet_free(&U);
  sf_golden_free(G);
  return sf_test_end();
}
