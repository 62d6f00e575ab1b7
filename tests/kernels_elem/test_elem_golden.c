/* The element-wise kernels against PyTorch 1.13 (fixtures from scripts/make_golden_optim.py):
 * clip_grad_norm_ + Adam for 20 steps with the lr changed by CosineAnnealingWarmRestarts every step,
 * with (coef < 1) and without (coef > 1, clamped) clipping, and the same with SGD and RMSprop
 * (optim_sgd_rmsprop.bin); the scheduler's lr over 75 epochs; the
 * spec §6.1-6.3 loss value and dL/dz; nn.GroupNorm (+ReLU) forward and backward; MaxPool3d (ties and
 * a NaN) forward, argmax and backward. Argument 1: the tests/golden directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elem_golden.h"
#include "scaffold/lr_schedule.h"
#include "scaffold/ops.h"
#include "testutil.h"

#define GF(name, n) ((const float *)gold_get(g, name, GOLD_F32, n))
#define GD(name, n) ((const double *)gold_get(g, name, GOLD_F64, n))
#define GI(name, n) ((const int32_t *)gold_get(g, name, GOLD_I32, n))

static void test_schedule(const gold_file *g)
{
  const double *p = GD("sched_params", 5);
  const long epochs = (long)p[4];
  const double *lr = GD("sched_lr", (size_t)epochs + 1);
  double *got = malloc(((size_t)epochs + 1) * sizeof(double));
  for (long e = 0; e <= epochs; e++) got[e] = sf_cosine_warm_restart_lr(e, p[0], p[1], (long)p[2], (long)p[3]);
  sf_check_close_d("schedule: lr over 75 epochs vs torch", got, lr, (size_t)epochs + 1, 1e-15);
  free(got);
}

static void test_adam(const gold_file *g, const char *tag)
{
  char nm[64];
#define NM(s) (snprintf(nm, sizeof nm, "%s_%s", tag, s), nm)
  const int32_t *sizes = GI(NM("sizes"), 2);
  const double *hy = GD(NM("hyper"), 5);
  const size_t n0 = (size_t)sizes[0], n = n0 + (size_t)sizes[1];
  const int steps = (int)hy[4];
  const float *w0 = GF(NM("w0"), n), *grads = GF(NM("grads"), steps * n), *norm = GF(NM("norm"), steps);
  const float *coef = GF(NM("coef"), steps), *wt = GF(NM("w"), steps * n);
  const float *mt = GF(NM("m"), n), *vt = GF(NM("v"), n);
  const double *lr = GD(NM("lr"), steps);
  float *w = malloc(n * 4), *m = calloc(n, 4), *v = calloc(n, 4), *cf = malloc(steps * 4), *nf = malloc(steps * 4);
  float *dw = malloc(n * 4), *dwt = malloc(n * 4);
  double *lrc = malloc(steps * sizeof(double)), werr = 0, derr = 0;
  memcpy(w, w0, n * 4);
  size_t bitwise = 0;
  int worst_step = -1;
  for (int s = 0; s < steps; s++) {
    const float *gs = grads + s * n;
    double ss = 0;
    sf_sumsq_partial(&ss, gs, n0); /* one partial per parameter tensor, reduced */
    sf_sumsq_partial(&ss, gs + n0, n - n0);
    nf[s] = (float)sqrt(ss);
    cf[s] = sf_clip_coef(ss, (float)hy[3]);
    lrc[s] = sf_cosine_warm_restart_lr(s, 1e-3, 1e-4, 3, 2);
    sf_adam_step(w, m, v, gs, n0, lr[s], hy[0], hy[1], hy[2], s + 1, cf[s]);
    sf_adam_step(w + n0, m + n0, v + n0, gs + n0, n - n0, lr[s], hy[0], hy[1], hy[2], s + 1, cf[s]);
    for (size_t i = 0; i < n; i++) {
      dw[i] = w[i] - w0[i];
      dwt[i] = wt[s * n + i] - w0[i];
      bitwise += w[i] == wt[s * n + i];
    }
    double e = sf_max_rel_err_f(w, wt + s * n, n, NULL), d = sf_max_rel_err_f(dw, dwt, n, NULL);
    if (d > derr) worst_step = s;
    werr = fmax(werr, e);
    derr = fmax(derr, d);
  }
  char name[96];
  snprintf(name, sizeof name, "%s: global grad norm vs torch", tag);
  sf_check_close_f(name, nf, norm, steps, 1e-6);
  snprintf(name, sizeof name, "%s: clip coef vs torch", tag);
  sf_check_close_f(name, cf, coef, steps, 1e-6);
  snprintf(name, sizeof name, "%s: lr of CosineAnnealingWarmRestarts(T_0 3, T_mult 2) per step", tag);
  sf_check_close_d(name, lrc, lr, steps, 1e-15);
  SF_CHECK(werr <= 1e-6, "%s: weights over %d steps: max rel err %.3e > 1e-6", tag, steps, werr);
  SF_CHECK(derr <= 1e-5, "%s: weight updates (w - w0) over %d steps: max rel err %.3e > 1e-5 (worst at step %d)", tag,
           steps, derr, worst_step + 1);
  printf("info %s: weights max rel err %.3e, updates max rel err %.3e, %zu of %zu values bitwise equal to torch\n",
         tag, werr, derr, bitwise, steps * n);
  snprintf(name, sizeof name, "%s: Adam exp_avg after %d steps", tag, steps);
  sf_check_close_f(name, m, mt, n, 1e-5);
  snprintf(name, sizeof name, "%s: Adam exp_avg_sq after %d steps", tag, steps);
  sf_check_close_f(name, v, vt, n, 1e-5);
  if (strcmp(tag, "clip") == 0) {
    float mx = 0;
    for (int s = 0; s < steps; s++) mx = fmaxf(mx, coef[s]);
    SF_CHECK(mx < 1, "fixture's clip case never clips (max coef %g): regenerate", mx);
  } else {
    float mn = 1;
    for (int s = 0; s < steps; s++) mn = fminf(mn, coef[s]);
    SF_CHECK(mn == 1, "fixture's noclip case clips (min coef %g): regenerate", mn);
  }
  free(w); free(m); free(v); free(cf); free(nf); free(dw); free(dwt); free(lrc);
#undef NM
}

/* SGD (sq == NULL) or RMSprop: 20 steps on two tensors vs torch, weights and updates */
static void test_plain(const gold_file *g, const char *tag, int rmsprop)
{
  char nm[64];
#define NM(s) (snprintf(nm, sizeof nm, "%s_%s", tag, s), nm)
  const int32_t *sizes = GI(NM("sizes"), 2);
  const double *hy = GD(NM("hyper"), 4); /* alpha, eps, max_norm, steps */
  const size_t n0 = (size_t)sizes[0], n = n0 + (size_t)sizes[1];
  const int steps = (int)hy[3];
  const float *w0 = GF(NM("w0"), n), *grads = GF(NM("grads"), steps * n), *coef = GF(NM("coef"), steps);
  const float *wt = GF(NM("w"), steps * n), *sqt = rmsprop ? GF(NM("sq"), n) : NULL;
  const double *lr = GD(NM("lr"), steps);
  float *w = malloc(n * 4), *sq = calloc(n, 4), *cf = malloc(steps * 4), *dw = malloc(n * 4), *dwt = malloc(n * 4);
  double werr = 0, derr = 0;
  size_t bitwise = 0;
  memcpy(w, w0, n * 4);
  for (int s = 0; s < steps; s++) {
    const float *gs = grads + s * n;
    double ss = 0;
    sf_sumsq_partial(&ss, gs, n0);
    sf_sumsq_partial(&ss, gs + n0, n - n0);
    cf[s] = sf_clip_coef(ss, (float)hy[2]);
    SF_CHECK(lr[s] == sf_cosine_warm_restart_lr(s, 1e-3, 1e-4, 3, 2), "%s: fixture lr at step %d is %.17g", tag, s + 1,
             lr[s]);
    if (rmsprop) {
      sf_rmsprop_step(w, sq, gs, n0, lr[s], hy[0], hy[1], cf[s]);
      sf_rmsprop_step(w + n0, sq + n0, gs + n0, n - n0, lr[s], hy[0], hy[1], cf[s]);
    } else {
      sf_sgd_step(w, gs, n0, lr[s], cf[s]);
      sf_sgd_step(w + n0, gs + n0, n - n0, lr[s], cf[s]);
    }
    for (size_t i = 0; i < n; i++) {
      dw[i] = w[i] - w0[i];
      dwt[i] = wt[s * n + i] - w0[i];
      bitwise += w[i] == wt[s * n + i];
    }
    werr = fmax(werr, sf_max_rel_err_f(w, wt + s * n, n, NULL));
    derr = fmax(derr, sf_max_rel_err_f(dw, dwt, n, NULL));
  }
  char name[96];
  snprintf(name, sizeof name, "%s: clip coef vs torch", tag);
  sf_check_close_f(name, cf, coef, steps, 1e-6);
  SF_CHECK(werr <= 1e-6, "%s: weights over %d steps: max rel err %.3e > 1e-6", tag, steps, werr);
  SF_CHECK(derr <= 1e-5, "%s: weight updates (w - w0) over %d steps: max rel err %.3e > 1e-5", tag, steps, derr);
  printf("info %s: weights max rel err %.3e, updates max rel err %.3e, %zu of %zu values bitwise equal to torch\n",
         tag, werr, derr, bitwise, steps * n);
  if (rmsprop) {
    snprintf(name, sizeof name, "%s: RMSprop square_avg after %d steps", tag, steps);
    sf_check_close_f(name, sq, sqt, n, 1e-5);
  }
  float lo = 1, hi = 0;
  for (int s = 0; s < steps; s++) lo = fminf(lo, coef[s]), hi = fmaxf(hi, coef[s]);
  if (strstr(tag, "noclip"))
    SF_CHECK(lo == 1, "fixture's %s case clips (min coef %g): regenerate", tag, lo);
  else
    SF_CHECK(hi < 1, "fixture's %s case never clips (max coef %g): regenerate", tag, hi);
  free(w); free(sq); free(cf); free(dw); free(dwt);
#undef NM
}

static void test_loss(const gold_file *g)
{
  const int32_t *sh = GI("loss_shape", 4);
  const size_t n = (size_t)sh[0] * sh[1] * sh[2];
  const int K = sh[3];
  const float *z = GF("loss_z", n * K), *cw = GF("loss_cw", K), *dzt = GF("loss_dz", n * K);
  const int32_t *lab32 = GI("loss_lab", n);
  const double *out = GD("loss_out", 3);
  uint16_t *lab = malloc(n * sizeof *lab);
  for (size_t i = 0; i < n; i++) lab[i] = (uint16_t)lab32[i];
  double *acc = calloc(SF_LOSS_NACC(K), sizeof(double)), got[3];
  float *dz = malloc(n * K * 4);
  sf_loss_partial_ref(acc, z, lab, cw, n, K);
  sf_loss_finalize(&got[0], &got[1], &got[2], acc, K);
  sf_check_close_d("loss vs torch: ce", &got[0], &out[0], 1, 1e-5);
  sf_check_close_d("loss vs torch: dice_fg", &got[1], &out[1], 1, 1e-5);
  sf_check_close_d("loss vs torch: loss", &got[2], &out[2], 1, 1e-5);
  sf_loss_backward_ref(dz, z, lab, cw, acc, n, K, 1.0f);
  sf_check_close_f("loss vs torch: dL/dz", dz, dzt, n * K, 1e-5);
  free(lab); free(acc); free(dz);
}

static void test_groupnorm(const gold_file *g)
{
  const int32_t *sh = GI("gn_shape", 5);
  const size_t n = (size_t)sh[0] * sh[1] * sh[2];
  const int C = sh[3], G = sh[4];
  const float *x = GF("gn_x", n * C), *gamma = GF("gn_gamma", C), *beta = GF("gn_beta", C), *dy = GF("gn_dy", n * C);
  float *y = malloc(n * C * 4), *dx = malloc(n * C * 4), *dg = calloc(C, 4), *db = calloc(C, 4);
  for (int relu = 0; relu <= 1; relu++) {
    const char *tag = relu ? "gnr" : "gn";
    char nm[64], name[96];
    double *stats = calloc(2 * G, 8), *gsums = calloc(2 * G, 8), *dgb = calloc(2 * C, 8);
    memset(dg, 0, C * 4);
    memset(db, 0, C * 4);
    sf_groupnorm_stats_ref(stats, x, n, C, G);
    sf_groupnorm_forward_ref(y, x, stats, gamma, beta, n, n, C, G, 1e-5f, relu);
    sf_groupnorm_backward_stats_ref(gsums, dgb, dy, y, x, stats, gamma, n, n, C, G, 1e-5f, relu);
    sf_groupnorm_backward_data_ref(dx, dy, y, x, stats, gsums, gamma, n, n, C, G, 1e-5f, relu);
    sf_groupnorm_param_grads(dg, db, dgb, C);
#define CHK(what, got, cnt)                                                              \
    snprintf(nm, sizeof nm, "%s_%s", tag, what);                                         \
    snprintf(name, sizeof name, "GroupNorm%s vs torch: %s", relu ? "+ReLU" : "", what); \
    sf_check_close_f(name, got, GF(nm, cnt), cnt, 1e-5)
    CHK("y", y, n * C);
    CHK("dx", dx, n * C);
    CHK("dgamma", dg, (size_t)C);
    CHK("dbeta", db, (size_t)C);
#undef CHK
    free(stats); free(gsums); free(dgb);
  }
  free(y); free(dx); free(dg); free(db);
}

static void test_maxpool(const gold_file *g)
{
  const int32_t *sh = GI("mp_shape", 4);
  const int nd = sh[0], H = sh[1], W = sh[2], C = sh[3];
  const size_t ny = (size_t)nd * H * W * C;
  const float *x = GF("mp_x", 8 * ny), *yt = GF("mp_y", ny), *dy = GF("mp_dy", ny), *dxt = GF("mp_dx", 8 * ny);
  const int32_t *it = GI("mp_idx", ny);
  float *y = malloc(ny * 4), *dx = malloc(8 * ny * 4);
  uint8_t *idx = malloc(ny);
  sf_maxpool3d_forward_ref(y, idx, x, nd, H, W, C);
  int nan_ok = 1, idx_bad = 0;
  for (size_t i = 0; i < ny; i++) {
    nan_ok &= isnan(y[i]) == isnan(yt[i]);
    if (idx[i] != it[i]) {
      if (!idx_bad) fprintf(stderr, "  first argmax mismatch at [%zu]: got %d, torch %d\n", i, idx[i], it[i]);
      idx_bad++;
    }
  }
  sf_check_close_f("MaxPool3d vs torch: y", y, yt, ny, 0);
  SF_CHECK(nan_ok, "MaxPool3d: NaN positions differ from torch");
  SF_CHECK(idx_bad == 0, "MaxPool3d: %d of %zu argmax indices differ from torch", idx_bad, ny);
  sf_maxpool3d_backward_ref(dx, dy, idx, nd, H, W, C);
  sf_check_close_f("MaxPool3d vs torch: dx", dx, dxt, 8 * ny, 0);
  free(y); free(dx); free(idx);
}

int main(int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : "tests/golden";
  gold_file ga, ge, go;
  if (!gold_open(&ga, dir, "optim_adam.bin") || !gold_open(&ge, dir, "optim_elem.bin") ||
      !gold_open(&go, dir, "optim_sgd_rmsprop.bin"))
    return 1;
  test_schedule(&ga);
  test_adam(&ga, "clip");
  test_adam(&ga, "noclip");
  test_plain(&go, "sgd_clip", 0);
  test_plain(&go, "sgd_noclip", 0);
  test_plain(&go, "rmsprop_clip", 1);
  test_plain(&go, "rmsprop_noclip", 1);
  test_loss(&ge);
  test_groupnorm(&ge);
  test_maxpool(&ge);
  gold_close(&ga);
  gold_close(&ge);
  gold_close(&go);
  return sf_test_end();
}
