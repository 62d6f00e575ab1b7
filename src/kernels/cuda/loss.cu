/* Training loss (class-weighted CE + 1 - soft foreground Dice) and the hard validation Dice on the
 * GPU, in the partial-sum form of ops.h (slabs reduce to the untiled values). One thread per voxel:
 * log-softmax / softmax in double from the float logits (max-subtracted), as in src/kernels/loss/loss_ref.c.
 * Per-class sums go through shared-memory double atomics, the two CE sums through a block reduction,
 * then one global double atomicAdd per accumulator and block. Hard-Dice counts are exact integers.
 * Labels >= K: the CPU aborts; here the sums (or the gradient row) become NaN and a device message
 * is printed once per process. Layout: z (n,K) logits, voxels x classes. */
#include <math.h>
#include <stdio.h>

#include "gpu_common.h"
extern "C" {
#include "scaffold/ops.h" /* SF_DICE_EPS */
}

static __device__ int g_bad_label_reported;

__device__ static void report_bad_label(const char *what, unsigned label, size_t i, int K)
{
  if (atomicExch(&g_bad_label_reported, 1) == 0)
    printf("scaffold: %s: label %u at voxel %llu is out of range 0..%d (results set to NaN)\n", what, label,
           (unsigned long long)i, K - 1);
}

/* max (NaN wins) and sum of exp(z - max) of one voxel row */
__device__ __forceinline__ void softmax_terms(const float *zi, int K, double *mx, double *s)
{
  double m = zi[0];
  for (int k = 1; k < K; k++)
    if (zi[k] > m || isnan(zi[k])) m = zi[k];
  double a = 0.0;
  for (int k = 0; k < K; k++) a += exp((double)zi[k] - m);
  *mx = m;
  *s = a;
}

/* acc: (2+3K) += CE and soft-Dice sums. Shared: 2+3K doubles + SF_GPU_THREADS doubles (reduction). */
static __global__ void loss_partial_kernel(double *acc, const float *__restrict__ z, const uint16_t *__restrict__ lab,
                                           const float *__restrict__ cw, size_t n, int K)
{
  extern __shared__ double sh[];
  const int nacc = 2 + 3 * K;
  double *red = sh + nacc;
  for (int j = threadIdx.x; j < nacc; j += blockDim.x) sh[j] = 0.0;
  __syncthreads();
  double a0 = 0.0, a1 = 0.0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float *zi = z + i * K;
    const int y = lab[i];
    if (y >= K) {
      report_bad_label("loss", (unsigned)y, i, K);
      a0 = a1 = NAN;
      continue;
    }
    double mx, s;
    softmax_terms(zi, K, &mx, &s);
    const double w = cw[y], inv = 1.0 / s;
    a0 += w * (mx + log(s) - (double)zi[y]);
    a1 += w;
    for (int k = 0; k < K; k++) {
      double p = exp((double)zi[k] - mx) * inv;
      atomicAdd(&sh[2 + 3 * k + 1], p);
      if (k == y) atomicAdd(&sh[2 + 3 * k], p);
    }
    atomicAdd(&sh[2 + 3 * y + 2], 1.0);
  }
  a0 = sf_block_sum(a0, red);
  a1 = sf_block_sum(a1, red);
  if (threadIdx.x == 0) {
    sh[0] += a0;
    sh[1] += a1;
  }
  __syncthreads();
  for (int j = threadIdx.x; j < nacc; j += blockDim.x) atomicAdd(&acc[j], sh[j]);
}

/* dz: (n,K) = scale * dloss/dz from the global acc (see src/kernels/loss/loss_ref.c); a batch: the CE
 * denominator is *wsum (the batch's pooled weight sum) and the Dice term is divided by batch.
 * Shared: 2K doubles. */
static __global__ void loss_backward_kernel(float *__restrict__ dz, const float *__restrict__ z,
                                            const uint16_t *__restrict__ lab, const float *__restrict__ cw,
                                            const double *acc, const double *wsum, int batch, size_t n, int K,
                                            float scale)
{
  extern __shared__ double sh[];
  double *ga = sh, *gb = sh + K; /* g_k = gb[k] + ga[k]*Y_k */
  const double inv_fg = 1.0 / ((double)(K - 1) * batch);
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    ga[k] = gb[k] = 0.0;
    if (k == 0) continue;
    const double I = 2.0 * acc[2 + 3 * k], S0 = acc[2 + 3 * k + 1] + acc[2 + 3 * k + 2];
    if (S0 == 0.0) continue;
    const double se = S0 + SF_DICE_EPS;
    ga[k] = -inv_fg * 2.0 / se;
    gb[k] = inv_fg * (I + SF_DICE_EPS) / (se * se);
  }
  __syncthreads();
  const double inv_w = 1.0 / (wsum ? *wsum : acc[1]);
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float *zi = z + i * K;
    float *dzi = dz + i * K;
    const int y = lab[i];
    if (y >= K) {
      report_bad_label("loss backward", (unsigned)y, i, K);
      for (int k = 0; k < K; k++) dzi[k] = NAN;
      continue;
    }
    double mx, s;
    softmax_terms(zi, K, &mx, &s);
    const double inv = 1.0 / s;
    double pg = exp((double)zi[y] - mx) * inv * ga[y];
    for (int k = 0; k < K; k++) pg += exp((double)zi[k] - mx) * inv * gb[k];
    const double wc = (double)cw[y] * inv_w;
    for (int k = 0; k < K; k++) {
      const double p = exp((double)zi[k] - mx) * inv;
      const double gk = gb[k] + (k == y ? ga[k] : 0.0);
      const double d = wc * (p - (k == y ? 1.0 : 0.0)) + p * (gk - pg);
      dzi[k] = (float)((double)scale * d);
    }
  }
}

/* acc[0] += sum w[lab] over the voxels (a part of the batch's pooled CE weight sum). Shared:
 * SF_GPU_THREADS doubles (reduction). */
static __global__ void loss_weight_sum_kernel(double *acc, const uint16_t *__restrict__ lab,
                                              const float *__restrict__ cw, size_t n, int K)
{
  extern __shared__ double sh[];
  double a = 0.0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const int y = lab[i];
    if (y >= K) {
      report_bad_label("loss weight sum", (unsigned)y, i, K);
      a = NAN;
      continue;
    }
    a += cw[y];
  }
  a = sf_block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd(acc, a);
}

/* acc: (K,3) += [TP, predicted, labelled] counts. Shared: 3K unsigned long long. */
static __global__ void dice_hard_kernel(double *acc, const float *__restrict__ z, const uint16_t *__restrict__ lab,
                                        size_t n, int K)
{
  extern __shared__ unsigned long long cnt[];
  for (int j = threadIdx.x; j < 3 * K; j += blockDim.x) cnt[j] = 0ull;
  __syncthreads();
  int bad = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float *zi = z + i * K;
    int best = 0;
    float bv = zi[0];
    for (int k = 1; k < K; k++)
      if (zi[k] > bv || (isnan(zi[k]) && !isnan(bv))) {
        bv = zi[k];
        best = k;
      }
    const int y = lab[i];
    if (y >= K) {
      report_bad_label("dice", (unsigned)y, i, K);
      bad = 1;
      continue;
    }
    atomicAdd(&cnt[3 * best + 1], 1ull);
    atomicAdd(&cnt[3 * y + 2], 1ull);
    if (best == y) atomicAdd(&cnt[3 * y], 1ull);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < 3 * K; j += blockDim.x)
    if (cnt[j]) atomicAdd(&acc[j], (double)cnt[j]);
  if (bad) atomicAdd(&acc[3 + 2], (double)NAN);
}

static void check_k(int K, const char *what)
{
  if (K < 2 || K > 4096) sf_gpu_fail(__FILE__, __LINE__, what, "need 2 <= K <= 4096 classes");
}

extern "C" void sf_cuda_loss_partial(sf_gpu_stream_t s, double *acc, const float *z, const uint16_t *lab,
                                     const float *cw, size_t n, int K)
{
  check_k(K, "loss");
  if (n == 0) return;
  const size_t shm = ((size_t)2 + 3 * (size_t)K + SF_GPU_THREADS) * sizeof(double);
  loss_partial_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, shm, s>>>(acc, z, lab, cw, n, K);
  SF_LAUNCH_CHECK(loss_partial_kernel);
}

extern "C" void sf_cuda_loss_backward(sf_gpu_stream_t s, float *dz, const float *z, const uint16_t *lab,
                                      const float *cw, const double *acc, size_t n, int K, float scale)
{
  sf_cuda_loss_backward_batch(s, dz, z, lab, cw, acc, NULL, 1, n, K, scale);
}

extern "C" void sf_cuda_loss_backward_batch(sf_gpu_stream_t s, float *dz, const float *z, const uint16_t *lab,
                                            const float *cw, const double *acc, const double *wsum, int batch,
                                            size_t n, int K, float scale)
{
  check_k(K, "loss backward");
  if (batch < 1) sf_gpu_fail(__FILE__, __LINE__, "loss backward", "need a batch of at least 1 sample");
  if (n == 0) return;
  loss_backward_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 2 * (size_t)K * sizeof(double), s>>>(dz, z, lab, cw, acc,
                                                                                                wsum, batch, n, K,
                                                                                                scale);
  SF_LAUNCH_CHECK(loss_backward_kernel);
}

extern "C" void sf_cuda_loss_weight_sum(sf_gpu_stream_t s, double *acc, const uint16_t *lab, const float *cw, size_t n,
                                        int K)
{
  check_k(K, "loss weight sum");
  if (n == 0) return;
  loss_weight_sum_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, SF_GPU_THREADS * sizeof(double), s>>>(acc, lab, cw, n, K);
  SF_LAUNCH_CHECK(loss_weight_sum_kernel);
}

extern "C" void sf_cuda_dice_hard_partial(sf_gpu_stream_t s, double *acc, const float *z, const uint16_t *lab,
                                          size_t n, int K)
{
  check_k(K, "dice");
  if (n == 0) return;
  dice_hard_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 3 * (size_t)K * sizeof(unsigned long long), s>>>(acc, z, lab,
                                                                                                        n, K);
  SF_LAUNCH_CHECK(dice_hard_kernel);
}
