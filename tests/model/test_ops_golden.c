/* Every U-Net op against PyTorch (tests/golden/ops.bin, scripts/make_golden.py): conv3d, conv1,
 * convtranspose, GroupNorm with and without ReLU, max-pool (with ties), loss and hard Dice, forward
 * and backward, for the _ref and the _blas kernels, at <= 1e-5 relative to each tensor's max |value|.
 * Conv and GroupNorm are also run split into depth slabs (halo planes, partial sums) to check that
 * a tiled run gives the untiled answer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "scaffold/model.h"
#include "scaffold/ops.h"
#include "testutil.h"

#define RTOL 1e-5

static sf_golden *G;

/* A golden (1,C,D,H,W) tensor as a fresh (D,H,W,C) array; checks the shape. */
static float *act(const char *name, int C, int D, int H, int W)
{
  int64_t shape[5] = {1, C, D, H, W};
  sf_golden_expect_shape(G, name, 5, shape);
  float *out = malloc((size_t)C * D * H * W * sizeof(float));
  sf_golden_ncdhw_to_ndhwc(out, sf_golden_f32(G, name, NULL), C, D, H, W);
  return out;
}

static float *weight(const char *name, sf_param_kind kind, int cin, int cout, size_t numel)
{
  size_t n = 0;
  const float *t = sf_golden_f32(G, name, &n);
  SF_CHECK(n == numel, "%s has %zu elements, want %zu", name, n, numel);
  sf_param_desc d = {"", kind, cin, cout, numel, 0, 0};
  snprintf(d.name, sizeof d.name, "%s", name);
  float *out = malloc(numel * sizeof(float));
  sf_param_from_torch(&d, out, t);
  return out;
}

static float *zeros(size_t n) { return calloc(n, sizeof(float)); }

static void check(const char *variant, const char *what, const float *got, const float *want, size_t n, double rtol)
{
  char name[128];
  snprintf(name, sizeof name, "%s %s", what, variant);
  sf_check_close_f(name, got, want, n, rtol);
}

typedef void (*conv3_fn)(float *, const float *, const float *, const float *, const float *, int, int, int, int, int);

static void test_conv3d(int naive)
{
  const char *v = naive ? "ref" : "blas";
  conv3_fn fwd = naive ? sf_conv3d_forward_ref : sf_conv3d_forward;
  conv3_fn bwd_data = naive ? sf_conv3d_backward_data_ref : sf_conv3d_backward_data;
  conv3_fn bwd_w = naive ? sf_conv3d_backward_weights_ref : sf_conv3d_backward_weights;
  const int D = 5, H = 6, W = 7, Ci = 3, Co = 5;
  size_t plane_i = (size_t)H * W * Ci, plane_o = (size_t)H * W * Co, nw = 27 * Ci * Co;
  float *x = act("conv3d.x", Ci, D, H, W), *y = act("conv3d.y", Co, D, H, W), *dy = act("conv3d.dy", Co, D, H, W);
  float *dx = act("conv3d.dx", Ci, D, H, W);
  float *w = weight("conv3d.w", SF_PARAM_CONV3_W, Ci, Co, nw), *dw = weight("conv3d.dw", SF_PARAM_CONV3_W, Ci, Co, nw);
  float *gy = zeros(plane_o * D), *gx = zeros(plane_i * D), *gw = zeros(nw);

  fwd(gy, NULL, x, NULL, w, D, H, W, Ci, Co);
  check(v, "conv3d forward", gy, y, plane_o * D, RTOL);
  bwd_data(gx, NULL, dy, NULL, w, D, H, W, Ci, Co);
  check(v, "conv3d backward data", gx, dx, plane_i * D, RTOL);
  bwd_w(gw, NULL, x, NULL, dy, D, H, W, Ci, Co);
  check(v, "conv3d backward weights", gw, dw, nw, RTOL);
  bwd_w(gw, NULL, x, NULL, dy, D, H, W, Ci, Co); /* accumulates: now 2 dw */
  for (size_t i = 0; i < nw; i++) gw[i] *= 0.5f;
  check(v, "conv3d backward weights accumulates (+=)", gw, dw, nw, RTOL);

  /* slabs [0,2) and [2,5) with halo planes */
  memset(gy, 0, plane_o * D * sizeof(float));
  memset(gx, 0, plane_i * D * sizeof(float));
  memset(gw, 0, nw * sizeof(float));
  fwd(gy, NULL, x, x + 2 * plane_i, w, 2, H, W, Ci, Co);
  fwd(gy + 2 * plane_o, x + 1 * plane_i, x + 2 * plane_i, NULL, w, 3, H, W, Ci, Co);
  check(v, "conv3d forward in 2 slabs", gy, y, plane_o * D, RTOL);
  bwd_data(gx, NULL, dy, dy + 2 * plane_o, w, 2, H, W, Ci, Co);
  bwd_data(gx + 2 * plane_i, dy + 1 * plane_o, dy + 2 * plane_o, NULL, w, 3, H, W, Ci, Co);
  check(v, "conv3d backward data in 2 slabs", gx, dx, plane_i * D, RTOL);
  bwd_w(gw, NULL, x, x + 2 * plane_i, dy, 2, H, W, Ci, Co);
  bwd_w(gw, x + 1 * plane_i, x + 2 * plane_i, NULL, dy + 2 * plane_o, 3, H, W, Ci, Co);
  check(v, "conv3d backward weights in 2 slabs", gw, dw, nw, RTOL);
  free(x), free(y), free(dy), free(dx), free(w), free(dw), free(gy), free(gx), free(gw);
}

static void test_conv1(int naive)
{
  const char *v = naive ? "ref" : "blas";
  const int D = 5, H = 6, W = 7, Ci = 5, Co = 3;
  size_t n = (size_t)D * H * W;
  float *x = act("conv1.x", Ci, D, H, W), *y = act("conv1.y", Co, D, H, W), *dy = act("conv1.dy", Co, D, H, W);
  float *dx = act("conv1.dx", Ci, D, H, W);
  float *w = weight("conv1.w", SF_PARAM_OUT_W, Ci, Co, Ci * Co), *dw = weight("conv1.dw", SF_PARAM_OUT_W, Ci, Co, Ci * Co);
  const float *b = sf_golden_f32(G, "conv1.b", NULL), *db = sf_golden_f32(G, "conv1.db", NULL);
  float *gy = zeros(n * Co), *gx = zeros(n * Ci), *gw = zeros(Ci * Co), *gb = zeros(Co);
  (naive ? sf_conv1_forward_ref : sf_conv1_forward)(gy, x, w, b, n, Ci, Co);
  check(v, "conv1 forward", gy, y, n * Co, RTOL);
  (naive ? sf_conv1_backward_data_ref : sf_conv1_backward_data)(gx, dy, w, n, Ci, Co);
  check(v, "conv1 backward data", gx, dx, n * Ci, RTOL);
  (naive ? sf_conv1_backward_weights_ref : sf_conv1_backward_weights)(gw, gb, x, dy, n, Ci, Co);
  check(v, "conv1 backward weights", gw, dw, Ci * Co, RTOL);
  check(v, "conv1 backward bias", gb, db, Co, RTOL);
  free(x), free(y), free(dy), free(dx), free(w), free(dw), free(gy), free(gx), free(gw), free(gb);
}

static void test_upconv(int naive)
{
  const char *v = naive ? "ref" : "blas";
  const int D = 3, H = 4, W = 5, Ci = 5, Co = 3;
  size_t n = (size_t)D * H * W, nw = 8 * Ci * Co;
  float *x = act("upconv.x", Ci, D, H, W), *y = act("upconv.y", Co, 2 * D, 2 * H, 2 * W);
  float *dy = act("upconv.dy", Co, 2 * D, 2 * H, 2 * W), *dx = act("upconv.dx", Ci, D, H, W);
  float *w = weight("upconv.w", SF_PARAM_UPCONV_W, Ci, Co, nw), *dw = weight("upconv.dw", SF_PARAM_UPCONV_W, Ci, Co, nw);
  const float *b = sf_golden_f32(G, "upconv.b", NULL), *db = sf_golden_f32(G, "upconv.db", NULL);
  float *gy = zeros(8 * n * Co), *gx = zeros(n * Ci), *gw = zeros(nw), *gb = zeros(Co);
  (naive ? sf_upconv3d_forward_ref : sf_upconv3d_forward)(gy, x, w, b, D, H, W, Ci, Co);
  check(v, "upconv forward", gy, y, 8 * n * Co, RTOL);
  (naive ? sf_upconv3d_backward_data_ref : sf_upconv3d_backward_data)(gx, dy, w, D, H, W, Ci, Co);
  check(v, "upconv backward data", gx, dx, n * Ci, RTOL);
  (naive ? sf_upconv3d_backward_weights_ref : sf_upconv3d_backward_weights)(gw, gb, x, dy, D, H, W, Ci, Co);
  check(v, "upconv backward weights", gw, dw, nw, RTOL);
  check(v, "upconv backward bias", gb, db, Co, RTOL);
  free(x), free(y), free(dy), free(dx), free(w), free(dw), free(gy), free(gx), free(gw), free(gb);
}

/* GroupNorm (+ReLU) in `nslab` depth slabs: stats per slab summed, then normalize per slab; backward
 * partial sums per slab, then data per slab. */
static void test_groupnorm(const char *tag, int relu, int nslab)
{
  char key[64], what[96];
  const int D = 5, H = 6, W = 7, C = 6;
  size_t n = (size_t)D * H * W, plane = (size_t)H * W;
#define GT(s) (snprintf(key, sizeof key, "%s.%s", tag, s), key)
  int groups = sf_golden_int(G, GT("groups"));
  float *x = act(GT("x"), C, D, H, W), *y = act(GT("y"), C, D, H, W), *dy = act(GT("dy"), C, D, H, W);
  float *dx = act(GT("dx"), C, D, H, W);
  const float *gamma = sf_golden_f32(G, GT("gamma"), NULL), *beta = sf_golden_f32(G, GT("beta"), NULL);
  const float *dgamma = sf_golden_f32(G, GT("dgamma"), NULL), *dbeta = sf_golden_f32(G, GT("dbeta"), NULL);
#undef GT
  float *gy = zeros(n * C), *gx = zeros(n * C), *gdg = zeros(C), *gdb = zeros(C);
  double *stats = calloc(2 * groups, sizeof(double)), *gsums = calloc(2 * groups, sizeof(double));
  double *dgb = calloc(2 * C, sizeof(double));
  int d0s[3] = {0, 2, D}, d0s1[2] = {0, D};
  int *cut = nslab == 2 ? d0s : d0s1;
  for (int s = 0; s < nslab; s++) {
    size_t o = (size_t)cut[s] * plane * C, m = (size_t)(cut[s + 1] - cut[s]) * plane;
    sf_groupnorm_stats_ref(stats, x + o, m, C, groups);
  }
  for (int s = 0; s < nslab; s++) {
    size_t o = (size_t)cut[s] * plane * C, m = (size_t)(cut[s + 1] - cut[s]) * plane;
    sf_groupnorm_forward_ref(gy + o, x + o, stats, gamma, beta, m, n, C, groups, SF_GN_EPS, relu);
  }
  snprintf(what, sizeof what, "%s forward (%d slab%s)", tag, nslab, nslab > 1 ? "s" : "");
  sf_check_close_f(what, gy, y, n * C, RTOL);
  /* backward from the golden forward output, so a forward error does not mask a backward one */
  for (int s = 0; s < nslab; s++) {
    size_t o = (size_t)cut[s] * plane * C, m = (size_t)(cut[s + 1] - cut[s]) * plane;
    sf_groupnorm_backward_stats_ref(gsums, dgb, dy + o, y + o, x + o, stats, gamma, m, n, C, groups, SF_GN_EPS, relu);
  }
  for (int s = 0; s < nslab; s++) {
    size_t o = (size_t)cut[s] * plane * C, m = (size_t)(cut[s + 1] - cut[s]) * plane;
    sf_groupnorm_backward_data_ref(gx + o, dy + o, y + o, x + o, stats, gsums, gamma, m, n, C, groups, SF_GN_EPS,
                                   relu);
  }
  sf_groupnorm_param_grads(gdg, gdb, dgb, C);
  snprintf(what, sizeof what, "%s backward dx (%d slab%s)", tag, nslab, nslab > 1 ? "s" : "");
  sf_check_close_f(what, gx, dx, n * C, RTOL);
  snprintf(what, sizeof what, "%s backward dgamma (%d slab%s)", tag, nslab, nslab > 1 ? "s" : "");
  sf_check_close_f(what, gdg, dgamma, C, RTOL);
  snprintf(what, sizeof what, "%s backward dbeta (%d slab%s)", tag, nslab, nslab > 1 ? "s" : "");
  sf_check_close_f(what, gdb, dbeta, C, RTOL);
  free(x), free(y), free(dy), free(dx), free(gy), free(gx), free(gdg), free(gdb), free(stats), free(gsums), free(dgb);
}

static void test_maxpool(const char *tag)
{
  char key[64], what[96];
  const int D = 3, H = 4, W = 5, C = 3;
  size_t n = (size_t)D * H * W;
#define GT(s) (snprintf(key, sizeof key, "%s.%s", tag, s), key)
  float *x = act(GT("x"), C, 2 * D, 2 * H, 2 * W), *y = act(GT("y"), C, D, H, W), *dy = act(GT("dy"), C, D, H, W);
  float *dx = act(GT("dx"), C, 2 * D, 2 * H, 2 * W);
  const int32_t *idx_t = sf_golden_i32(G, GT("idx"), NULL);
#undef GT
  float *gy = zeros(n * C), *gx = zeros(8 * n * C);
  uint8_t *idx = calloc(n * C, 1);
  sf_maxpool3d_forward_ref(gy, idx, x, D, H, W, C);
  snprintf(what, sizeof what, "%s forward", tag);
  sf_check_bitwise_f(what, gy, y, n * C);
  size_t bad = 0, first = 0;
  for (int c = 0; c < C; c++)
    for (size_t v = 0; v < n; v++)
      if (idx[v * C + c] != idx_t[(size_t)c * n + v] && bad++ == 0) first = v * C + c;
  SF_CHECK(bad == 0, "%s: %zu argmax offsets differ from torch's (first at %zu: got %d want %d)", tag, bad, first,
           idx[first], idx_t[(first % C) * n + first / C]);
  sf_maxpool3d_backward_ref(gx, dy, idx, D, H, W, C);
  snprintf(what, sizeof what, "%s backward", tag);
  sf_check_bitwise_f(what, gx, dx, 8 * n * C);
  free(x), free(y), free(dy), free(dx), free(gy), free(gx), free(idx);
}

static uint16_t *labels(const char *name, size_t n)
{
  size_t m = 0;
  const int32_t *l = sf_golden_i32(G, name, &m);
  SF_CHECK(m == n, "%s has %zu labels, want %zu", name, m, n);
  uint16_t *out = malloc(n * sizeof(uint16_t));
  for (size_t i = 0; i < n; i++) out[i] = (uint16_t)l[i];
  return out;
}

static void test_loss(int nslab)
{
  const int D = 5, H = 6, W = 7, K = 4;
  size_t n = (size_t)D * H * W, plane = (size_t)H * W;
  float *z = act("loss.z", K, D, H, W), *dz = act("loss.dz", K, D, H, W);
  uint16_t *lab = labels("loss.lab", n);
  const float *cw = sf_golden_f32(G, "loss.cw", NULL);
  const double *want = sf_golden_f64(G, "loss.values", NULL);
  double *acc = calloc(SF_LOSS_NACC(K), sizeof(double)), got[3];
  int cut[3] = {0, nslab == 2 ? 3 : D, D};
  for (int s = 0; s < nslab; s++) {
    size_t o = (size_t)cut[s] * plane, m = (size_t)(cut[s + 1] - cut[s]) * plane;
    sf_loss_partial_ref(acc, z + o * K, lab + o, cw, m, K);
  }
  sf_loss_finalize(&got[0], &got[1], &got[2], acc, K);
  char what[64];
  snprintf(what, sizeof what, "loss ce, dice_fg, loss (%d slab%s)", nslab, nslab > 1 ? "s" : "");
  for (int i = 0; i < 3; i++) printf("     %s[%d]: got %.9f want %.9f\n", what, i, got[i], want[i]);
  for (int i = 0; i < 3; i++)
    SF_CHECK(fabs(got[i] - want[i]) <= RTOL * fmax(fabs(want[i]), 1e-3), "%s[%d]: got %.9g want %.9g", what, i,
             got[i], want[i]);
  float *gz = zeros(n * K);
  for (int s = 0; s < nslab; s++) {
    size_t o = (size_t)cut[s] * plane, m = (size_t)(cut[s + 1] - cut[s]) * plane;
    sf_loss_backward_ref(gz + o * K, z + o * K, lab + o, cw, acc, m, K, 1.0f);
  }
  snprintf(what, sizeof what, "loss backward dz (%d slab%s)", nslab, nslab > 1 ? "s" : "");
  sf_check_close_f(what, gz, dz, n * K, RTOL);
  for (int s = 0; s < nslab; s++) { /* scale is applied */
    size_t o = (size_t)cut[s] * plane, m = (size_t)(cut[s + 1] - cut[s]) * plane;
    sf_loss_backward_ref(gz + o * K, z + o * K, lab + o, cw, acc, m, K, 0.25f);
  }
  for (size_t i = 0; i < n * K; i++) gz[i] *= 4.0f;
  snprintf(what, sizeof what, "loss backward dz with scale 0.25 (x4)");
  if (nslab == 1) sf_check_close_f(what, gz, dz, n * K, RTOL);
  free(z), free(dz), free(lab), free(acc), free(gz);
}

static void test_dice_hard(void)
{
  const int D = 5, H = 6, W = 7, K = 4;
  size_t n = (size_t)D * H * W;
  float *z = act("dice_hard.z", K, D, H, W);
  uint16_t *lab = labels("dice_hard.lab", n);
  const double *per_class = sf_golden_f64(G, "dice_hard.per_class", NULL);
  double want = sf_golden_double(G, "dice_hard.value");
  double *acc = calloc(3 * K, sizeof(double));
  sf_dice_hard_partial_ref(acc, z, lab, n / 2, K);
  sf_dice_hard_partial_ref(acc, z + n / 2 * K, lab + n / 2, n - n / 2, K);
  double got = sf_dice_hard_finalize(acc, K);
  SF_CHECK(fabs(got - want) <= 1e-12, "hard Dice: got %.15f want %.15f", got, want);
  printf("     hard Dice: got %.9f want %.9f\n", got, want);
  for (int k = 0; k < K; k++) { /* per class, from the sums */
    double I = 2 * acc[3 * k], S = acc[3 * k + 1] + acc[3 * k + 2];
    if (S == 0) S = I;
    double d = (I + SF_DICE_EPS) / (S + SF_DICE_EPS);
    SF_CHECK(fabs(d - per_class[k]) <= 1e-12, "hard Dice class %d: got %.15f want %.15f (sums %g %g %g)", k, d,
             per_class[k], acc[3 * k], acc[3 * k + 1], acc[3 * k + 2]);
  }
  free(z), free(lab), free(acc);
}

int main(void)
{
  char *path = sf_golden_path("ops.bin");
  G = sf_golden_load(path);
  free(path);
  for (int naive = 1; naive >= 0; naive--) {
    test_conv3d(naive);
    test_conv1(naive);
    test_upconv(naive);
  }
  for (int nslab = 1; nslab <= 2; nslab++) {
    test_groupnorm("gn", 0, nslab);
    test_groupnorm("gnrelu", 1, nslab);
    test_loss(nslab);
  }
  test_maxpool("maxpool");
  test_maxpool("maxpool_ties");
  test_dice_hard();
  sf_golden_free(G);
  return sf_test_end();
}
