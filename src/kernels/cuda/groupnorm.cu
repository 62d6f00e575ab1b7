/* GroupNorm (affine, G groups, fused ReLU) on the GPU in the partial-sum form of ops.h, so a volume split
 * into depth slabs gives the untiled result: stats (double sums per group) over every slab, then
 * normalize each slab; backward = per-slab double sums (dgb per channel, gsums per group), then dx.
 * Per-channel coefficients are formed in double from the global sums exactly as in
 * src/kernels/groupnorm/groupnorm_ref.c and kept in shared memory, so the voxel loops are a*x+b. Reductions: each
 * thread sums rows of its channel in double, a block folds them in shared memory (double atomics), and
 * one global double atomicAdd per block and entry adds the block's share. Layout (n,C) = NDHWC. */
#include <math.h>

#include "gpu_common.h"

/* Per-group mean and rstd from the global sums (population variance over ntotal*C/G values). */
__device__ __forceinline__ void gn_moments(double *mean, double *rstd, const double *stats, int g, double m, float eps)
{
  double mu = stats[2 * g] / m;
  double var = stats[2 * g + 1] / m - mu * mu;
  if (var < 0) var = 0;
  *mean = mu;
  *rstd = 1.0 / sqrt(var + (double)eps);
}

/* stats: (G,2) += [sum x, sum x^2] per group over x: (n,C). Shared: 2G doubles. */
static __global__ void gn_stats_kernel(double *stats, const float *__restrict__ x, size_t n, int C, int G)
{
  extern __shared__ double sh[];
  const int cpg = C / G;
  const sf_lanes l = sf_lanes_of(C);
  for (int i = threadIdx.x; i < 2 * G; i += blockDim.x) sh[i] = 0.0;
  __syncthreads();
  if (l.active)
    for (int c = l.lane_c; c < C; c += l.ct) {
      double a = 0.0, q = 0.0;
      for (size_t i = (size_t)blockIdx.x * l.vpb + l.lane_v; i < n; i += (size_t)gridDim.x * l.vpb) {
        double v = x[i * C + c];
        a += v;
        q += v * v;
      }
      atomicAdd(&sh[2 * (c / cpg)], a);
      atomicAdd(&sh[2 * (c / cpg) + 1], q);
    }
  __syncthreads();
  for (int i = threadIdx.x; i < 2 * G; i += blockDim.x) atomicAdd(&stats[i], sh[i]);
}

/* y: (n,C) = [relu](x*A[c] + B[c]) with A, B folded from the stats. Shared: 2C floats. */
static __global__ void gn_forward_kernel(float *__restrict__ y, const float *__restrict__ x, const double *stats,
                                         const float *gamma, const float *beta, size_t n, double m, int C, int G,
                                         float eps, int relu)
{
  extern __shared__ float shf[];
  float *A = shf, *B = shf + C;
  const int cpg = C / G;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    double mu, r;
    gn_moments(&mu, &r, stats, c / cpg, m, eps);
    double sc = (double)gamma[c] * r;
    A[c] = (float)sc;
    B[c] = (float)((double)beta[c] - mu * sc);
  }
  __syncthreads();
  const size_t total = n * C, start = (size_t)blockIdx.x * blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
  if (start >= total) return;
  int c = (int)(start % C);
  const int dc = (int)(step % C);
  for (size_t i = start; i < total; i += step) {
    float v = x[i] * A[c] + B[c];
    y[i] = relu ? (v < 0.0f ? 0.0f : v) : v;
    c += dc;
    if (c >= C) c -= C;
  }
}

/* gsums: (G,2) += [sum dxhat, sum dxhat*xhat]; dgb: (C,2) += [sum dy'*xhat, sum dy'].
 * Shared: sdy[C], sdyx[C], gs[2G], mean[G], rstd[G] doubles. */
static __global__ void gn_backward_stats_kernel(double *gsums, double *dgb, const float *__restrict__ dy,
                                                const float *__restrict__ y, const float *__restrict__ x,
                                                const double *stats, const float *gamma, size_t n, double m, int C,
                                                int G, float eps, int relu)
{
  extern __shared__ double sh[];
  double *sdy = sh, *sdyx = sh + C, *gs = sdyx + C, *mean = gs + 2 * G, *rstd = mean + G;
  const int cpg = C / G;
  const sf_lanes l = sf_lanes_of(C);
  for (int i = threadIdx.x; i < 2 * C; i += blockDim.x) sh[i] = 0.0;
  for (int g = threadIdx.x; g < G; g += blockDim.x) {
    gs[2 * g] = gs[2 * g + 1] = 0.0;
    gn_moments(&mean[g], &rstd[g], stats, g, m, eps);
  }
  __syncthreads();
  if (l.active)
    for (int c = l.lane_c; c < C; c += l.ct) {
      double a = 0.0, q = 0.0;
      for (size_t i = (size_t)blockIdx.x * l.vpb + l.lane_v; i < n; i += (size_t)gridDim.x * l.vpb) {
        const size_t e = i * C + c;
        float d = dy[e];
        if (relu && !(y[e] > 0.0f)) d = 0.0f;
        a += d;
        q += (double)d * (double)x[e];
      }
      atomicAdd(&sdy[c], a);
      atomicAdd(&sdyx[c], q);
    }
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const int g = c / cpg;
    const double dgamma = rstd[g] * (sdyx[c] - mean[g] * sdy[c]);
    atomicAdd(&dgb[2 * c], dgamma);
    atomicAdd(&dgb[2 * c + 1], sdy[c]);
    atomicAdd(&gs[2 * g], (double)gamma[c] * sdy[c]);
    atomicAdd(&gs[2 * g + 1], (double)gamma[c] * dgamma);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 2 * G; i += blockDim.x) atomicAdd(&gsums[i], gs[i]);
}

/* dx: (n,C) = A[c]*dy' + B[c]*x + K[c] (PyTorch's form). Shared: 3C floats. */
static __global__ void gn_backward_data_kernel(float *__restrict__ dx, const float *__restrict__ dy,
                                               const float *__restrict__ y, const float *__restrict__ x,
                                               const double *stats, const double *gsums, const float *gamma, size_t n,
                                               double m, int C, int G, float eps, int relu)
{
  extern __shared__ float shf[];
  float *A = shf, *B = shf + C, *K = B + C;
  const int cpg = C / G;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const int g = c / cpg;
    double mu, r;
    gn_moments(&mu, &r, stats, g, m, eps);
    double bg = -r * r * gsums[2 * g + 1] / m;
    A[c] = (float)(r * (double)gamma[c]);
    B[c] = (float)bg;
    K[c] = (float)(-r * gsums[2 * g] / m - bg * mu);
  }
  __syncthreads();
  const size_t total = n * C, start = (size_t)blockIdx.x * blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
  if (start >= total) return;
  int c = (int)(start % C);
  const int dc = (int)(step % C);
  for (size_t i = start; i < total; i += step) {
    float d = dy[i];
    if (relu && !(y[i] > 0.0f)) d = 0.0f;
    dx[i] = A[c] * d + B[c] * x[i] + K[c];
    c += dc;
    if (c >= C) c -= C;
  }
}

static __global__ void gn_param_grads_kernel(float *dgamma, float *dbeta, const double *dgb, int C)
{
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) {
    dgamma[c] += (float)dgb[2 * c];
    dbeta[c] += (float)dgb[2 * c + 1];
  }
}

static void check_groups(int C, int G)
{
  if (G <= 0 || C <= 0 || C % G != 0)
    sf_gpu_fail(__FILE__, __LINE__, "groupnorm", "channels must be a positive multiple of the groups (C % G == 0)");
}

extern "C" void sf_cuda_groupnorm_stats(sf_gpu_stream_t s, double *stats, const float *x, size_t n, int C, int G)
{
  check_groups(C, G);
  if (n == 0) return;
  gn_stats_kernel<<<sf_gpu_row_blocks(n, C), SF_GPU_THREADS, 2 * (size_t)G * sizeof(double), s>>>(stats, x, n, C, G);
  SF_LAUNCH_CHECK(gn_stats_kernel);
}

extern "C" void sf_cuda_groupnorm_forward(sf_gpu_stream_t s, float *y, const float *x, const double *stats,
                                          const float *gamma, const float *beta, size_t n, size_t ntotal, int C, int G,
                                          float eps, int relu)
{
  check_groups(C, G);
  if (n == 0) return;
  const double m = (double)ntotal * (double)(C / G);
  gn_forward_kernel<<<sf_gpu_blocks(n * C), SF_GPU_THREADS, 2 * (size_t)C * sizeof(float), s>>>(
      y, x, stats, gamma, beta, n, m, C, G, eps, relu);
  SF_LAUNCH_CHECK(gn_forward_kernel);
}

extern "C" void sf_cuda_groupnorm_backward_stats(sf_gpu_stream_t s, double *gsums, double *dgb, const float *dy,
                                                 const float *y, const float *x, const double *stats,
                                                 const float *gamma, size_t n, size_t ntotal, int C, int G, float eps,
                                                 int relu)
{
  check_groups(C, G);
  if (n == 0) return;
  const double m = (double)ntotal * (double)(C / G);
  const size_t shm = (2 * (size_t)C + 4 * (size_t)G) * sizeof(double);
  gn_backward_stats_kernel<<<sf_gpu_row_blocks(n, C), SF_GPU_THREADS, shm, s>>>(gsums, dgb, dy, y, x, stats, gamma, n,
                                                                              m, C, G, eps, relu);
  SF_LAUNCH_CHECK(gn_backward_stats_kernel);
}

extern "C" void sf_cuda_groupnorm_backward_data(sf_gpu_stream_t s, float *dx, const float *dy, const float *y,
                                                const float *x, const double *stats, const double *gsums,
                                                const float *gamma, size_t n, size_t ntotal, int C, int G, float eps,
                                                int relu)
{
  check_groups(C, G);
  if (n == 0) return;
  const double m = (double)ntotal * (double)(C / G);
  gn_backward_data_kernel<<<sf_gpu_blocks(n * C), SF_GPU_THREADS, 3 * (size_t)C * sizeof(float), s>>>(
      dx, dy, y, x, stats, gsums, gamma, n, m, C, G, eps, relu);
  SF_LAUNCH_CHECK(gn_backward_data_kernel);
}

extern "C" void sf_cuda_groupnorm_param_grads(sf_gpu_stream_t s, float *dgamma, float *dbeta, const double *dgb, int C)
{
  if (C <= 0) return;
  gn_param_grads_kernel<<<(C + SF_GPU_THREADS - 1) / SF_GPU_THREADS, SF_GPU_THREADS, 0, s>>>(dgamma, dbeta, dgb, C);
  SF_LAUNCH_CHECK(gn_param_grads_kernel);
}
