/* OpenCL optimizer, reduction and sample-loading launchers against the CPU code: gradient sum of
 * squares (odd length), clip coefficient from partials in order (clipping and not), three Adam steps
 * with and without the clip coefficient, three SGD and RMSprop steps (same), fixed-order float / double sums, zero fill, and sample_load
 * into a float slab, a uint16 label slab and a vector. Run as StarPU tasks on the OpenCL worker.
 * Then a second StarPU session in the same process (kernels rebuilt for the new OpenCL context).
 * 1e-5 relative (the optimizer and copies are expected to match exactly). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_testutil.h"
#include "scaffold/common.h"
#include "scaffold/ops.h"

#define RTOL 1e-5

OCL_CODELET(c_sumsq, sf_sumsq_opencl);
OCL_CODELET(c_clip, sf_clip_coef_opencl);
OCL_CODELET(c_adam, sf_adam_opencl);
OCL_CODELET(c_sgd, sf_sgd_opencl);
OCL_CODELET(c_rmsprop, sf_rmsprop_opencl);
OCL_CODELET(c_sum_f, sf_sum_f_opencl);
OCL_CODELET(c_sum_d, sf_sum_d_opencl);
OCL_CODELET(c_zero, sf_zero_opencl);
OCL_CODELET(c_sample, sf_sample_load_opencl);

static const enum starpu_data_access_mode R = STARPU_R, Wm = STARPU_W, RW = STARPU_RW;

/* sumsq of P gradient tensors, then clip from the partials; max_norm below / above the norm */
static void test_sumsq_clip(uint64_t *seed, float max_norm, const char *tag)
{
  enum { P = 3 };
  const size_t len[P] = {1003, 8, 5};
  float *g[P];
  double part[P], part_ref[P], clip[2] = {-7, -7}, total = 0;
  starpu_data_handle_t hg[P], hp[P], hc = ocl_vec(clip, 2, 8);
  for (int p = 0; p < P; p++) {
    g[p] = ocl_floats(len[p], seed, -1, 1);
    part[p] = 1e300;
    part_ref[p] = 0;
    sf_sumsq_partial(&part_ref[p], g[p], len[p]);
    total += part_ref[p];
    hg[p] = ocl_vec(g[p], len[p], 4);
    hp[p] = ocl_vec(&part[p], 1, 8);
    starpu_data_handle_t b[2] = {hp[p], hg[p]};
    enum starpu_data_access_mode m[2] = {Wm, R};
    ocl_submit(&c_sumsq, NULL, 0, 2, b, m);
  }
  sf_clip_args ca = {max_norm};
  starpu_data_handle_t b[1 + P] = {hc};
  enum starpu_data_access_mode m[1 + P] = {Wm};
  for (int p = 0; p < P; p++) b[1 + p] = hp[p], m[1 + p] = R;
  ocl_submit(&c_clip, &ca, sizeof ca, 1 + P, b, m);
  ocl_unregister(P, hg);
  ocl_unregister(P, hp);
  ocl_unregister(1, &hc);
  double clip_ref[2] = {sf_clip_coef(total, max_norm), sqrt(total)};
  char name[96];
  snprintf(name, sizeof name, "sumsq partials (lengths 1003, 8, 5)");
  sf_check_close_d(name, part, part_ref, P, RTOL);
  snprintf(name, sizeof name, "clip_coef [coef, norm] (%s)", tag);
  sf_check_close_d(name, clip, clip_ref, 2, RTOL);
  for (int p = 0; p < P; p++) free(g[p]);
}

/* three Adam steps on n = 1001 elements, the gradient scaled by clip[0] or not */
static void test_adam(uint64_t *seed, int with_clip)
{
  enum { N = 1001 };
  float *w = ocl_floats(N, seed, -1, 1), *m = calloc(N, 4), *v = calloc(N, 4), *g = ocl_floats(N, seed, -1, 1);
  float *wr = ocl_copy(w, N), *mr = calloc(N, 4), *vr = calloc(N, 4);
  double clip[2] = {0.37, 2.7};
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  starpu_data_handle_t h[5] = {ocl_vec(w, N, 4), ocl_vec(m, N, 4), ocl_vec(v, N, 4), ocl_vec(g, N, 4),
                               ocl_vec(clip, 2, 8)};
  enum starpu_data_access_mode md[5] = {RW, RW, RW, R, R};
  for (long step = 1; step <= 3; step++) {
    sf_adam_args a = {lr, b1, b2, eps, step, with_clip};
    ocl_submit(&c_adam, &a, sizeof a, with_clip ? 5 : 4, h, md);
    sf_adam_step(wr, mr, vr, g, N, lr, b1, b2, eps, step, with_clip ? (float)clip[0] : 1.0f);
  }
  ocl_unregister(5, h);
  sf_check_close_f(with_clip ? "adam w, 3 steps, clipped" : "adam w, 3 steps", w, wr, N, RTOL);
  sf_check_close_f(with_clip ? "adam m, clipped" : "adam m", m, mr, N, RTOL);
  sf_check_close_f(with_clip ? "adam v, clipped" : "adam v", v, vr, N, RTOL);
  free(w), free(m), free(v), free(g), free(wr), free(mr), free(vr);
}

/* three SGD and three RMSprop steps on n = 1001 elements, the gradient scaled by clip[0] or not */
static void test_sgd_rmsprop(uint64_t *seed, int with_clip)
{
  enum { N = 1001 };
  float *w = ocl_floats(N, seed, -1, 1), *g = ocl_floats(N, seed, -1, 1), *w2 = ocl_copy(w, N), *sq = calloc(N, 4);
  float *wr = ocl_copy(w, N), *w2r = ocl_copy(w, N), *sqr = calloc(N, 4);
  double clip[2] = {0.37, 2.7};
  const double lr = 1e-3, alpha = 0.99, eps = 1e-8;
  const float scale = with_clip ? (float)clip[0] : 1.0f;
  starpu_data_handle_t hc = ocl_vec(clip, 2, 8), hg = ocl_vec(g, N, 4);
  starpu_data_handle_t hs[3] = {ocl_vec(w, N, 4), hg, hc}, hr[4] = {ocl_vec(w2, N, 4), ocl_vec(sq, N, 4), hg, hc};
  enum starpu_data_access_mode ms[3] = {RW, R, R}, mr[4] = {RW, RW, R, R};
  for (int step = 1; step <= 3; step++) {
    sf_sgd_args sa = {lr * step, with_clip};
    sf_rmsprop_args ra = {lr * step, alpha, eps, with_clip};
    ocl_submit(&c_sgd, &sa, sizeof sa, with_clip ? 3 : 2, hs, ms);
    ocl_submit(&c_rmsprop, &ra, sizeof ra, with_clip ? 4 : 3, hr, mr);
    sf_sgd_step(wr, g, N, lr * step, scale);
    sf_rmsprop_step(w2r, sqr, g, N, lr * step, alpha, eps, scale);
  }
  ocl_unregister(1, &hs[0]);
  ocl_unregister(2, hr);
  ocl_unregister(1, &hg);
  ocl_unregister(1, &hc);
  sf_check_close_f(with_clip ? "sgd w, 3 steps, clipped" : "sgd w, 3 steps", w, wr, N, RTOL);
  sf_check_close_f(with_clip ? "rmsprop w, 3 steps, clipped" : "rmsprop w, 3 steps", w2, w2r, N, RTOL);
  sf_check_close_f(with_clip ? "rmsprop square_avg, clipped" : "rmsprop square_avg", sq, sqr, N, RTOL);
  free(w), free(g), free(w2), free(sq), free(wr), free(w2r), free(sqr);
}

/* out = p0 + p1 + p2 (float and double), then zero fills */
static void test_reduce(uint64_t *seed)
{
  enum { N = 517, P = 3 };
  float *pf[P], outf[N], reff[N];
  double *pd[P], outd[N], refd[N];
  starpu_data_handle_t hf[1 + P], hd[1 + P];
  enum starpu_data_access_mode m[1 + P] = {Wm, R, R, R};
  for (int p = 0; p < P; p++) {
    pf[p] = ocl_floats(N, seed, -1, 1);
    pd[p] = sf_malloc(N * 8, "parts");
    for (int i = 0; i < N; i++) pd[p][i] = (double)pf[p][i] * 1.000000123 + 1e-9 * i;
    hf[1 + p] = ocl_vec(pf[p], N, 4);
    hd[1 + p] = ocl_vec(pd[p], N, 8);
  }
  for (int i = 0; i < N; i++) {
    reff[i] = pf[0][i];
    refd[i] = pd[0][i];
    for (int p = 1; p < P; p++) reff[i] += pf[p][i], refd[i] += pd[p][i];
    outf[i] = NAN, outd[i] = NAN;
  }
  hf[0] = ocl_vec(outf, N, 4);
  hd[0] = ocl_vec(outd, N, 8);
  ocl_submit(&c_sum_f, NULL, 0, 1 + P, hf, m);
  ocl_submit(&c_sum_d, NULL, 0, 1 + P, hd, m);
  ocl_unregister(1 + P, hf);
  ocl_unregister(1 + P, hd);
  sf_check_close_f("sum_f of 3 parts", outf, reff, N, 0.0);
  sf_check_close_d("sum_d of 3 parts", outd, refd, N, 0.0);
  /* zero: float and double vectors (one at an odd length) */
  float zf[N], zref[N] = {0};
  double zd[7], zdref[7] = {0};
  for (int i = 0; i < N; i++) zf[i] = 1.0f + i;
  for (int i = 0; i < 7; i++) zd[i] = -1.0 - i;
  starpu_data_handle_t hz[2] = {ocl_vec(zf, N, 4), ocl_vec(zd, 7, 8)};
  ocl_submit(&c_zero, NULL, 0, 1, &hz[0], &Wm);
  ocl_submit(&c_zero, NULL, 0, 1, &hz[1], &Wm);
  ocl_unregister(2, hz);
  sf_check_close_f("zero float vector", zf, zref, N, 0.0);
  sf_check_close_d("zero double vector", zd, zdref, 7, 0.0);
  for (int p = 0; p < P; p++) free(pf[p]), free(pd[p]);
}

/* sample_load into a float slab, a uint16 label slab and a vector; the copies reach the host */
static void test_sample_load(uint64_t *seed)
{
  enum { D = 3, H = 5, W = 7, C = 2 };
  const size_t nf = (size_t)D * H * W * C, nl = (size_t)D * H * W;
  float *src = ocl_floats(nf, seed, -1, 1), *dst = calloc(nf, 4), *vsrc = ocl_floats(11, seed, 0, 1), vdst[11] = {0};
  uint16_t *lsrc = sf_malloc(nl * 2, "labels"), *ldst = calloc(nl, 2);
  for (size_t i = 0; i < nl; i++) lsrc[i] = (uint16_t)(i * 31 % 65521);
  starpu_data_handle_t h[3] = {ocl_block(dst, W * C, H, D, 4), ocl_block(ldst, W, H, D, 2), ocl_vec(vdst, 11, 4)};
  sf_sample_args a0 = {src, nf * 4, 1}, a1 = {lsrc, nl * 2, 1}, a2 = {vsrc, 11 * 4, 0};
  ocl_submit(&c_sample, &a0, sizeof a0, 1, &h[0], &Wm);
  ocl_submit(&c_sample, &a1, sizeof a1, 1, &h[1], &Wm);
  ocl_submit(&c_sample, &a2, sizeof a2, 1, &h[2], &Wm);
  ocl_unregister(3, h);
  sf_check_close_f("sample_load float slab", dst, src, nf, 0.0);
  SF_CHECK(memcmp(ldst, lsrc, nl * 2) == 0, "sample_load uint16 label slab differs from the source");
  sf_check_close_f("sample_load vector", vdst, vsrc, 11, 0.0);
  free(src), free(dst), free(vsrc), free(lsrc), free(ldst);
}

int main(void)
{
  int rc = ocl_begin("ocl_optim");
  if (rc) return rc;
  uint64_t seed = 4242;
  double t0 = sf_now();
  test_sumsq_clip(&seed, 1.0f, "norm above max_norm: clipping");
  test_sumsq_clip(&seed, 1e3f, "norm below max_norm: coefficient 1");
  test_adam(&seed, 0);
  test_adam(&seed, 1);
  test_sgd_rmsprop(&seed, 0);
  test_sgd_rmsprop(&seed, 1);
  test_reduce(&seed);
  test_sample_load(&seed);
  printf("tasks ran in %.2f s\n", sf_now() - t0);
  ocl_end();
  /* a second StarPU session in the same process: the kernels are rebuilt for the new context */
  rc = ocl_begin("ocl_optim2");
  if (rc) return rc;
  test_reduce(&seed);
  ocl_end();
  return sf_test_end();
}
