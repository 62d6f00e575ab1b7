/* Memory-bound layers on the GPU: standalone ReLU, MaxPool3d 2x2x2 (forward saves the argmax offset
 * a*4+p*2+q; first maximum in scan order wins, NaN propagates, as in src/kernels/maxpool3d/maxpool3d_ref.c), and
 * the channel concatenation of the Up block (NDHWC rows [a | b]). One thread per output element in
 * grid-stride loops; indices are 32-bit when the tensor has fewer than 2^32 elements (templated). */
#include <math.h>

#include "gpu_common.h"

static __global__ void relu_fwd_kernel(float *y, const float *x, size_t n)
{
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

static __global__ void relu_bwd_kernel(float *__restrict__ dx, const float *__restrict__ dy, const float *__restrict__ y,
                                       size_t n)
{
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* x: (2nd,2H,2W,C); y, idx: (nd,H,W,C); total = nd*H*W*C. H, W are OUTPUT sizes. */
template <typename I>
static __global__ void maxpool_fwd_kernel(float *__restrict__ y, uint8_t *__restrict__ idx, const float *__restrict__ x,
                                          I total, int H, int W, int C)
{
  const size_t sw = (size_t)C, sh = 2 * (size_t)W * sw, sd = 2 * (size_t)H * sh;
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (I)gridDim.x * blockDim.x) {
    const I vox = e / (I)C, t = vox / (I)W;
    const int c = (int)(e - vox * (I)C), w = (int)(vox - t * (I)W), h = (int)(t % (I)H), d = (int)(t / (I)H);
    const float *base = x + 2 * (size_t)d * sd + 2 * (size_t)h * sh + 2 * (size_t)w * sw + c;
    float best = -INFINITY;
    int bi = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) {
      float v = base[(size_t)(k >> 2) * sd + (size_t)((k >> 1) & 1) * sh + (size_t)(k & 1) * sw];
      if (v > best || isnan(v)) {
        best = v;
        bi = k;
      }
    }
    y[e] = best;
    idx[e] = (uint8_t)bi;
  }
}

/* dx: (2nd,2H,2W,C) written: dy at each window's argmax, 0 elsewhere. */
template <typename I>
static __global__ void maxpool_bwd_kernel(float *__restrict__ dx, const float *__restrict__ dy,
                                          const uint8_t *__restrict__ idx, I total, int H, int W, int C)
{
  const size_t sw = (size_t)C, sh = 2 * (size_t)W * sw, sd = 2 * (size_t)H * sh;
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (I)gridDim.x * blockDim.x) {
    const I vox = e / (I)C, t = vox / (I)W;
    const int c = (int)(e - vox * (I)C), w = (int)(vox - t * (I)W), h = (int)(t % (I)H), d = (int)(t / (I)H);
    float *base = dx + 2 * (size_t)d * sd + 2 * (size_t)h * sh + 2 * (size_t)w * sw + c;
    const float g = dy[e];
    const int bi = idx[e];
#pragma unroll
    for (int k = 0; k < 8; k++) base[(size_t)(k >> 2) * sd + (size_t)((k >> 1) & 1) * sh + (size_t)(k & 1) * sw] = bi == k ? g : 0.0f;
  }
}

/* y: (n, Ca+Cb) from a: (n,Ca), b: (n,Cb); total = n*(Ca+Cb) */
template <typename I>
static __global__ void concat_fwd_kernel(float *__restrict__ y, const float *__restrict__ a, const float *__restrict__ b,
                                         I total, int Ca, int Cb)
{
  const I C = (I)Ca + (I)Cb;
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (I)gridDim.x * blockDim.x) {
    const I i = e / C;
    const int c = (int)(e - i * C);
    y[e] = c < Ca ? a[(size_t)i * Ca + c] : b[(size_t)i * Cb + (c - Ca)];
  }
}

template <typename I>
static __global__ void concat_bwd_kernel(float *__restrict__ da, float *__restrict__ db, const float *__restrict__ dy,
                                         I total, int Ca, int Cb)
{
  const I C = (I)Ca + (I)Cb;
  for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (I)gridDim.x * blockDim.x) {
    const I i = e / C;
    const int c = (int)(e - i * C);
    if (c < Ca) da[(size_t)i * Ca + c] = dy[e];
    else db[(size_t)i * Cb + (c - Ca)] = dy[e];
  }
}

static int small(size_t total) { return total < ((size_t)1 << 32) - ((size_t)1 << 28); }

extern "C" void sf_cuda_relu_forward(sf_gpu_stream_t s, float *y, const float *x, size_t n)
{
  if (n == 0) return;
  relu_fwd_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(y, x, n);
  SF_LAUNCH_CHECK(relu_fwd_kernel);
}

extern "C" void sf_cuda_relu_backward(sf_gpu_stream_t s, float *dx, const float *dy, const float *y, size_t n)
{
  if (n == 0) return;
  relu_bwd_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(dx, dy, y, n);
  SF_LAUNCH_CHECK(relu_bwd_kernel);
}

extern "C" void sf_cuda_maxpool3d_forward(sf_gpu_stream_t s, float *y, uint8_t *idx, const float *x, int nd, int H,
                                          int W, int C)
{
  const size_t total = (size_t)nd * H * W * C;
  if (total == 0) return;
  if (small(total))
    maxpool_fwd_kernel<unsigned><<<sf_gpu_blocks(total), SF_GPU_THREADS, 0, s>>>(y, idx, x, (unsigned)total, H, W, C);
  else
    maxpool_fwd_kernel<size_t><<<sf_gpu_blocks(total), SF_GPU_THREADS, 0, s>>>(y, idx, x, total, H, W, C);
  SF_LAUNCH_CHECK(maxpool_fwd_kernel);
}

extern "C" void sf_cuda_maxpool3d_backward(sf_gpu_stream_t s, float *dx, const float *dy, const uint8_t *idx, int nd,
                                           int H, int W, int C)
{
  const size_t total = (size_t)nd * H * W * C;
  if (total == 0) return;
  if (small(total))
    maxpool_bwd_kernel<unsigned><<<sf_gpu_blocks(total), SF_GPU_THREADS, 0, s>>>(dx, dy, idx, (unsigned)total, H, W, C);
  else
    maxpool_bwd_kernel<size_t><<<sf_gpu_blocks(total), SF_GPU_THREADS, 0, s>>>(dx, dy, idx, total, H, W, C);
  SF_LAUNCH_CHECK(maxpool_bwd_kernel);
}

extern "C" void sf_cuda_concat_forward(sf_gpu_stream_t s, float *y, const float *a, const float *b, size_t n, int Ca,
                                       int Cb)
{
  const size_t total = n * ((size_t)Ca + (size_t)Cb);
  if (total == 0) return;
  if (small(total))
    concat_fwd_kernel<unsigned><<<sf_gpu_blocks(total), SF_GPU_THREADS, 0, s>>>(y, a, b, (unsigned)total, Ca, Cb);
  else
    concat_fwd_kernel<size_t><<<sf_gpu_blocks(total), SF_GPU_THREADS, 0, s>>>(y, a, b, total, Ca, Cb);
  SF_LAUNCH_CHECK(concat_fwd_kernel);
}

extern "C" void sf_cuda_concat_backward(sf_gpu_stream_t s, float *da, float *db, const float *dy, size_t n, int Ca,
                                        int Cb)
{
  const size_t total = n * ((size_t)Ca + (size_t)Cb);
  if (total == 0) return;
  if (small(total))
    concat_bwd_kernel<unsigned><<<sf_gpu_blocks(total), SF_GPU_THREADS, 0, s>>>(da, db, dy, (unsigned)total, Ca, Cb);
  else
    concat_bwd_kernel<size_t><<<sf_gpu_blocks(total), SF_GPU_THREADS, 0, s>>>(da, db, dy, total, Ca, Cb);
  SF_LAUNCH_CHECK(concat_bwd_kernel);
}
