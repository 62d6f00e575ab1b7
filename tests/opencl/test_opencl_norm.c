/* OpenCL GroupNorm (stats, forward +/- ReLU, backward stats, backward reduce with dgamma/dbeta,
 * backward data), ReLU, MaxPool (ties and a NaN), concat, loss partial / backward, a batch's CE
 * weight sum and its loss backward (pooled weight sum, batch of 3), and hard Dice against the CPU
 * reference, run as StarPU tasks on the OpenCL worker over uneven depth slabs of odd
 * sizes. Partial-sum buffers start as garbage (the launchers must overwrite them). 1e-5 relative;
 * selections (MaxPool, concat, argmax counts) must match exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_testutil.h"
#include "scaffold/common.h"
#include "scaffold/ops.h"

#define RTOL 1e-5

OCL_CODELET(c_gn_stats, sf_groupnorm_stats_opencl);
OCL_CODELET(c_gn_fwd, sf_groupnorm_fwd_opencl);
OCL_CODELET(c_gn_bwd_stats, sf_groupnorm_bwd_stats_opencl);
OCL_CODELET(c_gn_bwd_reduce, sf_groupnorm_bwd_reduce_opencl);
OCL_CODELET(c_gn_bwd_data, sf_groupnorm_bwd_data_opencl);
OCL_CODELET(c_relu_fwd, sf_relu_fwd_opencl);
OCL_CODELET(c_relu_bwd, sf_relu_bwd_opencl);
OCL_CODELET(c_pool_fwd, sf_maxpool3d_fwd_opencl);
OCL_CODELET(c_pool_bwd, sf_maxpool3d_bwd_opencl);
OCL_CODELET(c_cat_fwd, sf_concat_fwd_opencl);
OCL_CODELET(c_cat_bwd, sf_concat_bwd_opencl);
OCL_CODELET(c_loss, sf_loss_partial_opencl);
OCL_CODELET(c_loss_bwd, sf_loss_bwd_opencl);
OCL_CODELET(c_loss_wsum, sf_loss_wsum_opencl);
OCL_CODELET(c_dice, sf_dice_hard_partial_opencl);

static const enum starpu_data_access_mode R = STARPU_R, Wm = STARPU_W;

static double *dgarbage(size_t n)
{
  double *p = sf_malloc(n * sizeof(double), "test partials");
  for (size_t i = 0; i < n; i++) p[i] = 1e30 * (double)(i + 1);
  return p;
}

/* GroupNorm over slabs {3,2} of a (5,3,7,C=6) volume with G=3; relu on / off */
static void test_groupnorm(uint64_t *seed, int relu)
{
  enum { D = 5, H = 3, W = 7, C = 6, G = 3, S = 2 };
  const int depths[S] = {3, 2};
  int d0[S + 1];
  ocl_bounds(d0, S, depths);
  const size_t plane = (size_t)H * W, n = D * plane, ne = n * C, nb = 2 * G + 2 * C;
  const float eps = 1e-5f;
  char name[128];
  float *x = ocl_floats(ne, seed, -1, 3), *gamma = ocl_floats(C, seed, 0.5f, 1.5f), *beta = ocl_floats(C, seed, -1, 1);
  float *dy = ocl_floats(ne, seed, -1, 1);
  /* reference: per-slab stats, reduced; forward; per-slab backward sums, reduced; dx; dgamma/dbeta */
  double pst_ref[S][2 * G], stats[2 * G] = {0}, pbw_ref[S][2 * G + 2 * C], bsum_ref[2 * G + 2 * C];
  memset(pst_ref, 0, sizeof pst_ref);
  memset(pbw_ref, 0, sizeof pbw_ref);
  memset(bsum_ref, 0, sizeof bsum_ref);
  for (int k = 0; k < S; k++) {
    sf_groupnorm_stats_ref(pst_ref[k], x + d0[k] * plane * C, depths[k] * plane, C, G);
    for (int i = 0; i < 2 * G; i++) stats[i] += pst_ref[k][i];
  }
  float *yref = calloc(ne, 4), *dxref = calloc(ne, 4), dgref[C] = {0}, dbref[C] = {0};
  sf_groupnorm_forward_ref(yref, x, stats, gamma, beta, n, n, C, G, eps, relu);
  for (int k = 0; k < S; k++) {
    size_t o = d0[k] * plane * C;
    sf_groupnorm_backward_stats_ref(pbw_ref[k], pbw_ref[k] + 2 * G, dy + o, yref + o, x + o, stats, gamma,
                                    depths[k] * plane, n, C, G, eps, relu);
    for (size_t i = 0; i < nb; i++) bsum_ref[i] += pbw_ref[k][i];
  }
  sf_groupnorm_backward_data_ref(dxref, dy, yref, x, stats, bsum_ref, gamma, n, n, C, G, eps, relu);
  sf_groupnorm_param_grads(dgref, dbref, bsum_ref + 2 * G, C);

  /* OpenCL: the forward reads the CPU-reduced stats, the backward reads the CPU forward output */
  double *pst[S], *pbw[S], *bsum = dgarbage(nb);
  float *y = calloc(ne, 4), *dx = calloc(ne, 4), *dg = ocl_floats(C, seed, -9, 9), *db = ocl_floats(C, seed, -9, 9);
  starpu_data_handle_t hx[S], hy[S], hyr[S], hdy[S], hdx[S], hps[S], hpb[S];
  starpu_data_handle_t hst = ocl_vec(stats, 2 * G, 8), hg = ocl_vec(gamma, C, 4), hb = ocl_vec(beta, C, 4);
  starpu_data_handle_t hbsum = ocl_vec(bsum, nb, 8), hdg = ocl_vec(dg, C, 4), hdb = ocl_vec(db, C, 4);
  sf_groupnorm_args a = {n, C, G, relu, eps};
  for (int k = 0; k < S; k++) {
    size_t o = d0[k] * plane * C;
    pst[k] = dgarbage(2 * G);
    pbw[k] = dgarbage(nb);
    hx[k] = ocl_block(x + o, W * C, H, depths[k], 4);
    hy[k] = ocl_block(y + o, W * C, H, depths[k], 4);
    hyr[k] = ocl_block(yref + o, W * C, H, depths[k], 4);
    hdy[k] = ocl_block(dy + o, W * C, H, depths[k], 4);
    hdx[k] = ocl_block(dx + o, W * C, H, depths[k], 4);
    hps[k] = ocl_vec(pst[k], 2 * G, 8);
    hpb[k] = ocl_vec(pbw[k], nb, 8);
  }
  for (int k = 0; k < S; k++) {
    starpu_data_handle_t b0[2] = {hps[k], hx[k]}, b1[5] = {hy[k], hx[k], hst, hg, hb};
    starpu_data_handle_t b2[6] = {hpb[k], hdy[k], hyr[k], hx[k], hst, hg};
    enum starpu_data_access_mode m0[2] = {Wm, R}, m1[5] = {Wm, R, R, R, R}, m2[6] = {Wm, R, R, R, R, R};
    ocl_submit(&c_gn_stats, &a, sizeof a, 2, b0, m0);
    ocl_submit(&c_gn_fwd, &a, sizeof a, 5, b1, m1);
    ocl_submit(&c_gn_bwd_stats, &a, sizeof a, 6, b2, m2);
  }
  starpu_data_handle_t b4[3 + S] = {hbsum, hdg, hdb};
  enum starpu_data_access_mode m4[3 + S] = {Wm, Wm, Wm};
  for (int j = 0; j < S; j++) b4[3 + j] = hpb[j], m4[3 + j] = R;
  ocl_submit(&c_gn_bwd_reduce, &a, sizeof a, 3 + S, b4, m4);
  for (int k = 0; k < S; k++) {
    starpu_data_handle_t b5[7] = {hdx[k], hdy[k], hyr[k], hx[k], hst, hbsum, hg};
    enum starpu_data_access_mode m5[7] = {Wm, R, R, R, R, R, R};
    ocl_submit(&c_gn_bwd_data, &a, sizeof a, 7, b5, m5);
  }
  ocl_unregister(S, hx), ocl_unregister(S, hy), ocl_unregister(S, hyr), ocl_unregister(S, hdy);
  ocl_unregister(S, hdx), ocl_unregister(S, hps), ocl_unregister(S, hpb);
  starpu_data_handle_t hv[6] = {hst, hg, hb, hbsum, hdg, hdb};
  ocl_unregister(6, hv);
  for (int k = 0; k < S; k++) {
    snprintf(name, sizeof name, "groupnorm_stats slab %d", k);
    sf_check_close_d(name, pst[k], pst_ref[k], 2 * G, RTOL);
    snprintf(name, sizeof name, "groupnorm_bwd_stats slab %d (relu %d)", k, relu);
    sf_check_close_d(name, pbw[k], pbw_ref[k], nb, RTOL);
    free(pst[k]), free(pbw[k]);
  }
  snprintf(name, sizeof name, "groupnorm_fwd (relu %d)", relu);
  sf_check_close_f(name, y, yref, ne, RTOL);
  snprintf(name, sizeof name, "groupnorm_bwd_reduce sum (relu %d)", relu);
  sf_check_close_d(name, bsum, bsum_ref, nb, RTOL);
  snprintf(name, sizeof name, "groupnorm_bwd_reduce dgamma (relu %d)", relu);
  sf_check_close_f(name, dg, dgref, C, RTOL);
  snprintf(name, sizeof name, "groupnorm_bwd_reduce dbeta (relu %d)", relu);
  sf_check_close_f(name, db, dbref, C, RTOL);
  snprintf(name, sizeof name, "groupnorm_bwd_data (relu %d)", relu);
  sf_check_close_f(name, dx, dxref, ne, RTOL);
  free(x), free(gamma), free(beta), free(dy), free(yref), free(dxref), free(bsum), free(y), free(dx), free(dg), free(db);
}

static void test_relu(uint64_t *seed)
{
  enum { N = 1001 };
  float *x = ocl_floats(N, seed, -1, 1), *dy = ocl_floats(N, seed, -1, 1), y[N], dx[N], yref[N], dxref[N];
  x[5] = NAN;
  sf_relu_forward(yref, x, N);
  sf_relu_backward(dxref, dy, yref, N);
  starpu_data_handle_t hx = ocl_vec(x, N, 4), hy = ocl_block(y, 11, 7, 13, 4), hdy = ocl_vec(dy, N, 4);
  starpu_data_handle_t hdx = ocl_vec(dx, N, 4);
  starpu_data_handle_t b0[2] = {hy, hx}, b1[3] = {hdx, hdy, hy};
  enum starpu_data_access_mode m0[2] = {Wm, R}, m1[3] = {Wm, R, R};
  ocl_submit(&c_relu_fwd, NULL, 0, 2, b0, m0);
  ocl_submit(&c_relu_bwd, NULL, 0, 3, b1, m1);
  starpu_data_handle_t all[4] = {hx, hy, hdy, hdx};
  ocl_unregister(4, all);
  sf_check_close_f("relu_fwd (block out, vector in, a NaN)", y, yref, N, 0.0);
  sf_check_close_f("relu_bwd", dx, dxref, N, 0.0);
  free(x), free(dy);
}

/* MaxPool on coarse slabs {2,1} of (3,3,5,C=3), values quantized to 0.25 (ties) and one NaN; the
 * backward adds a skip gradient on slab 0 only */
static void test_maxpool(uint64_t *seed)
{
  enum { D = 3, H = 3, W = 5, C = 3, S = 2 };
  const int depths[S] = {2, 1};
  int d0[S + 1];
  ocl_bounds(d0, S, depths);
  const size_t pc = (size_t)H * W * C, pf = 4 * pc, nc = D * pc, nf = 8 * nc;
  float *x = sf_malloc(nf * 4, "x"), *dy = ocl_floats(nc, seed, -1, 1), *add = ocl_floats(nf, seed, -1, 1);
  ocl_fill(x, nf, seed, -1, 1, 0.25f);
  x[17] = NAN;
  float *yref = calloc(nc, 4), *dxref = calloc(nf, 4), *y = calloc(nc, 4), *dx = calloc(nf, 4);
  uint8_t *iref = calloc(nc, 1), *idx = calloc(nc, 1);
  sf_maxpool3d_forward_ref(yref, iref, x, D, H, W, C);
  sf_maxpool3d_backward_ref(dxref, dy, iref, D, H, W, C);
  for (size_t i = 0; i < 2 * depths[0] * pf; i++) dxref[i] += add[i];
  starpu_data_handle_t hs[6 * S];
  for (int k = 0; k < S; k++) {
    size_t oc = d0[k] * pc, of = 2 * d0[k] * pf;
    starpu_data_handle_t hx = hs[6 * k] = ocl_block(x + of, 2 * W * C, 2 * H, 2 * depths[k], 4);
    starpu_data_handle_t hy = hs[6 * k + 1] = ocl_block(y + oc, W * C, H, depths[k], 4);
    starpu_data_handle_t hi = hs[6 * k + 2] = ocl_block(idx + oc, W * C, H, depths[k], 1);
    starpu_data_handle_t hdy = hs[6 * k + 3] = ocl_block(dy + oc, W * C, H, depths[k], 4);
    starpu_data_handle_t hdx = hs[6 * k + 4] = ocl_block(dx + of, 2 * W * C, 2 * H, 2 * depths[k], 4);
    starpu_data_handle_t ha = hs[6 * k + 5] = ocl_block(add + of, 2 * W * C, 2 * H, 2 * depths[k], 4);
    sf_maxpool3d_args a = {C, k == 0};
    starpu_data_handle_t b0[3] = {hy, hi, hx}, b1[4] = {hdx, hdy, hi, ha};
    enum starpu_data_access_mode m0[3] = {Wm, Wm, R}, m1[4] = {Wm, R, R, R};
    ocl_submit(&c_pool_fwd, &a, sizeof a, 3, b0, m0);
    ocl_submit(&c_pool_bwd, &a, sizeof a, k == 0 ? 4 : 3, b1, m1);
  }
  ocl_unregister(6 * S, hs);
  sf_check_close_f("maxpool3d_fwd y (ties, NaN)", y, yref, nc, 0.0);
  int idx_diff = 0;
  for (size_t i = 0; i < nc; i++) idx_diff += idx[i] != iref[i];
  SF_CHECK(idx_diff == 0, "maxpool3d_fwd argmax differs at %d of %zu positions", idx_diff, nc);
  { /* the NaN at fine element 17 must win its window */
    size_t c = 17 % C, v = 17 / C, X = v % (2 * W), Y = (v / (2 * W)) % (2 * H), Z = v / (2 * W) / (2 * H);
    size_t o = (((Z / 2) * H + Y / 2) * W + X / 2) * C + c;
    SF_CHECK(isnan(y[o]) && isnan(yref[o]), "maxpool3d_fwd: NaN did not propagate to y[%zu] (got %g, ref %g)", o,
             y[o], yref[o]);
  }
  sf_check_close_f("maxpool3d_bwd (+ skip gradient on slab 0)", dx, dxref, nf, 0.0);
  free(x), free(dy), free(add), free(yref), free(dxref), free(y), free(dx), free(iref), free(idx);
}

static void test_concat(uint64_t *seed)
{
  enum { D = 3, H = 2, W = 5, Ca = 3, Cb = 2, S = 2 };
  const int depths[S] = {1, 2};
  int d0[S + 1];
  ocl_bounds(d0, S, depths);
  const size_t plane = (size_t)H * W, n = D * plane, C = Ca + Cb;
  float *a = ocl_floats(n * Ca, seed, -1, 1), *b = ocl_floats(n * Cb, seed, -1, 1), *dy = ocl_floats(n * C, seed, -1, 1);
  float *yref = calloc(n * C, 4), *daref = calloc(n * Ca, 4), *dbref = calloc(n * Cb, 4);
  float *y = calloc(n * C, 4), *da = calloc(n * Ca, 4), *db = calloc(n * Cb, 4);
  sf_concat_forward(yref, a, b, n, Ca, Cb);
  sf_concat_backward(daref, dbref, dy, n, Ca, Cb);
  starpu_data_handle_t hs[6 * S];
  for (int k = 0; k < S; k++) {
    size_t o = d0[k] * plane;
    hs[6 * k] = ocl_block(y + o * C, W * C, H, depths[k], 4);
    hs[6 * k + 1] = ocl_block(a + o * Ca, W * Ca, H, depths[k], 4);
    hs[6 * k + 2] = ocl_block(b + o * Cb, W * Cb, H, depths[k], 4);
    hs[6 * k + 3] = ocl_block(da + o * Ca, W * Ca, H, depths[k], 4);
    hs[6 * k + 4] = ocl_block(db + o * Cb, W * Cb, H, depths[k], 4);
    hs[6 * k + 5] = ocl_block(dy + o * C, W * C, H, depths[k], 4);
    sf_concat_args args = {Ca, Cb};
    starpu_data_handle_t b0[3] = {hs[6 * k], hs[6 * k + 1], hs[6 * k + 2]};
    starpu_data_handle_t b1[3] = {hs[6 * k + 3], hs[6 * k + 4], hs[6 * k + 5]};
    enum starpu_data_access_mode m0[3] = {Wm, R, R}, m1[3] = {Wm, Wm, R};
    ocl_submit(&c_cat_fwd, &args, sizeof args, 3, b0, m0);
    ocl_submit(&c_cat_bwd, &args, sizeof args, 3, b1, m1);
  }
  ocl_unregister(6 * S, hs);
  sf_check_close_f("concat_fwd", y, yref, n * C, 0.0);
  sf_check_close_f("concat_bwd da", da, daref, n * Ca, 0.0);
  sf_check_close_f("concat_bwd db", db, dbref, n * Cb, 0.0);
  free(a), free(b), free(dy), free(yref), free(daref), free(dbref), free(y), free(da), free(db);
}

/* loss partial + backward and hard Dice over slabs {2,3} of (5,3,5) voxels, K = 4 classes */
static void test_loss_dice(uint64_t *seed)
{
  enum { D = 5, H = 3, W = 5, K = 4, S = 2, NA = 2 + 3 * K };
  const int depths[S] = {2, 3};
  int d0[S + 1];
  ocl_bounds(d0, S, depths);
  const size_t plane = (size_t)H * W, n = D * plane;
  const float scale = 0.5f;
  float *z = sf_malloc(n * K * 4, "z"), *cw = ocl_floats(K, seed, 0.5f, 2);
  ocl_fill(z, n * K, seed, -3, 3, 0.5f); /* quantized: argmax ties */
  uint16_t *lab = sf_malloc(n * 2, "labels");
  for (size_t i = 0; i < n; i++) lab[i] = (uint16_t)((i * 7 + i / 5) % K);
  double pref[S][NA], acc[NA] = {0}, dref[S][3 * K];
  memset(pref, 0, sizeof pref);
  memset(dref, 0, sizeof dref);
  for (int k = 0; k < S; k++) {
    size_t o = d0[k] * plane;
    sf_loss_partial_ref(pref[k], z + o * K, lab + o, cw, depths[k] * plane, K);
    sf_dice_hard_partial_ref(dref[k], z + o * K, lab + o, depths[k] * plane, K);
    for (int i = 0; i < NA; i++) acc[i] += pref[k][i];
  }
  float *dzref = calloc(n * K, 4), *dz = calloc(n * K, 4);
  sf_loss_backward_ref(dzref, z, lab, cw, acc, n, K, scale);
  double *part[S], *dpart[S];
  starpu_data_handle_t hs[5 * S], hcw = ocl_vec(cw, K, 4), hacc = ocl_vec(acc, NA, 8);
  for (int k = 0; k < S; k++) {
    size_t o = d0[k] * plane;
    part[k] = dgarbage(NA);
    dpart[k] = dgarbage(3 * K);
    starpu_data_handle_t hz = hs[5 * k] = ocl_block(z + o * K, W * K, H, depths[k], 4);
    starpu_data_handle_t hl = hs[5 * k + 1] = ocl_block(lab + o, W, H, depths[k], 2);
    starpu_data_handle_t hp = hs[5 * k + 2] = ocl_vec(part[k], NA, 8);
    starpu_data_handle_t hd = hs[5 * k + 3] = ocl_vec(dpart[k], 3 * K, 8);
    starpu_data_handle_t hdz = hs[5 * k + 4] = ocl_block(dz + o * K, W * K, H, depths[k], 4);
    sf_loss_args la = {K, scale, 1, 0};
    sf_dice_args da = {K};
    starpu_data_handle_t b0[4] = {hp, hz, hl, hcw}, b1[5] = {hdz, hz, hl, hcw, hacc}, b2[3] = {hd, hz, hl};
    enum starpu_data_access_mode m0[4] = {Wm, R, R, R}, m1[5] = {Wm, R, R, R, R}, m2[3] = {Wm, R, R};
    ocl_submit(&c_loss, &la, sizeof la, 4, b0, m0);
    ocl_submit(&c_loss_bwd, &la, sizeof la, 5, b1, m1);
    ocl_submit(&c_dice, &da, sizeof da, 3, b2, m2);
  }
  ocl_unregister(5 * S, hs);
  starpu_data_handle_t hv[2] = {hcw, hacc};
  ocl_unregister(2, hv);
  char name[96];
  for (int k = 0; k < S; k++) {
    snprintf(name, sizeof name, "loss_partial slab %d", k);
    sf_check_close_d(name, part[k], pref[k], NA, RTOL);
    snprintf(name, sizeof name, "dice_hard_partial slab %d (argmax ties)", k);
    sf_check_close_d(name, dpart[k], dref[k], 3 * K, 0.0);
    free(part[k]), free(dpart[k]);
  }
  sf_check_close_f("loss_bwd (scale 0.5)", dz, dzref, n * K, RTOL);
  free(z), free(cw), free(lab), free(dzref), free(dz);
}

/* A batch's pooled CE weight sum over two label slabs (written, then added to: exactly the CPU's
 * sums) and the batch loss backward of one sample with it (batch 3) */
static void test_loss_batch(uint64_t *seed)
{
  enum { D = 4, H = 3, W = 5, K = 3, NA = 2 + 3 * K, B = 3 };
  const size_t n = (size_t)D * H * W;
  float *z = ocl_floats(n * K, seed, -3, 3), *cw = ocl_floats(K, seed, 0.5f, 50);
  uint16_t *lab = sf_malloc(n * 2, "labels");
  for (size_t i = 0; i < n; i++) lab[i] = (uint16_t)((i * 5 + i / 7) % K);
  double acc[NA] = {0}, want = 0, wsum = 1e30;
  sf_loss_partial_ref(acc, z, lab, cw, n, K);
  sf_loss_weight_sum_ref(&want, lab, cw, n, K);     /* the first "sample": the whole volume */
  sf_loss_weight_sum_ref(&want, lab, cw, n / 2, K); /* the second: its first half */
  double wref = 1.5 * acc[1];                       /* a pooled sum larger than the sample's own */
  float *dzref = calloc(n * K, 4), *dz = calloc(n * K, 4);
  sf_loss_backward_batch_ref(dzref, z, lab, cw, acc, wref, B, n, K, 1.0f);
  starpu_data_handle_t hw = ocl_vec(&wsum, 1, 8), hcw = ocl_vec(cw, K, 4), hl = ocl_block(lab, W, H, D, 2);
  starpu_data_handle_t hl2 = ocl_block(lab, W, H, D / 2, 2);
  sf_loss_args wa = {K, 1.0f, 1, 0}, wadd = {K, 1.0f, 1, 1};
  starpu_data_handle_t b0[3] = {hw, hl, hcw}, b1[3] = {hw, hl2, hcw};
  enum starpu_data_access_mode m0[3] = {Wm, R, R}, m1[3] = {STARPU_RW, R, R};
  ocl_submit(&c_loss_wsum, &wa, sizeof wa, 3, b0, m0);
  ocl_submit(&c_loss_wsum, &wadd, sizeof wadd, 3, b1, m1);
  starpu_data_handle_t hv[4] = {hw, hcw, hl, hl2};
  ocl_unregister(4, hv);
  sf_check_close_d("loss_wsum (written, then added to)", &wsum, &want, 1, 0.0);
  wsum = wref;
  hw = ocl_vec(&wsum, 1, 8);
  hcw = ocl_vec(cw, K, 4);
  hl = ocl_block(lab, W, H, D, 2);
  starpu_data_handle_t hz = ocl_block(z, W * K, H, D, 4), hdz = ocl_block(dz, W * K, H, D, 4), hacc = ocl_vec(acc, NA, 8);
  sf_loss_args ba = {K, 1.0f, B, 0};
  starpu_data_handle_t b2[6] = {hdz, hz, hl, hcw, hacc, hw};
  enum starpu_data_access_mode m2[6] = {Wm, R, R, R, R, R};
  ocl_submit(&c_loss_bwd, &ba, sizeof ba, 6, b2, m2);
  starpu_data_handle_t hv2[6] = {hdz, hz, hl, hcw, hacc, hw};
  ocl_unregister(6, hv2);
  sf_check_close_f("loss_bwd of a batch of 3 (pooled weight sum)", dz, dzref, n * K, RTOL);
  free(z), free(cw), free(lab), free(dzref), free(dz);
}

int main(void)
{
  int rc = ocl_begin("ocl_norm");
  if (rc) return rc;
  uint64_t seed = 777;
  double t0 = sf_now();
  test_groupnorm(&seed, 1);
  test_groupnorm(&seed, 0);
  test_relu(&seed);
  test_maxpool(&seed);
  test_concat(&seed);
  test_loss_dice(&seed);
  test_loss_batch(&seed);
  printf("tasks ran in %.2f s\n", sf_now() - t0);
  ocl_end();
  return sf_test_end();
}
