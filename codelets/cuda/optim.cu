/* Optimizer kernels on the GPU: the squared-gradient partial sum for the global norm (double, block
 * reduction + one atomicAdd per block) and torch.optim.Adam's update with the same float operation
 * order as codelets/cpu/optim.c (host-side double scalars rounded to float the same way), optionally
 * scaled by the clip_grad_norm_ coefficient computed on the device from the reduced sum of squares. */
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
