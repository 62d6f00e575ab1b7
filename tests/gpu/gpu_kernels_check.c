/* GPU kernel check: runs every launcher of include/scaffold/ops_cuda.h on random inputs of odd shapes
 * (partial slabs with and without halo planes, channel counts that do and do not allow vector loads)
 * and compares with the CPU reference of ops.h (_ref and the plain kernels, library sf_kernels).
 * Error = max |gpu - cpu| / max |cpu| (NaN must match NaN); limits 1e-4 for fp32, 2e-2 for bf16 and
 * tf32 (fp32 data with TF32 tensor-core math), tighter where the GPU computes in double.
 * One line per check; exit 1 on any failure, 77 ("SKIPPED: no CUDA device") without a device.
 *   gpu_kernels_check            the check
 *   gpu_kernels_check --bench [SECONDS]
 *                                conv3d fwd/dX/dW TFLOP/s at ScaFFold base-64 shapes, fp32, tf32 and
 *                                bf16, cuBLAS (im2col + GEMM) and cuDNN when built with it, then a
 *                                cuBLAS-vs-cuDNN summary; stops starting new shapes after SECONDS
 *                                (default 150)
 * The launchers of step_glue.cu (fixed-order sums, add, clip, Adam with a device coefficient) are
 * checked bitwise against the CPU order where the StarPU codelets need it.
 * The same source builds gpu_kernels_emu against tests/gpu/emu (CUDA emulated on the CPU), where it
 * runs in CI with small blocks and chunk budgets (see cmake/Cuda.cmake). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scaffold/ops.h"
#include "scaffold/ops_cuda.h"

#define TOL_FP32 1e-4
#define TOL_BF16 2e-2

static int g_fail, g_checks;
static cudaStream_t g_s;
static cublasHandle_t g_h;

/* ---- plumbing ------------------------------------------------------------------------------------ */

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void cuda_ok(cudaError_t e, const char *what, int line)
{
  if (e != cudaSuccess) {
    fprintf(stderr, "gpu_kernels_check.c:%d: %s: %s\n", line, what, cudaGetErrorString(e));
    exit(1);
  }
}
#define CK(call) cuda_ok((call), #call, __LINE__)

static void *xmalloc(size_t b)
{
  void *p = malloc(b ? b : 1);
  if (!p) {
    fprintf(stderr, "gpu_kernels_check: out of host memory (%zu bytes)\n", b);
    exit(1);
  }
  return p;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void) /* [0,1) */
{
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}
static float *hrand(size_t n, float lo, float hi)
{
  float *p = xmalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)urand();
  return p;
}
/* values on a coarse grid so that ties occur (max-pool, argmax) */
static float *hgrid(size_t n, int levels)
{
  float *p = xmalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) p[i] = (float)((int)(urand() * levels) - levels / 2) * 0.25f;
  return p;
}

static void *dup_dev(const void *h, size_t bytes)
{
  void *d = NULL;
  CK(cudaMalloc(&d, bytes ? bytes : 1));
  if (bytes) CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  return d;
}
static float *dupf(const float *h, size_t n) { return dup_dev(h, n * sizeof(float)); }
static double *dupd(const double *h, size_t n) { return dup_dev(h, n * sizeof(double)); }
static void *dev_garbage(size_t bytes) /* activation outputs are WRITTEN: start from garbage */
{
  void *d = NULL;
  CK(cudaMalloc(&d, bytes ? bytes : 1));
  CK(cudaMemset(d, 0x7f, bytes ? bytes : 1));
  return d;
}
static void back(void *h, const void *d, size_t bytes)
{
  CK(cudaStreamSynchronize(g_s));
  CK(cudaGetLastError());
  if (bytes) CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}
static float *backf(const float *d, size_t n)
{
  float *h = xmalloc(n * sizeof(float));
  back(h, d, n * sizeof(float));
  return h;
}
static double *backd(const double *d, size_t n)
{
  double *h = xmalloc(n * sizeof(double));
  back(h, d, n * sizeof(double));
  return h;
}

static double err_f(const float *got, const float *want, size_t n, size_t *wi)
{
  double scale = 1e-30, e = 0;
  *wi = 0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)want[i]);
    if (isnan(got[i]) != isnan(want[i])) d = INFINITY;
    if (d > e) e = d, *wi = i;
  }
  return e / scale;
}
static double err_d(const double *got, const double *want, size_t n, size_t *wi)
{
  double scale = 1e-300, e = 0;
  *wi = 0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < n; i++) {
    double d = fabs(got[i] - want[i]);
    if (isnan(got[i]) != isnan(want[i])) d = INFINITY;
    if (d > e) e = d, *wi = i;
  }
  return e / scale;
}

static void report(const char *op, const char *variant, const char *shape, double e, double tol, size_t wi,
                   double got, double want)
{
  int ok = e <= tol;
  g_checks++;
  if (!ok) g_fail++;
  printf("%-24s %-12s %-30s err %.2e  tol %.0e  %s", op, variant, shape, e, tol, ok ? "ok" : "FAIL");
  if (!ok) printf("  (worst [%zu]: gpu %.9g cpu %.9g)", wi, got, want);
  printf("\n");
}
static void cmp_f(const char *op, const char *variant, const char *shape, const float *dgot, const float *want,
                  size_t n, double tol)
{
  float *got = backf(dgot, n);
  size_t wi;
  double e = err_f(got, want, n, &wi);
  report(op, variant, shape, e, tol, wi, n ? got[wi] : 0, n ? want[wi] : 0);
  free(got);
}
static void cmp_d(const char *op, const char *variant, const char *shape, const double *dgot, const double *want,
                  size_t n, double tol)
{
  double *got = backd(dgot, n);
  size_t wi;
  double e = err_d(got, want, n, &wi);
  report(op, variant, shape, e, tol, wi, n ? got[wi] : 0, n ? want[wi] : 0);
  free(got);
}

static const char *prec_name(unsigned flags)
{
  return flags & SF_GPU_BF16 ? "bf16" : flags & SF_GPU_TF32 ? "tf32" : "fp32";
}
static double prec_tol(unsigned flags) { return flags & (SF_GPU_BF16 | SF_GPU_TF32) ? TOL_BF16 : TOL_FP32; }

/* ---- 3x3x3 convolution ------------------------------------------------------------------------ */

/* A volume of D planes; the slab is planes [d0, d0+nd), halos where they exist. */
static void check_conv3d(int D, int d0, int nd, int H, int W, int Cin, int Cout, unsigned flags)
{
  const size_t pin = (size_t)H * W * Cin, pout = (size_t)H * W * Cout, nw = (size_t)27 * Cin * Cout;
  const int has_lo = d0 > 0, has_hi = d0 + nd < D;
  char shape[64], var[32];
  snprintf(shape, sizeof shape, "D%d[%d,%d) %dx%d %d->%d%s%s", D, d0, d0 + nd, H, W, Cin, Cout, has_lo ? " lo" : "",
           has_hi ? " hi" : "");
  snprintf(var, sizeof var, "%s %s", prec_name(flags), flags & SF_GPU_CUDNN ? "cudnn" : "cublas");
  const double tol = prec_tol(flags);
  float *x = hrand((size_t)D * pin, -1, 1), *gy = hrand((size_t)D * pout, -1, 1), *w = hrand(nw, -0.5f, 0.5f);
  float *dw0 = hrand(nw, -1, 1);
  float *dx_ = dupf(x, (size_t)D * pin), *dgy = dupf(gy, (size_t)D * pout), *dw = dupf(w, nw);
  const float *xs = x + d0 * pin, *xlo = has_lo ? xs - pin : NULL, *xhi = has_hi ? xs + nd * pin : NULL;
  const float *gs = gy + d0 * pout, *glo = has_lo ? gs - pout : NULL, *ghi = has_hi ? gs + nd * pout : NULL;
  const float *dxs = dx_ + d0 * pin, *dxlo = has_lo ? dxs - pin : NULL, *dxhi = has_hi ? dxs + nd * pin : NULL;
  const float *dgs = dgy + d0 * pout, *dglo = has_lo ? dgs - pout : NULL, *dghi = has_hi ? dgs + nd * pout : NULL;

  float *want = xmalloc((size_t)nd * (pin > pout ? pin : pout) * sizeof(float) + nw * sizeof(float));
  float *dout = dev_garbage((size_t)nd * (pin > pout ? pin : pout) * sizeof(float));

  sf_conv3d_forward_ref(want, xlo, xs, xhi, w, nd, H, W, Cin, Cout);
  sf_cuda_conv3d_forward(g_s, g_h, flags, dout, dxlo, dxs, dxhi, dw, nd, H, W, Cin, Cout);
  cmp_f("conv3d_forward", var, shape, dout, want, (size_t)nd * pout, tol);

  sf_conv3d_backward_data_ref(want, glo, gs, ghi, w, nd, H, W, Cin, Cout);
  sf_cuda_conv3d_backward_data(g_s, g_h, flags, dout, dglo, dgs, dghi, dw, nd, H, W, Cin, Cout);
  cmp_f("conv3d_backward_data", var, shape, dout, want, (size_t)nd * pin, tol);

  memcpy(want, dw0, nw * sizeof(float)); /* accumulate onto non-zero dW */
  float *ddw = dupf(dw0, nw);
  sf_conv3d_backward_weights_ref(want, xlo, xs, xhi, gs, nd, H, W, Cin, Cout);
  sf_cuda_conv3d_backward_weights(g_s, g_h, flags, ddw, dxlo, dxs, dxhi, dgs, nd, H, W, Cin, Cout);
  cmp_f("conv3d_backward_weights", var, shape, ddw, want, nw, tol);

  cudaFree(ddw), cudaFree(dout), cudaFree(dx_), cudaFree(dgy), cudaFree(dw);
  free(x), free(gy), free(w), free(dw0), free(want);
}

/* ---- 1x1x1 convolution, transposed convolution ------------------------------------------------ */

static void check_conv1(size_t n, int Cin, int Cout, unsigned flags)
{
  char shape[64];
  snprintf(shape, sizeof shape, "n%zu %d->%d", n, Cin, Cout);
  const char *var = prec_name(flags);
  const double tol = prec_tol(flags);
  float *x = hrand(n * Cin, -1, 1), *w = hrand((size_t)Cin * Cout, -1, 1), *b = hrand(Cout, -1, 1);
  float *gy = hrand(n * Cout, -1, 1), *dw0 = hrand((size_t)Cin * Cout, -1, 1), *db0 = hrand(Cout, -1, 1);
  float *dx_ = dupf(x, n * Cin), *dw = dupf(w, (size_t)Cin * Cout), *db = dupf(b, Cout), *dgy = dupf(gy, n * Cout);
  float *want = xmalloc(n * (Cin > Cout ? Cin : Cout) * sizeof(float));
  float *dout = dev_garbage(n * (Cin > Cout ? Cin : Cout) * sizeof(float));

  sf_conv1_forward_ref(want, x, w, b, n, Cin, Cout);
  sf_cuda_conv1_forward(g_s, g_h, flags, dout, dx_, dw, db, n, Cin, Cout);
  cmp_f("conv1_forward", var, shape, dout, want, n * Cout, tol);

  sf_conv1_backward_data_ref(want, gy, w, n, Cin, Cout);
  sf_cuda_conv1_backward_data(g_s, g_h, flags, dout, dgy, dw, n, Cin, Cout);
  cmp_f("conv1_backward_data", var, shape, dout, want, n * Cin, tol);

  float *wdw = xmalloc((size_t)Cin * Cout * sizeof(float)), *wdb = xmalloc(Cout * sizeof(float));
  memcpy(wdw, dw0, (size_t)Cin * Cout * sizeof(float));
  memcpy(wdb, db0, Cout * sizeof(float));
  float *ddw = dupf(dw0, (size_t)Cin * Cout), *ddb = dupf(db0, Cout);
  sf_conv1_backward_weights_ref(wdw, wdb, x, gy, n, Cin, Cout);
  sf_cuda_conv1_backward_weights(g_s, g_h, flags, ddw, ddb, dx_, dgy, n, Cin, Cout);
  cmp_f("conv1_backward_weights", var, shape, ddw, wdw, (size_t)Cin * Cout, tol);
  cmp_f("conv1_backward_bias", var, shape, ddb, wdb, Cout, TOL_FP32); /* bias sums stay fp32 */

  cudaFree(dx_), cudaFree(dw), cudaFree(db), cudaFree(dgy), cudaFree(dout), cudaFree(ddw), cudaFree(ddb);
  free(x), free(w), free(b), free(gy), free(dw0), free(db0), free(want), free(wdw), free(wdb);
}

static void check_upconv(int nd, int H, int W, int Cin, int Cout, unsigned flags)
{
  char shape[64];
  snprintf(shape, sizeof shape, "%dx%dx%d %d->%d", nd, H, W, Cin, Cout);
  const char *var = prec_name(flags);
  const double tol = prec_tol(flags);
  const size_t nin = (size_t)nd * H * W * Cin, nout = (size_t)8 * nd * H * W * Cout, nw = (size_t)Cin * 8 * Cout;
  float *x = hrand(nin, -1, 1), *w = hrand(nw, -1, 1), *b = hrand(Cout, -1, 1), *gy = hrand(nout, -1, 1);
  float *dw0 = hrand(nw, -1, 1), *db0 = hrand(Cout, -1, 1);
  float *dx_ = dupf(x, nin), *dw = dupf(w, nw), *db = dupf(b, Cout), *dgy = dupf(gy, nout);
  float *want = xmalloc((nout > nin ? nout : nin) * sizeof(float));
  float *dout = dev_garbage((nout > nin ? nout : nin) * sizeof(float));

  sf_upconv3d_forward_ref(want, x, w, b, nd, H, W, Cin, Cout);
  sf_cuda_upconv3d_forward(g_s, g_h, flags, dout, dx_, dw, db, nd, H, W, Cin, Cout);
  cmp_f("upconv3d_forward", var, shape, dout, want, nout, tol);

  sf_upconv3d_backward_data_ref(want, gy, w, nd, H, W, Cin, Cout);
  sf_cuda_upconv3d_backward_data(g_s, g_h, flags, dout, dgy, dw, nd, H, W, Cin, Cout);
  cmp_f("upconv3d_backward_data", var, shape, dout, want, nin, tol);

  float *wdw = xmalloc(nw * sizeof(float)), *wdb = xmalloc(Cout * sizeof(float));
  memcpy(wdw, dw0, nw * sizeof(float));
  memcpy(wdb, db0, Cout * sizeof(float));
  float *ddw = dupf(dw0, nw), *ddb = dupf(db0, Cout);
  sf_upconv3d_backward_weights_ref(wdw, wdb, x, gy, nd, H, W, Cin, Cout);
  sf_cuda_upconv3d_backward_weights(g_s, g_h, flags, ddw, ddb, dx_, dgy, nd, H, W, Cin, Cout);
  cmp_f("upconv3d_backward_weights", var, shape, ddw, wdw, nw, tol);
  cmp_f("upconv3d_backward_bias", var, shape, ddb, wdb, Cout, TOL_FP32);

  cudaFree(dx_), cudaFree(dw), cudaFree(db), cudaFree(dgy), cudaFree(dout), cudaFree(ddw), cudaFree(ddb);
  free(x), free(w), free(b), free(gy), free(dw0), free(db0), free(want), free(wdw), free(wdb);
}

/* ---- GroupNorm: slab n of a volume of ntotal voxels ------------------------------------------- */

static void check_groupnorm(size_t ntotal, size_t v0, size_t n, int C, int G, int relu)
{
  char shape[64];
  snprintf(shape, sizeof shape, "slab %zu/%zu C%d G%d%s", n, ntotal, C, G, relu ? " relu" : "");
  const float eps = 1e-5f;
  float *x = hrand(ntotal * C, -2, 3), *gamma = hrand(C, 0.5f, 1.5f), *beta = hrand(C, -0.5f, 0.5f);
  float *gy = hrand(ntotal * C, -1, 1);
  double *stats = calloc(2 * (size_t)G, sizeof(double)), *acc0 = xmalloc(2 * (size_t)(C > G ? C : G) * sizeof(double));
  for (int i = 0; i < 2 * (C > G ? C : G); i++) acc0[i] = urand() - 0.5;
  sf_groupnorm_stats_ref(stats, x, ntotal, C, G); /* the global statistics */
  const float *xs = x + v0 * C, *gs = gy + v0 * C;
  float *dxs = dupf(xs, n * C), *dgs = dupf(gs, n * C), *dgamma = dupf(gamma, C), *dbeta = dupf(beta, C);

  /* stats of the slab, accumulated onto non-zero values */
  double *wst = xmalloc(2 * (size_t)G * sizeof(double));
  memcpy(wst, acc0, 2 * (size_t)G * sizeof(double));
  double *dst = dupd(acc0, 2 * (size_t)G);
  sf_groupnorm_stats_ref(wst, xs, n, C, G);
  sf_cuda_groupnorm_stats(g_s, dst, dxs, n, C, G);
  cmp_d("groupnorm_stats", "fp64 sums", shape, dst, wst, 2 * (size_t)G, 1e-12);

  double *dstats = dupd(stats, 2 * (size_t)G);
  float *y = xmalloc(n * C * sizeof(float)), *dy_ = dev_garbage(n * C * sizeof(float));
  sf_groupnorm_forward_ref(y, xs, stats, gamma, beta, n, ntotal, C, G, eps, relu);
  sf_cuda_groupnorm_forward(g_s, dy_, dxs, dstats, dgamma, dbeta, n, ntotal, C, G, eps, relu);
  cmp_f("groupnorm_forward", "fp32", shape, dy_, y, n * C, TOL_FP32);
  CK(cudaMemcpy(dy_, y, n * C * sizeof(float), cudaMemcpyHostToDevice)); /* the CPU output from here on */

  double *wgs = xmalloc(2 * (size_t)G * sizeof(double)), *wdgb = xmalloc(2 * (size_t)C * sizeof(double));
  memcpy(wgs, acc0, 2 * (size_t)G * sizeof(double));
  memcpy(wdgb, acc0, 2 * (size_t)C * sizeof(double));
  double *dgsum = dupd(acc0, 2 * (size_t)G), *ddgb = dupd(acc0, 2 * (size_t)C);
  sf_groupnorm_backward_stats_ref(wgs, wdgb, gs, y, xs, stats, gamma, n, ntotal, C, G, eps, relu);
  sf_cuda_groupnorm_backward_stats(g_s, dgsum, ddgb, dgs, dy_, dxs, dstats, dgamma, n, ntotal, C, G, eps, relu);
  cmp_d("groupnorm_backward_stats", "gsums", shape, dgsum, wgs, 2 * (size_t)G, 1e-9);
  cmp_d("groupnorm_backward_stats", "dgb", shape, ddgb, wdgb, 2 * (size_t)C, 1e-9);

  /* backward data from "global" sums (here: this slab's, which is all the kernel needs) */
  CK(cudaMemcpy(dgsum, wgs, 2 * (size_t)G * sizeof(double), cudaMemcpyHostToDevice));
  float *dx = xmalloc(n * C * sizeof(float)), *ddx = dev_garbage(n * C * sizeof(float));
  sf_groupnorm_backward_data_ref(dx, gs, y, xs, stats, wgs, gamma, n, ntotal, C, G, eps, relu);
  sf_cuda_groupnorm_backward_data(g_s, ddx, dgs, dy_, dxs, dstats, dgsum, dgamma, n, ntotal, C, G, eps, relu);
  cmp_f("groupnorm_backward_data", "fp32", shape, ddx, dx, n * C, TOL_FP32);

  float *pg = hrand(2 * (size_t)C, -1, 1);
  float *dpg = dupf(pg, 2 * (size_t)C);
  CK(cudaMemcpy(ddgb, wdgb, 2 * (size_t)C * sizeof(double), cudaMemcpyHostToDevice));
  sf_groupnorm_param_grads(pg, pg + C, wdgb, C);
  sf_cuda_groupnorm_param_grads(g_s, dpg, dpg + C, ddgb, C);
  cmp_f("groupnorm_param_grads", "fp32", shape, dpg, pg, 2 * (size_t)C, TOL_FP32);

  cudaFree(dxs), cudaFree(dgs), cudaFree(dgamma), cudaFree(dbeta), cudaFree(dst), cudaFree(dstats), cudaFree(dy_);
  cudaFree(dgsum), cudaFree(ddgb), cudaFree(ddx), cudaFree(dpg);
  free(x), free(gamma), free(beta), free(gy), free(stats), free(acc0), free(wst), free(y), free(wgs), free(wdgb);
  free(dx), free(pg);
}

/* ---- elementwise layers ------------------------------------------------------------------------ */

static void check_relu(size_t n)
{
  char shape[32];
  snprintf(shape, sizeof shape, "n%zu (+NaN)", n);
  float *x = hrand(n, -1, 1), *gy = hrand(n, -1, 1), *y = xmalloc(n * sizeof(float)), *dx = xmalloc(n * sizeof(float));
  x[n / 3] = NAN;
  x[n / 2] = 0.0f;
  float *dxv = dupf(x, n), *dgy = dupf(gy, n), *dout = dev_garbage(n * sizeof(float));
  sf_relu_forward(y, x, n);
  sf_cuda_relu_forward(g_s, dout, dxv, n);
  cmp_f("relu_forward", "fp32", shape, dout, y, n, 0.0);
  sf_cuda_relu_forward(g_s, dxv, dxv, n); /* in place */
  cmp_f("relu_forward", "in place", shape, dxv, y, n, 0.0);
  float *dyv = dupf(y, n);
  sf_relu_backward(dx, gy, y, n);
  sf_cuda_relu_backward(g_s, dout, dgy, dyv, n);
  cmp_f("relu_backward", "fp32", shape, dout, dx, n, 0.0);
  cudaFree(dxv), cudaFree(dgy), cudaFree(dout), cudaFree(dyv);
  free(x), free(gy), free(y), free(dx);
}

static void check_maxpool(int nd, int H, int W, int C)
{
  char shape[48];
  snprintf(shape, sizeof shape, "out %dx%dx%d C%d (ties, NaN)", nd, H, W, C);
  const size_t nout = (size_t)nd * H * W * C, nin = 8 * nout;
  float *x = hgrid(nin, 6), *gy = hrand(nout, -1, 1);
  x[nin / 5] = NAN;
  float *y = xmalloc(nout * sizeof(float)), *dx = xmalloc(nin * sizeof(float));
  uint8_t *idx = xmalloc(nout), *gidx = xmalloc(nout);
  float *dxv = dupf(x, nin), *dgy = dupf(gy, nout), *dy_ = dev_garbage(nout * sizeof(float));
  float *ddx = dev_garbage(nin * sizeof(float));
  uint8_t *didx = dev_garbage(nout);
  sf_maxpool3d_forward_ref(y, idx, x, nd, H, W, C);
  sf_cuda_maxpool3d_forward(g_s, dy_, didx, dxv, nd, H, W, C);
  cmp_f("maxpool3d_forward", "fp32", shape, dy_, y, nout, 0.0);
  back(gidx, didx, nout);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < nout; i++)
    if (gidx[i] != idx[i] && !bad++) first = i;
  report("maxpool3d_forward", "argmax", shape, (double)bad, 0.0, first, gidx[first], idx[first]);
  sf_maxpool3d_backward_ref(dx, gy, idx, nd, H, W, C);
  sf_cuda_maxpool3d_backward(g_s, ddx, dgy, didx, nd, H, W, C);
  cmp_f("maxpool3d_backward", "fp32", shape, ddx, dx, nin, 0.0);
  cudaFree(dxv), cudaFree(dgy), cudaFree(dy_), cudaFree(ddx), cudaFree(didx);
  free(x), free(gy), free(y), free(dx), free(idx), free(gidx);
}

static void check_concat(size_t n, int Ca, int Cb)
{
  char shape[48];
  snprintf(shape, sizeof shape, "n%zu %d+%d", n, Ca, Cb);
  const size_t C = (size_t)Ca + Cb;
  float *a = hrand(n * Ca, -1, 1), *b = hrand(n * Cb, -1, 1), *y = xmalloc(n * C * sizeof(float));
  float *da = xmalloc(n * Ca * sizeof(float)), *db = xmalloc(n * Cb * sizeof(float));
  float *dav = dupf(a, n * Ca), *dbv = dupf(b, n * Cb), *dyv = dev_garbage(n * C * sizeof(float));
  sf_concat_forward(y, a, b, n, Ca, Cb);
  sf_cuda_concat_forward(g_s, dyv, dav, dbv, n, Ca, Cb);
  cmp_f("concat_forward", "fp32", shape, dyv, y, n * C, 0.0);
  sf_concat_backward(da, db, y, n, Ca, Cb);
  CK(cudaMemset(dav, 0x7f, n * Ca * sizeof(float)));
  CK(cudaMemset(dbv, 0x7f, n * Cb * sizeof(float)));
  sf_cuda_concat_backward(g_s, dav, dbv, dyv, n, Ca, Cb);
  cmp_f("concat_backward", "a", shape, dav, da, n * Ca, 0.0);
  cmp_f("concat_backward", "b", shape, dbv, db, n * Cb, 0.0);
  cudaFree(dav), cudaFree(dbv), cudaFree(dyv);
  free(a), free(b), free(y), free(da), free(db);
}

/* ---- loss, Dice --------------------------------------------------------------------------------- */

static void check_loss(size_t n, int K, int absent_class)
{
  char shape[48];
  snprintf(shape, sizeof shape, "n%zu K%d%s", n, K, absent_class ? " (class absent)" : "");
  float *z = hrand(n * K, -4, 4), *cw = hrand(K, 0.2f, 2.0f);
  uint16_t *lab = xmalloc(n * sizeof(uint16_t));
  for (size_t i = 0; i < n; i++) {
    int y = (int)(urand() * K);
    if (absent_class && y == K - 1) y = 0;
    lab[i] = (uint16_t)y;
  }
  if (absent_class) /* class K-1 neither labelled nor predicted: S = 0 branch */
    for (size_t i = 0; i < n; i++) z[i * K + K - 1] = -60.0f;
  const int na = SF_LOSS_NACC(K);
  double *acc = xmalloc(na * sizeof(double)), *acc0 = xmalloc(na * sizeof(double));
  for (int i = 0; i < na; i++) acc0[i] = absent_class ? 0.0 : 3.0 * urand();
  memcpy(acc, acc0, na * sizeof(double));
  float *dz = dupf(z, n * K), *dcw = dupf(cw, K);
  uint16_t *dlab = dup_dev(lab, n * sizeof(uint16_t));
  double *dacc = dupd(acc0, na);
  sf_loss_partial_ref(acc, z, lab, cw, n, K);
  sf_cuda_loss_partial(g_s, dacc, dz, dlab, dcw, n, K);
  cmp_d("loss_partial", "fp64 sums", shape, dacc, acc, na, 1e-10);

  CK(cudaMemcpy(dacc, acc, na * sizeof(double), cudaMemcpyHostToDevice));
  float *g = xmalloc(n * K * sizeof(float)), *dg = dev_garbage(n * K * sizeof(float));
  sf_loss_backward_ref(g, z, lab, cw, acc, n, K, 0.37f);
  sf_cuda_loss_backward(g_s, dg, dz, dlab, dcw, dacc, n, K, 0.37f);
  cmp_f("loss_backward", "fp32", shape, dg, g, n * K, 1e-5);

  /* a batch (upstream's pooled CE): the pooled weight sum read on the device, the Dice term / batch */
  double wsum = 0, *dws = dupd(acc0, 1);
  for (int rep = 0; rep < 2; rep++) sf_loss_weight_sum_ref(&wsum, lab, cw, n, K); /* two "samples" */
  double wsum_host = acc0[0];
  sf_loss_weight_sum_ref(&wsum_host, lab, cw, n, K);
  sf_cuda_loss_weight_sum(g_s, dws, dlab, dcw, n, K); /* adds to acc0[0] */
  cmp_d("loss_weight_sum", "fp64 sum", shape, dws, &wsum_host, 1, 1e-12);
  CK(cudaMemcpy(dws, &wsum, sizeof(double), cudaMemcpyHostToDevice));
  sf_loss_backward_batch_ref(g, z, lab, cw, acc, wsum, 3, n, K, 1.0f);
  sf_cuda_loss_backward_batch(g_s, dg, dz, dlab, dcw, dacc, dws, 3, n, K, 1.0f);
  cmp_f("loss_backward_batch", "fp32", shape, dg, g, n * K, 1e-5);
  cudaFree(dws);

  float *zq = hgrid(n * K, 5); /* ties for argmax */
  double *dacc3 = xmalloc(3 * (size_t)K * sizeof(double));
  for (int i = 0; i < 3 * K; i++) dacc3[i] = (double)(int)(10 * urand());
  double *ddc = dupd(dacc3, 3 * (size_t)K);
  float *dzq = dupf(zq, n * K);
  sf_dice_hard_partial_ref(dacc3, zq, lab, n, K);
  sf_cuda_dice_hard_partial(g_s, ddc, dzq, dlab, n, K);
  cmp_d("dice_hard_partial", "counts", shape, ddc, dacc3, 3 * (size_t)K, 0.0);

  cudaFree(dz), cudaFree(dcw), cudaFree(dlab), cudaFree(dacc), cudaFree(dg), cudaFree(ddc), cudaFree(dzq);
  free(z), free(cw), free(lab), free(acc), free(acc0), free(g), free(zq), free(dacc3);
}

/* ---- optimizer ---------------------------------------------------------------------------------- */

static void check_optim(size_t n)
{
  char shape[32];
  snprintf(shape, sizeof shape, "n%zu", n);
  float *g = hrand(n, -1, 1), *w = hrand(n, -1, 1), *m = hrand(n, -0.1f, 0.1f), *v = hrand(n, 0, 0.01f);
  double acc = 1.25, *dacc = dupd(&acc, 1);
  float *dg = dupf(g, n);
  sf_sumsq_partial(&acc, g, n);
  sf_cuda_sumsq_partial(g_s, dacc, dg, n);
  cmp_d("sumsq_partial", "fp64 sum", shape, dacc, &acc, 1, 1e-12);

  for (int clip = 0; clip <= 1; clip++) {
    float *dw = dupf(w, n), *dm = dupf(m, n), *dv = dupf(v, n);
    float *hw = xmalloc(n * sizeof(float)), *hm = xmalloc(n * sizeof(float)), *hv = xmalloc(n * sizeof(float));
    memcpy(hw, w, n * sizeof(float)), memcpy(hm, m, n * sizeof(float)), memcpy(hv, v, n * sizeof(float));
    double tot = 4.0 * (double)n; /* norm far above max_norm: coef < 1 */
    double *dtot = dupd(&tot, 1);
    float scale = clip ? sf_clip_coef(tot, 1.0f) : 0.8f;
    sf_adam_step(hw, hm, hv, g, n, 1e-3, 0.9, 0.999, 1e-8, 3, scale);
    sf_cuda_adam_step(g_s, dw, dm, dv, dg, n, 1e-3, 0.9, 0.999, 1e-8, 3, clip ? 1.0f : 0.8f, clip ? dtot : NULL, 1.0f);
    const char *var = clip ? "device clip" : "scale 0.8";
    cmp_f("adam_step w", var, shape, dw, hw, n, 1e-6);
    cmp_f("adam_step m", var, shape, dm, hm, n, 1e-6);
    cmp_f("adam_step v", var, shape, dv, hv, n, 1e-6);
    cudaFree(dw), cudaFree(dm), cudaFree(dv), cudaFree(dtot);
    free(hw), free(hm), free(hv);
  }
  /* SGD and RMSprop with the clip coefficient read on the device (or none: scale 1) */
  for (int clip = 0; clip <= 1; clip++) {
    double cf = 0.37;
    double *dcf = clip ? dupd(&cf, 1) : NULL;
    float scale = clip ? (float)cf : 1.0f;
    const char *var = clip ? "device coef" : "no coef";
    float *dw = dupf(w, n), *dsq = dupf(v, n), *hw = xmalloc(n * sizeof(float)), *hsq = xmalloc(n * sizeof(float));
    memcpy(hw, w, n * sizeof(float));
    sf_sgd_step(hw, g, n, 1e-3, scale);
    sf_cuda_sgd_step(g_s, dw, dg, n, 1e-3, dcf);
    cmp_f("sgd_step w", var, shape, dw, hw, n, 1e-6);
    cudaFree(dw);
    dw = dupf(w, n);
    memcpy(hw, w, n * sizeof(float)), memcpy(hsq, v, n * sizeof(float));
    sf_rmsprop_step(hw, hsq, g, n, 1e-3, 0.99, 1e-8, scale);
    sf_cuda_rmsprop_step(g_s, dw, dsq, dg, n, 1e-3, 0.99, 1e-8, dcf);
    cmp_f("rmsprop_step w", var, shape, dw, hw, n, 1e-6);
    cmp_f("rmsprop_step square_avg", var, shape, dsq, hsq, n, 1e-6);
    cudaFree(dw), cudaFree(dsq);
    if (dcf) cudaFree(dcf);
    free(hw), free(hsq);
  }
  cudaFree(dacc), cudaFree(dg);
  free(g), free(w), free(m), free(v);
}

/* ---- step glue (step_glue.cu): fixed-order sums, add, clip coefficient, Adam with a device coef ---- */

static void check_step_glue(size_t n, int nparts)
{
  char shape[48];
  snprintf(shape, sizeof shape, "n%zu, %d parts", n, nparts);
  float **hp = xmalloc((size_t)nparts * sizeof(float *)), **dp = xmalloc((size_t)nparts * sizeof(float *));
  double **hd = xmalloc((size_t)nparts * sizeof(double *)), **dd = xmalloc((size_t)nparts * sizeof(double *));
  for (int k = 0; k < nparts; k++) {
    hp[k] = hrand(n, -1, 1);
    dp[k] = dupf(hp[k], n);
    hd[k] = xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) hd[k][i] = (double)hp[k][i] * 1e-3 + (double)k;
    dd[k] = dupd(hd[k], n);
  }
  /* the CPU order of codelets/reduce.c: out = p0, then out += pk */
  float *sf = xmalloc(n * sizeof(float));
  double *sd = xmalloc(n * sizeof(double));
  memcpy(sf, hp[0], n * sizeof(float));
  memcpy(sd, hd[0], n * sizeof(double));
  for (int k = 1; k < nparts; k++)
    for (size_t i = 0; i < n; i++) sf[i] += hp[k][i], sd[i] += hd[k][i];
  float *dsf = dev_garbage(n * sizeof(float));
  double *dsd = dev_garbage(n * sizeof(double));
  sf_cuda_sum_parts_f(g_s, dsf, (const float *const *)dp, nparts, n);
  sf_cuda_sum_parts_d(g_s, dsd, (const double *const *)dd, nparts, n);
  cmp_f("sum_parts_f", "part order", shape, dsf, sf, n, 0.0);
  cmp_d("sum_parts_d", "part order", shape, dsd, sd, n, 0.0);

  for (size_t i = 0; i < n; i++) sf[i] += hp[nparts - 1][i];
  sf_cuda_add_f(g_s, dsf, dp[nparts - 1], n);
  cmp_f("add_f", "fp32", shape, dsf, sf, n, 0.0);

  /* clip: one double per part (sums of squares), total in part order, then sf_clip_coef */
  double total = 0, want[2];
  for (int k = 0; k < nparts; k++) total += hd[k][0] * hd[k][0];
  for (int k = 0; k < nparts; k++) hd[k][0] = hd[k][0] * hd[k][0];
  for (int k = 0; k < nparts; k++) CK(cudaMemcpy(dd[k], hd[k], sizeof(double), cudaMemcpyHostToDevice));
  want[0] = sf_clip_coef(total, 1.0f);
  want[1] = sqrt(total);
  double *dclip = dev_garbage(2 * sizeof(double));
  sf_cuda_clip_coef(g_s, dclip, (const double *const *)dd, nparts, 1.0f);
  cmp_d("clip_coef", "[coef, norm]", shape, dclip, want, 2, 0.0);

  /* Adam with the coefficient read on the device = sf_adam_step with grad_scale (float)coef */
  float *w = hrand(n, -1, 1), *m = hrand(n, -0.1f, 0.1f), *v = hrand(n, 0, 0.01f);
  float *dw = dupf(w, n), *dm = dupf(m, n), *dv = dupf(v, n);
  sf_adam_step(w, m, v, hp[0], n, 1e-3, 0.9, 0.999, 1e-8, 2, (float)want[0]);
  sf_cuda_adam_step_coef(g_s, dw, dm, dv, dp[0], n, 1e-3, 0.9, 0.999, 1e-8, 2, dclip);
  cmp_f("adam_step_coef w", "device coef", shape, dw, w, n, 1e-6);
  cmp_f("adam_step_coef m", "device coef", shape, dm, m, n, 1e-6);
  cmp_f("adam_step_coef v", "device coef", shape, dv, v, n, 1e-6);

  cudaFree(dsf), cudaFree(dsd), cudaFree(dclip), cudaFree(dw), cudaFree(dm), cudaFree(dv);
  free(sf), free(sd), free(w), free(m), free(v);
  for (int k = 0; k < nparts; k++) cudaFree(dp[k]), cudaFree(dd[k]), free(hp[k]), free(hd[k]);
  free(hp), free(dp), free(hd), free(dd);
}

/* ---- benchmark ---------------------------------------------------------------------------------- */

/* one conv3d call of direction dir (0 fwd, 1 dX, 2 dW) on a whole D^3 volume (no halos) */
static void conv_call(int dir, unsigned flags, float *out, const float *in, const float *other, int D, int Cin, int Cout)
{
  if (dir == 0) sf_cuda_conv3d_forward(g_s, g_h, flags, out, NULL, in, NULL, other, D, D, D, Cin, Cout);
  else if (dir == 1) sf_cuda_conv3d_backward_data(g_s, g_h, flags, out, NULL, in, NULL, other, D, D, D, Cin, Cout);
  else sf_cuda_conv3d_backward_weights(g_s, g_h, flags, out, NULL, in, NULL, other, D, D, D, Cin, Cout);
}

/* ms per call of n back-to-back calls, by CUDA events on the stream */
static float timed(int n, int dir, unsigned flags, float *out, const float *in, const float *other, int D, int Cin,
                   int Cout)
{
  cudaEvent_t a, b;
  float ms = 0;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, g_s));
  for (int r = 0; r < n; r++) conv_call(dir, flags, out, in, other, D, Cin, Cout);
  CK(cudaEventRecord(b, g_s));
  CK(cudaEventSynchronize(b));
  CK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / n;
}

/* warm-up (cuDNN's algorithm search, workspace growth), an estimate, then about 40 ms of timed calls */
static double time_ms(int dir, unsigned flags, float *out, const float *in, const float *other, int D, int Cin,
                      int Cout, int *reps_out)
{
  timed(1, dir, flags, out, in, other, D, Cin, Cout);
  float est = timed(1, dir, flags, out, in, other, D, Cin, Cout);
  int reps = (int)(40.0 / (est > 0.01f ? est : 0.01f));
  reps = reps < 3 ? 3 : reps > 50 ? 50 : reps;
  *reps_out = reps;
  return timed(reps, dir, flags, out, in, other, D, Cin, Cout);
}

#define NSHAPE 8
static int bench(double budget_s)
{
  /* most important first: a time budget may cut the list short */
  static const int shapes[NSHAPE][3] = {{64, 64, 64},  {32, 128, 128}, {16, 256, 256}, {8, 512, 512},
                                        {32, 64, 64},  {16, 128, 128}, {64, 128, 64},  {64, 1, 64}};
  static const char *dirs[3] = {"fwd", "dX", "dW"};
  static const unsigned precs[3] = {0, SF_GPU_TF32, SF_GPU_BF16};
  static double tf[NSHAPE][3][3][2]; /* shape, dir, precision, engine (0 cuBLAS, 1 cuDNN): TFLOP/s */
  const int nengine = sf_cuda_have_cudnn() ? 2 : 1;
  const double t0 = now_s();
  const char *dv = getenv("SF_GPU_BENCH_DIV"); /* divides the volume edge (a quick run of this code) */
  const int div = dv && atoi(dv) > 1 ? atoi(dv) : 1;
  int done = 0;
  printf("conv3d 3x3x3 benchmark: whole D^3 volume as one slab; TFLOP/s = 2*27*D^3*Cin*Cout / time\n");
  printf("%-18s %-4s %-13s %9s %9s %5s\n", "shape", "dir", "variant", "ms", "TFLOP/s", "reps");
  for (int i = 0; i < NSHAPE; i++) {
    if (now_s() - t0 > budget_s) {
      printf("(time budget of %.0f s reached: %d of %d shapes measured)\n", budget_s, i, NSHAPE);
      break;
    }
    const int D = shapes[i][0] / div > 1 ? shapes[i][0] / div : 2, Cin = shapes[i][1], Cout = shapes[i][2];
    const size_t nvox = (size_t)D * D * D, nw = (size_t)27 * Cin * Cout;
    const size_t nmax = nvox * (size_t)(Cin > Cout ? Cin : Cout);
    float *hx = hrand(nmax, -1, 1), *hw = hrand(nw, -0.1f, 0.1f);
    float *x = dupf(hx, nmax), *gy = dupf(hx, nmax), *w = dupf(hw, nw), *out = dev_garbage(nmax * sizeof(float));
    float *dw = dev_garbage(nw * sizeof(float));
    const double flop = 2.0 * 27.0 * (double)nvox * Cin * Cout;
    char shape[32];
    snprintf(shape, sizeof shape, "%d^3 %d->%d", D, Cin, Cout);
    for (int dir = 0; dir < 3; dir++) {
      if (dir == 1 && Cin == 1) continue; /* the first layer needs no dX */
      for (int p = 0; p < 3; p++)
        for (int e = 0; e < nengine; e++) {
          unsigned flags = precs[p] | (e ? SF_GPU_CUDNN : 0);
          int reps = 0;
          double ms = dir == 0   ? time_ms(0, flags, out, x, w, D, Cin, Cout, &reps)
                      : dir == 1 ? time_ms(1, flags, out, gy, w, D, Cin, Cout, &reps)
                                 : time_ms(2, flags, dw, x, gy, D, Cin, Cout, &reps);
          char var[24];
          snprintf(var, sizeof var, "%s %s", prec_name(flags), e ? "cudnn" : "cublas");
          tf[i][dir][p][e] = flop / (ms * 1e-3) / 1e12;
          printf("%-18s %-4s %-13s %9.3f %9.1f %5d\n", shape, dirs[dir], var, ms, tf[i][dir][p][e], reps);
          fflush(stdout);
        }
    }
    cudaFree(x), cudaFree(gy), cudaFree(w), cudaFree(out), cudaFree(dw);
    free(hx), free(hw);
    sf_cuda_thread_release(); /* device memory of one shape at a time */
    done = i + 1;
  }
  if (nengine == 2) {
    printf("\nsummary: TFLOP/s cuBLAS / cuDNN and the faster engine (x = speed-up)\n");
    printf("%-18s %-4s %-22s %-22s %-22s\n", "shape", "dir", "fp32", "tf32", "bf16");
    for (int i = 0; i < done; i++)
      for (int dir = 0; dir < 3; dir++) {
        if (tf[i][dir][0][0] <= 0) continue;
        char shape[32], cell[3][32];
        const int D = shapes[i][0] / div > 1 ? shapes[i][0] / div : 2;
        snprintf(shape, sizeof shape, "%d^3 %d->%d", D, shapes[i][1], shapes[i][2]);
        for (int p = 0; p < 3; p++) {
          double a = tf[i][dir][p][0], b = tf[i][dir][p][1];
          snprintf(cell[p], sizeof cell[p], "%6.1f/%-6.1f %s %.1fx", a, b, b > a ? "dnn" : "blas", b > a ? b / a : a / b);
        }
        printf("%-18s %-4s %-22s %-22s %-22s\n", shape, dirs[dir], cell[0], cell[1], cell[2]);
      }
  }
  printf("bench: %.0f s\n", now_s() - t0);
  return 0;
}

/* ---- main --------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
  int do_bench = argc > 1 && strcmp(argv[1], "--bench") == 0;
  double budget = argc > 2 ? atof(argv[2]) : 150.0;
  if ((argc > 1 && !do_bench) || argc > 3 || !(budget > 0)) {
    fprintf(stderr, "usage: %s [--bench [SECONDS]]\n", argv[0]);
    return 2;
  }
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    printf("SKIPPED: no CUDA device (cudaGetDeviceCount: %s, %d devices)\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "ok", ndev);
    return 77;
  }
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  printf("device 0: %s, sm_%d%d, %d SMs, %.1f GiB; runtime %d, driver %d; cuDNN engine: %s\n", prop.name, prop.major,
         prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, rt, drv,
         sf_cuda_have_cudnn() ? "built" : "not built");
  CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
  if (cublasCreate(&g_h) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "gpu_kernels_check: cublasCreate failed\n");
    return 1;
  }
  if (do_bench) {
    int rc = bench(budget);
    cublasDestroy(g_h);
    return rc;
  }

  static const unsigned precs[3] = {0, SF_GPU_BF16, SF_GPU_TF32};
  for (int v = 0; v < (sf_cuda_have_cudnn() ? 6 : 3); v++) {
    unsigned flags = precs[v % 3] | (v >= 3 ? SF_GPU_CUDNN : 0);
    check_conv3d(5, 1, 3, 5, 7, 3, 5, flags);   /* lo and hi halos, odd channels (scalar im2col) */
    check_conv3d(4, 0, 2, 6, 5, 8, 12, flags);  /* front face (no lo), vector im2col */
    check_conv3d(3, 2, 1, 4, 3, 1, 4, flags);   /* one plane at the back face, Cin = 1 (first layer) */
    check_conv3d(2, 0, 2, 3, 5, 12, 1, flags);  /* whole volume, Cout = 1 */
  }
  for (int v = 0; v < 3; v++) {
    unsigned flags = precs[v];
    check_conv1(301, 7, 3, flags);
    check_conv1(1000, 16, 6, flags);
    check_upconv(2, 3, 5, 6, 4, flags);
    check_upconv(1, 2, 2, 16, 8, flags);
  }
  check_groupnorm(210, 70, 70, 12, 4, 0);
  check_groupnorm(210, 0, 140, 12, 4, 1);
  check_groupnorm(90, 30, 45, 300, 3, 1); /* C > threads per block */
  check_groupnorm(64, 0, 64, 1, 1, 0);
  check_relu(1001);
  check_maxpool(2, 3, 5, 7);
  check_maxpool(1, 2, 2, 64);
  check_concat(123, 5, 3);
  check_concat(40, 64, 64);
  check_loss(777, 6, 0);
  check_loss(500, 2, 0);
  check_loss(300, 4, 1);
  check_optim(100003);
  check_step_glue(1001, 3);
  check_step_glue(257, 40); /* more parts than one launch takes */

  CK(cudaStreamSynchronize(g_s));
  sf_cuda_thread_release();
  cublasDestroy(g_h);
  printf("%d passed, %d failed\n", g_checks - g_fail, g_fail);
  return g_fail ? 1 : 0;
}
