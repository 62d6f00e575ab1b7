/* Optimizer kernels on the GPU: the squared-gradient partial sum for the global norm (double, block
 * reduction + one atomicAdd per block) and the updates of torch.optim.Adam, SGD and RMSprop with the
 * same float operation order as src/kernels/elementwise/optim.c (host-side double scalars rounded to float the
 * same way). Adam's gradient is optionally scaled by the clip_grad_norm_ coefficient computed on the
 * device from the reduced sum of squares; SGD and RMSprop read the clip task's coefficient. */
#include <math.h>

#include "gpu_common.h"

/* acc += sum g^2. Shared: blockDim doubles. */
static __global__ void sumsq_kernel(double *acc, const float *__restrict__ g, size_t n)
{
  extern __shared__ double sh[];
  double a = 0.0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    a += (double)g[i] * (double)g[i];
  a = sf_block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd(acc, a);
}

/* sf_clip_coef on the device */
__device__ __forceinline__ float clip_coef(double total_sumsq, float max_norm)
{
  float norm = (float)sqrt(total_sumsq);
  float coef = (1.0f / (norm + 1e-6f)) * max_norm;
  return coef < 1.0f ? coef : 1.0f;
}

static __global__ void adam_kernel(float *__restrict__ w, float *__restrict__ m, float *__restrict__ v,
                                   const float *__restrict__ g, size_t n, float b1, float a1, float b2, float a2,
                                   float bc2_sqrt, float neg_step, float epsf, float grad_scale, const double *sumsq,
                                   float max_norm)
{
  const float scale = sumsq ? grad_scale * clip_coef(*sumsq, max_norm) : grad_scale;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float gi = __fmul_rn(g[i], scale);
    float mi = fmaf(gi, a1, __fmul_rn(m[i], b1));
    float vi = fmaf(__fmul_rn(a2, gi), gi, __fmul_rn(v[i], b2));
    float denom = __fadd_rn(__fdiv_rn(sqrtf(vi), bc2_sqrt), epsf);
    w[i] = __fadd_rn(w[i], __fdiv_rn(__fmul_rn(neg_step, mi), denom));
    m[i] = mi;
    v[i] = vi;
  }
}

extern "C" void sf_cuda_sumsq_partial(sf_gpu_stream_t s, double *acc, const float *g, size_t n)
{
  if (n == 0) return;
  sumsq_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, SF_GPU_THREADS * sizeof(double), s>>>(acc, g, n);
  SF_LAUNCH_CHECK(sumsq_kernel);
}

extern "C" void sf_cuda_adam_step(sf_gpu_stream_t s, float *w, float *m, float *v, const float *g, size_t n, double lr,
                                  double beta1, double beta2, double eps, long step, float grad_scale,
                                  const double *total_sumsq, float max_norm)
{
  if (n == 0) return;
  const double bc1 = 1.0 - pow(beta1, (double)step);
  const double bc2 = 1.0 - pow(beta2, (double)step);
  const float b1 = (float)beta1, a1 = (float)(1.0 - beta1);
  const float b2 = (float)beta2, a2 = (float)(1.0 - beta2);
  const float bc2_sqrt = (float)sqrt(bc2);
  const float neg_step = (float)(-(lr / bc1));
  adam_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(w, m, v, g, n, b1, a1, b2, a2, bc2_sqrt, neg_step, (float)eps,
                                                          grad_scale, total_sumsq, max_norm);
  SF_LAUNCH_CHECK(adam_kernel);
}

/* the clip task's coefficient (a device double) rounded to float, or 1 */
__device__ __forceinline__ float coef_or_one(const double *coef) { return coef ? (float)coef[0] : 1.0f; }

static __global__ void sgd_kernel(float *__restrict__ w, const float *__restrict__ g, size_t n, float neg_lr,
                                  const double *coef)
{
  const float scale = coef_or_one(coef);
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    w[i] = fmaf(__fmul_rn(g[i], scale), neg_lr, w[i]);
}

static __global__ void rmsprop_kernel(float *__restrict__ w, float *__restrict__ sq, const float *__restrict__ g,
                                      size_t n, float al, float a2, float neg_lr, float epsf, const double *coef)
{
  const float scale = coef_or_one(coef);
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float gi = __fmul_rn(g[i], scale);
    float si = fmaf(__fmul_rn(a2, gi), gi, __fmul_rn(sq[i], al));
    float avg = __fadd_rn(sqrtf(si), epsf);
    w[i] = __fadd_rn(w[i], __fdiv_rn(__fmul_rn(neg_lr, gi), avg));
    sq[i] = si;
  }
}

extern "C" void sf_cuda_sgd_step(sf_gpu_stream_t s, float *w, const float *g, size_t n, double lr, const double *coef)
{
  if (n == 0) return;
  sgd_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(w, g, n, (float)(-lr), coef);
  SF_LAUNCH_CHECK(sgd_kernel);
}

extern "C" void sf_cuda_rmsprop_step(sf_gpu_stream_t s, float *w, float *sq, const float *g, size_t n, double lr,
                                     double alpha, double eps, const double *coef)
{
  if (n == 0) return;
  rmsprop_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(w, sq, g, n, (float)alpha, (float)(1.0 - alpha),
                                                              (float)(-lr), (float)eps, coef);
  SF_LAUNCH_CHECK(rmsprop_kernel);
}
