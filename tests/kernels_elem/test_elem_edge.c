/* Edge cases with values worked out by hand: the loss and hard Dice on an all-background mask, a
 * class absent from the prediction, a perfect and a worst prediction, absent-and-predicted-absent
 * classes, the soft S == 0 branch, argmax ties and NaN; ReLU/concat/maxpool corner cases (and concats large enough
 * to be streamed); the clip
 * coefficient, Adam's first steps and the warm-restart schedule at known epochs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elem_mirror.h"
#include "scaffold/common.h"
#include "scaffold/lr_schedule.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"
#include "testutil.h"

#define E SF_DICE_EPS

static void check_rel(const char *name, double got, double want, double tol)
{
  sf_check_close_d(name, &got, &want, 1, tol);
}

/* hard Dice of one-hot-at-pred logits vs labels */
static double hard_dice(const int *pred, const int *lab, int n, int K)
{
  float *z = calloc((size_t)n * K, sizeof(float));
  uint16_t *l = calloc((size_t)n, sizeof(uint16_t));
  for (int i = 0; i < n; i++) {
    z[i * K + pred[i]] = 5.0f;
    l[i] = (uint16_t)lab[i];
  }
  double acc[3 * 16] = {0};
  sf_dice_hard_partial_ref(acc, z, l, (size_t)n, K);
  free(z);
  free(l);
  return sf_dice_hard_finalize(acc, K);
}

static void test_dice_cases(void)
{
  { /* class 2 labelled but never predicted */
    int lab[] = {0, 0, 1, 1, 2, 2, 0, 1}, pred[] = {0, 1, 1, 0, 1, 0, 0, 1};
    check_rel("hard dice: class absent from prediction", hard_dice(pred, lab, 8, 3),
              ((4 + E) / (7 + E) + E / (2 + E)) / 2, 1e-15);
  }
  { /* worst case: no true positive on any foreground class */
    int lab[] = {1, 1, 2, 2, 0, 0}, pred[] = {2, 2, 1, 1, 1, 1};
    double d = hard_dice(pred, lab, 6, 3);
    check_rel("hard dice: worst case", d, (E / (6 + E) + E / (4 + E)) / 2, 1e-15);
    SF_CHECK(d < 1e-6, "worst-case hard dice %.3g should be ~0", d);
  }
  { /* class 3 absent from labels and prediction scores exactly 1 */
    int lab[] = {0, 1, 1, 0, 2}, pred[] = {0, 1, 0, 0, 2};
    check_rel("hard dice: absent and predicted absent", hard_dice(pred, lab, 5, 4),
              ((2 + E) / (3 + E) + 1.0 + 1.0) / 3, 1e-15);
  }
  { /* perfect prediction is exactly 1 */
    int lab[] = {0, 1, 2, 3, 3, 2, 1, 0, 0}, pred[] = {0, 1, 2, 3, 3, 2, 1, 0, 0};
    double d = hard_dice(pred, lab, 9, 4);
    SF_CHECK(d == 1.0, "perfect hard dice is %.17g, want exactly 1", d);
  }
  { /* argmax: ties -> lowest class, NaN counts as the maximum (torch.argmax) */
    float z[] = {1, 1, 0, /**/ 0, 2, 2, /**/ 0, NAN, 5, /**/ -INFINITY, -INFINITY, -INFINITY};
    uint16_t l[] = {0, 0, 0, 0};
    double acc[9] = {0};
    sf_dice_hard_partial_ref(acc, z, l, 4, 3);
    SF_CHECK(acc[1] == 2 && acc[4] == 2 && acc[7] == 0,
             "argmax predicted counts %g %g %g, want 2 2 0 (ties low, NaN max, all -inf -> 0)", acc[1], acc[4], acc[7]);
  }
}

static void test_loss_cases(void)
{
  { /* all-background mask, confident background prediction: closed forms */
    enum { N = 10, K = 3 };
    float z[N * K], cw[K] = {1.5f, 7, 7};
    uint16_t lab[N] = {0};
    for (int i = 0; i < N; i++) z[i * K] = 10, z[i * K + 1] = z[i * K + 2] = 0;
    double acc[SF_LOSS_NACC(K)] = {0}, ce, dice, loss, dacc[3 * K] = {0};
    sf_loss_partial_ref(acc, z, lab, cw, N, K);
    sf_loss_finalize(&ce, &dice, &loss, acc, K);
    double p = 1 / (exp(10.0) + 2), dk = E / (N * p + E);
    check_rel("all-background: ce = log(1 + 2e^-10)", ce, log1p(2 * exp(-10.0)), 1e-12);
    check_rel("all-background: soft dice_fg", dice, dk, 1e-12);
    check_rel("all-background: loss", loss, log1p(2 * exp(-10.0)) + 1 - dk, 1e-12);
    sf_dice_hard_partial_ref(dacc, z, lab, N, K);
    double hd = sf_dice_hard_finalize(dacc, K);
    SF_CHECK(hd == 1.0, "all-background hard dice %.17g, want exactly 1", hd);
  }
  { /* perfect prediction: loss at its minimum 0 and a vanishing gradient */
    enum { N = 12, K = 4 };
    float z[N * K] = {0}, cw[K] = {1, 3, 3, 3}, dz[N * K];
    uint16_t lab[N];
    for (int i = 0; i < N; i++) lab[i] = (uint16_t)(i % K), z[i * K + i % K] = 40;
    double acc[SF_LOSS_NACC(K)] = {0}, loss, dacc[3 * K] = {0};
    sf_loss_partial_ref(acc, z, lab, cw, N, K);
    sf_loss_finalize(NULL, NULL, &loss, acc, K);
    sf_loss_backward_ref(dz, z, lab, cw, acc, N, K, 1.0f);
    float mx = 0;
    for (int i = 0; i < N * K; i++) mx = fmaxf(mx, fabsf(dz[i]));
    SF_CHECK(loss >= -1e-15 && loss < 1e-12, "perfect prediction: loss %.3g, want ~0", loss);
    SF_CHECK(mx < 1e-12, "perfect prediction: max |dz| %.3g, want ~0", mx);
    sf_dice_hard_partial_ref(dacc, z, lab, N, K);
    SF_CHECK(sf_dice_hard_finalize(dacc, K) == 1.0, "perfect prediction: hard dice not exactly 1");
  }
  { /* S == 0: class 2 absent and P_2 underflows to exactly 0 -> Dice_2 := 1 and no gradient through it */
    enum { N = 9, K = 3 };
    float z[N * K], cw[K] = {1, 4, 4}, dz[N * K];
    double zd[N * K], cwd[K] = {1, 4, 4}, fd[N * K], dzd[N * K];
    uint16_t lab[N];
    sf_rng r;
    sf_rng_seed(&r, 3, 9);
    for (int i = 0; i < N; i++) {
      z[i * K] = (float)sf_rng_uniform_range(&r, -2, 2);
      z[i * K + 1] = (float)sf_rng_uniform_range(&r, -2, 2);
      z[i * K + 2] = -1e4f;
      lab[i] = (uint16_t)(i % 2);
    }
    for (int i = 0; i < N * K; i++) zd[i] = z[i];
    double acc[SF_LOSS_NACC(K)] = {0}, dice, mdice;
    sf_loss_partial_ref(acc, z, lab, cw, N, K);
    SF_CHECK(acc[2 + 3 * 2 + 1] == 0 && acc[2 + 3 * 2 + 2] == 0, "S_2 = %g + %g, want exactly 0", acc[2 + 7],
             acc[2 + 8]);
    sf_loss_finalize(NULL, &dice, NULL, acc, K);
    mir_loss(NULL, &mdice, zd, lab, cwd, N, K);
    double d1 = (2 * acc[2 + 3] + E) / (acc[2 + 4] + acc[2 + 5] + E);
    check_rel("S==0: dice_fg = (dice_1 + 1)/2", dice, (d1 + 1) / 2, 1e-15);
    check_rel("S==0: dice_fg vs mirror", dice, mdice, 1e-12);
    sf_loss_backward_ref(dz, z, lab, cw, acc, N, K, 1.0f);
    int nonzero = 0;
    for (int i = 0; i < N; i++) nonzero += dz[i * K + 2] != 0.0f;
    SF_CHECK(nonzero == 0, "S==0: %d voxels have dz of the absent class != 0", nonzero);
    for (int k = 0; k < N * K; k++) {
      double s = zd[k];
      zd[k] = s + 1e-5;
      double fp = mir_loss(NULL, NULL, zd, lab, cwd, N, K);
      zd[k] = s - 1e-5;
      double fm = mir_loss(NULL, NULL, zd, lab, cwd, N, K);
      zd[k] = s;
      fd[k] = (fp - fm) / 2e-5;
    }
    for (int k = 0; k < N * K; k++) dzd[k] = dz[k];
    sf_check_close_d("S==0: float dz vs FD of the mirror", dzd, fd, N * K, 1e-5);
  }
}

static void test_relu_concat_maxpool(void)
{
  float x[] = {-1, 0, 2, NAN, -0.0f, 3}, dy[] = {1, 2, 3, 4, 5, 6}, dx[6];
  sf_relu_forward(x, x, 6); /* in place */
  SF_CHECK(x[0] == 0 && x[1] == 0 && x[2] == 2 && isnan(x[3]) && x[4] == 0 && x[5] == 3,
           "relu in place: %g %g %g %g %g %g", x[0], x[1], x[2], x[3], x[4], x[5]);
  sf_relu_backward(dx, dy, x, 6);
  SF_CHECK(dx[0] == 0 && dx[1] == 0 && dx[2] == 3 && dx[3] == 0 && dx[4] == 0 && dx[5] == 6,
           "relu backward: %g %g %g %g %g %g", dx[0], dx[1], dx[2], dx[3], dx[4], dx[5]);

  float a[4 * 3], b[4 * 2], y[4 * 5], da[4 * 3], db[4 * 2];
  for (int i = 0; i < 12; i++) a[i] = (float)i;
  for (int i = 0; i < 8; i++) b[i] = 100.0f + (float)i;
  sf_concat_forward(y, a, b, 4, 3, 2);
  int bad = 0;
  for (int v = 0; v < 4; v++)
    for (int c = 0; c < 5; c++) bad += y[v * 5 + c] != (c < 3 ? a[v * 3 + c] : b[v * 2 + c - 3]);
  SF_CHECK(bad == 0, "concat forward: %d misplaced values", bad);
  sf_concat_backward(da, db, y, 4, 3, 2);
  SF_CHECK(memcmp(da, a, sizeof a) == 0 && memcmp(db, b, sizeof b) == 0, "concat backward does not split back");

  /* one window, 4 channels: all equal; tie at k=5,6; NaN at k=3 and k=6; all -inf */
  float px[8 * 4], py[4], pdy[4] = {1, 2, 3, 4}, pdx[8 * 4];
  uint8_t idx[4];
  for (int k = 0; k < 8; k++) {
    px[k * 4 + 0] = 2;
    px[k * 4 + 1] = (k == 5 || k == 6) ? 9.0f : (float)k;
    px[k * 4 + 2] = (k == 3 || k == 6) ? NAN : 100.0f;
    px[k * 4 + 3] = -INFINITY;
  }
  sf_maxpool3d_forward_ref(py, idx, px, 1, 1, 1, 4);
  SF_CHECK(idx[0] == 0 && idx[1] == 5 && idx[2] == 6 && idx[3] == 0, "maxpool argmax %d %d %d %d, want 0 5 6 0",
           idx[0], idx[1], idx[2], idx[3]);
  SF_CHECK(py[0] == 2 && py[1] == 9 && isnan(py[2]) && py[3] == -INFINITY, "maxpool values %g %g %g %g", py[0],
           py[1], py[2], py[3]);
  sf_maxpool3d_backward_ref(pdx, pdy, idx, 1, 1, 1, 4);
  bad = 0;
  for (int k = 0; k < 8; k++)
    for (int c = 0; c < 4; c++) bad += pdx[k * 4 + c] != (k == idx[c] ? pdy[c] : 0.0f);
  SF_CHECK(bad == 0, "maxpool backward: %d wrong elements", bad);
}

static void test_optim(void)
{
  float g1[] = {3}, g2[] = {4};
  double ss = 0;
  sf_sumsq_partial(&ss, g1, 1);
  sf_sumsq_partial(&ss, g2, 1);
  SF_CHECK(ss == 25, "sumsq of {3},{4} = %g, want 25", ss);
  float ramp[1001];
  for (int i = 0; i <= 1000; i++) ramp[i] = (float)i;
  ss = 0;
  sf_sumsq_partial(&ss, ramp, 1001);
  SF_CHECK(ss == 1000.0 * 1001 * 2001 / 6, "sumsq of 0..1000 = %.17g", ss);
  check_rel("clip coef, norm 5", sf_clip_coef(25, 1.0f), 1 / (5 + 1e-6), 1e-7);
  SF_CHECK(sf_clip_coef(0.25, 1.0f) == 1.0f, "clip coef for norm 0.5 is %.9g, want exactly 1", sf_clip_coef(0.25, 1.0f));
  SF_CHECK(sf_clip_coef(1.0, 2.0f) == 1.0f, "clip coef norm 1 max 2 is %.9g, want 1", sf_clip_coef(1.0, 2.0f));
  check_rel("clip coef, norm 4, max_norm 2", sf_clip_coef(16, 2.0f), 2 / (4 + 1e-6), 1e-7);

  /* constant gradient: every Adam step moves by lr * g / (|g| + eps) ~ lr * sign(g) */
  float w[4] = {0}, m[4] = {0}, v[4] = {0}, g[4] = {0.5f, -2, 1e-3f, 0};
  float w2[4] = {0}, m2[4] = {0}, v2[4] = {0}, g2x[4] = {1, -4, 2e-3f, 0};
  for (long s = 1; s <= 5; s++) {
    sf_adam_step(w, m, v, g, 4, 1e-3, 0.9, 0.999, 1e-8, s, 1.0f);
    sf_adam_step(w2, m2, v2, g2x, 4, 1e-3, 0.9, 0.999, 1e-8, s, 0.5f);
    double want[4];
    for (int i = 0; i < 4; i++) want[i] = -1e-3 * s * g[i] / (fabs(g[i]) + 1e-8);
    double got[4] = {w[0], w[1], w[2], w[3]};
    char name[64];
    snprintf(name, sizeof name, "adam constant gradient, step %ld", s);
    sf_check_close_d(name, got, want, 4, 1e-5);
  }
  SF_CHECK(memcmp(w, w2, sizeof w) == 0, "adam with grad_scale 0.5 on 2g differs from g");

  /* warm restarts: T_0 10, T_mult 2 -> restarts after epochs 10, 30, 70, 150 */
  const double hi = 1e-3, lo = 1e-4, mid = (hi + lo) / 2;
  long at[] = {0, 10, 30, 70, 150}, half[] = {5, 20, 50, 110};
  for (int i = 0; i < 5; i++)
    SF_CHECK(sf_cosine_warm_restart_lr(at[i], hi, lo, 10, 2) == hi, "lr after %ld epochs is %.17g, want eta_max",
             at[i], sf_cosine_warm_restart_lr(at[i], hi, lo, 10, 2));
  for (int i = 0; i < 4; i++) check_rel("lr at half period", sf_cosine_warm_restart_lr(half[i], hi, lo, 10, 2), mid, 1e-15);
  check_rel("lr just before restart (epoch 29)", sf_cosine_warm_restart_lr(29, hi, lo, 10, 2),
            lo + (hi - lo) * (1 + cos(M_PI * 19 / 20)) / 2, 1e-15);
  check_rel("T_mult 1: epoch 25", sf_cosine_warm_restart_lr(25, hi, lo, 10, 1), mid, 1e-15);
}

/* Concatenations past the streaming threshold (src/kernels/common/stream_store.h: 1 MiB), 16-byte aligned (streamed) and
 * one float off (plain stores), against an element loop: the same values, both ways */
static void test_concat_streamed(int Ca, int Cb, int misalign)
{
  const size_t n = 12288, C = (size_t)Ca + Cb; /* 1.5 MiB of output at 32 channels */
  float *a = sf_aligned_alloc(n * Ca * sizeof(float), "a"), *b = sf_aligned_alloc(n * Cb * sizeof(float), "b");
  float *ybuf = sf_aligned_alloc((n * C + 1) * sizeof(float), "y"), *y = ybuf + misalign;
  float *dabuf = sf_aligned_alloc((n * Ca + 1) * sizeof(float), "da"), *da = dabuf + misalign;
  float *db = sf_aligned_alloc(n * Cb * sizeof(float), "db");
  for (size_t i = 0; i < n * Ca; i++) a[i] = (float)i;
  for (size_t i = 0; i < n * Cb; i++) b[i] = -(float)i;
  sf_concat_forward(y, a, b, n, Ca, Cb);
  size_t bad = 0;
  for (size_t v = 0; v < n; v++)
    for (size_t c = 0; c < C; c++) bad += y[v * C + c] != (c < (size_t)Ca ? a[v * Ca + c] : b[v * Cb + c - Ca]);
  SF_CHECK(bad == 0, "concat forward %d+%d channels, %zu voxels, y %s: %zu misplaced values", Ca, Cb, n,
           misalign ? "unaligned" : "aligned", bad);
  sf_concat_backward(da, db, y, n, Ca, Cb);
  SF_CHECK(memcmp(da, a, n * Ca * sizeof(float)) == 0 && memcmp(db, b, n * Cb * sizeof(float)) == 0,
           "concat backward %d+%d channels, %zu voxels, da %s: does not split back", Ca, Cb, n,
           misalign ? "unaligned" : "aligned");
  free(a), free(b), free(ybuf), free(dabuf), free(db);
}

int main(void)
{
  test_dice_cases();
  test_loss_cases();
  test_relu_concat_maxpool();
  test_concat_streamed(16, 16, 0);
  test_concat_streamed(12, 20, 0);
  test_concat_streamed(16, 16, 1);
  test_optim();
  return sf_test_end();
}
