/* Small GPU kernels that the training step's StarPU glue needs beyond the ops of ops.h, so that every
 * task of a step can run on a CUDA worker (codelets/cuda_glue/): fixed-order sums of per-slab partials
 * (float and double, in part order like codelets/reduce.c, so the result is bitwise the CPU one), an
 * in-place vector add (the skip gradient of maxpool3d's backward), the gradient-clipping coefficient
 * from the per-tensor sums of squares (codelets/optim.c clip_coef_cpu, same operation order), and Adam
 * with the clip coefficient read from device memory. Interface: include/scaffold/ops_cuda.h. */
#include <math.h>

#include "gpu_common.h"

#define SF_PARTS_CHUNK 32 /* part pointers passed by value per launch */

template <typename T> struct sf_parts {
  const T *p[SF_PARTS_CHUNK];
};

/* out[i] = (first ? p[0][i] : out[i] + p[0][i]) + p[1][i] + ... (left to right) */
template <typename T>
static __global__ void sum_parts_kernel(T *out, sf_parts<T> P, int np, int first, size_t n)
{
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    T a = first ? P.p[0][i] : out[i] + P.p[0][i];
    for (int k = 1; k < np; k++) a = a + P.p[k][i];
    out[i] = a;
  }
}

template <typename T> static void sum_parts(cudaStream_t s, T *out, const T *const *parts, int nparts, size_t n)
{
  if (n == 0 || nparts <= 0) return;
  for (int k0 = 0; k0 < nparts; k0 += SF_PARTS_CHUNK) {
    sf_parts<T> P;
    int np = nparts - k0 < SF_PARTS_CHUNK ? nparts - k0 : SF_PARTS_CHUNK;
    for (int k = 0; k < SF_PARTS_CHUNK; k++) P.p[k] = k < np ? parts[k0 + k] : parts[k0];
    sum_parts_kernel<T><<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(out, P, np, k0 == 0, n);
    SF_LAUNCH_CHECK(sum_parts_kernel);
  }
}

extern "C" void sf_cuda_sum_parts_f(sf_gpu_stream_t s, float *out, const float *const *parts, int nparts, size_t n)
{
  sum_parts<float>(s, out, parts, nparts, n);
}

extern "C" void sf_cuda_sum_parts_d(sf_gpu_stream_t s, double *out, const double *const *parts, int nparts, size_t n)
{
  sum_parts<double>(s, out, parts, nparts, n);
}

static __global__ void add_f_kernel(float *__restrict__ y, const float *__restrict__ x, size_t n)
{
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    y[i] = y[i] + x[i];
}

extern "C" void sf_cuda_add_f(sf_gpu_stream_t s, float *y, const float *x, size_t n)
{
  if (n == 0) return;
  add_f_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(y, x, n);
  SF_LAUNCH_CHECK(add_f_kernel);
}

/* One thread: clip[1] accumulates the total (0 + p0 + p1 + ..., as the CPU), the last chunk turns it
 * into clip = [sf_clip_coef(total, max_norm), sqrt(total)]. */
static __global__ void clip_kernel(double *clip, sf_parts<double> P, int np, int first, int last, float max_norm)
{
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double total = first ? 0.0 : clip[1];
  for (int k = 0; k < np; k++) total = total + P.p[k][0];
  if (!last) {
    clip[1] = total;
    return;
  }
  float norm = (float)sqrt(total);
  float coef = __fmul_rn(__fdiv_rn(1.0f, __fadd_rn(norm, 1e-6f)), max_norm);
  clip[0] = (double)(coef < 1.0f ? coef : 1.0f); /* as sf_clip_coef: NaN stays NaN */
  clip[1] = sqrt(total);
}

extern "C" void sf_cuda_clip_coef(sf_gpu_stream_t s, double *clip, const double *const *parts, int nparts,
                                  float max_norm)
{
  if (nparts <= 0) {
    clip_kernel<<<1, 1, 0, s>>>(clip, sf_parts<double>(), 0, 1, 1, max_norm);
    SF_LAUNCH_CHECK(clip_kernel);
    return;
  }
  for (int k0 = 0; k0 < nparts; k0 += SF_PARTS_CHUNK) {
    sf_parts<double> P;
    int np = nparts - k0 < SF_PARTS_CHUNK ? nparts - k0 : SF_PARTS_CHUNK;
    for (int k = 0; k < SF_PARTS_CHUNK; k++) P.p[k] = k < np ? parts[k0 + k] : parts[k0];
    clip_kernel<<<1, 1, 0, s>>>(clip, P, np, k0 == 0, k0 + np >= nparts, max_norm);
    SF_LAUNCH_CHECK(clip_kernel);
  }
}

/* gs = g * (float)coef[0] (grad.mul_(clip_coef) in float, as sf_adam_step's g[i] * grad_scale) */
static __global__ void scale_kernel(float *__restrict__ gs, const float *__restrict__ g, const double *coef, size_t n)
{
  const float c = (float)coef[0];
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    gs[i] = __fmul_rn(g[i], c);
}

extern "C" void sf_cuda_adam_step_coef(sf_gpu_stream_t s, float *w, float *m, float *v, const float *g, size_t n,
                                       double lr, double beta1, double beta2, double eps, long step,
                                       const double *coef)
{
  if (n == 0) return;
  if (!coef) {
    sf_cuda_adam_step(s, w, m, v, g, n, lr, beta1, beta2, eps, step, 1.0f, NULL, 0.0f);
    return;
  }
  float *gs = (float *)sf_gpu_ws(SF_WS_TMP, n * sizeof(float), s);
  scale_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(gs, g, coef, n);
  SF_LAUNCH_CHECK(scale_kernel);
  sf_cuda_adam_step(s, w, m, v, gs, n, lr, beta1, beta2, eps, step, 1.0f, NULL, 0.0f); /* g * 1.0f is exact */
}
