/* Runtime support for the GPU kernels: error reporting, the per-thread device workspace (slots that
 * grow with stream-ordered cudaMallocAsync and are reused; a slot requested on another stream or
 * device is re-allocated there after a stream-ordered free, so no buffer is shared by two streams),
 * grid sizing, float -> bf16 conversion and double zero-fill. Where the driver has no stream-ordered
 * allocator, cudaMalloc is used and a growing slot synchronises its stream before freeing. One StarPU CUDA worker = one thread =
 * one stream, so the workspace is effectively per worker. */
#include <stdio.h>
#include <stdlib.h>

#include "gpu_common.h"

void sf_gpu_fail(const char *file, int line, const char *call, const char *msg)
{
  fprintf(stderr,
          "scaffold: %s error at %s:%d: %s: %s\n"
          "HINT: check that the device has enough free memory and that the kernel's inputs are device "
          "pointers; rerun with CUDA_LAUNCH_BLOCKING=1 to locate an asynchronous fault.\n",
          SF_GPU_VENDOR, file, line, call, msg);
  fflush(stderr);
  abort();
}

typedef struct {
  void *p;
  size_t bytes;
  cudaStream_t stream;
  int device;
  int async; /* allocated with cudaMallocAsync (else cudaMalloc) */
} ws_slot;

static thread_local ws_slot g_ws[SF_GPU_WS_SLOTS];
static int g_no_async_alloc; /* set once cudaMallocAsync reports that it is not supported */

static void ws_free(ws_slot *w)
{
  if (!w->p) return;
  if (w->async) {
    SF_CUDA_CHECK(cudaFreeAsync(w->p, w->stream));
  } else {
    SF_CUDA_CHECK(cudaStreamSynchronize(w->stream)); /* queued work may still read it */
    SF_CUDA_CHECK(cudaFree(w->p));
  }
  w->p = NULL;
  w->bytes = 0;
}

void *sf_gpu_ws(int slot, size_t bytes, cudaStream_t s)
{
  if (slot < 0 || slot >= SF_GPU_WS_SLOTS) sf_gpu_fail(__FILE__, __LINE__, "sf_gpu_ws", "bad workspace slot");
  ws_slot *w = &g_ws[slot];
  int dev = 0;
  SF_CUDA_CHECK(cudaGetDevice(&dev));
  if (w->p && w->bytes >= bytes && w->stream == s && w->device == dev) return w->p;
  size_t want = bytes < 256 ? 256 : bytes;
  if (w->p && w->stream == s && w->device == dev && want < w->bytes + w->bytes / 4) want = w->bytes + w->bytes / 4;
  ws_free(w);
  w->async = 0;
  if (!g_no_async_alloc) {
    cudaError_t e = cudaMallocAsync(&w->p, want, s);
    if (e == cudaSuccess) {
      w->async = 1;
    } else if (e == cudaErrorNotSupported) { /* no stream-ordered allocator (some virtualised drivers) */
      (void)cudaGetLastError();
      g_no_async_alloc = 1;
      w->p = NULL;
    } else {
      sf_gpu_fail(__FILE__, __LINE__, "cudaMallocAsync(workspace)", cudaGetErrorString(e));
    }
  }
  if (!w->async) SF_CUDA_CHECK(cudaMalloc(&w->p, want));
  w->bytes = want;
  w->stream = s;
  w->device = dev;
  return w->p;
}

extern "C" void sf_cuda_thread_release(void)
{
  for (int i = 0; i < SF_GPU_WS_SLOTS; i++) {
    ws_slot *w = &g_ws[i];
    if (!w->p) continue;
    cudaStream_t st = w->stream;
    ws_free(w);
    SF_CUDA_CHECK(cudaStreamSynchronize(st));
  }
#ifdef SF_HAVE_CUDNN
  sf_gpu_dnn_release();
#endif
}

extern "C" size_t sf_cuda_thread_workspace_bytes(void)
{
  size_t b = 0;
  for (int i = 0; i < SF_GPU_WS_SLOTS; i++) b += g_ws[i].bytes;
  return b;
}

extern "C" int sf_cuda_have_cudnn(void)
{
#ifdef SF_HAVE_CUDNN
  return 1;
#else
  return 0;
#endif
}

int sf_gpu_sm_count(void)
{
  static int cache[64];
  int dev = 0;
  SF_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) dev = 0;
  if (cache[dev] <= 0) {
    int n = 0;
    SF_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    cache[dev] = n > 0 ? n : 1;
  }
  return cache[dev];
}

unsigned sf_gpu_blocks(size_t work)
{
  size_t b = (work + SF_GPU_THREADS - 1) / SF_GPU_THREADS;
  size_t cap = (size_t)sf_gpu_sm_count() * 16;
  if (b > cap) b = cap;
  return (unsigned)(b ? b : 1);
}

unsigned sf_gpu_row_blocks(size_t n, int C)
{
  const size_t ct = (size_t)C < SF_GPU_THREADS ? (size_t)C : SF_GPU_THREADS, vpb = SF_GPU_THREADS / ct;
  return sf_gpu_blocks((n + vpb - 1) / vpb * SF_GPU_THREADS);
}

static __global__ void to_bf16_kernel(uint16_t *dst, const float *src, size_t n)
{
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = sf_f2bf(src[i]);
}

void sf_gpu_to_bf16(uint16_t *dst, const float *src, size_t n, cudaStream_t s)
{
  if (n == 0) return;
  to_bf16_kernel<<<sf_gpu_blocks(n), SF_GPU_THREADS, 0, s>>>(dst, src, n);
  SF_LAUNCH_CHECK(to_bf16_kernel);
}

const uint16_t *sf_gpu_bf16_copy(int slot, const float *src, size_t n, cudaStream_t s)
{
  uint16_t *d = (uint16_t *)sf_gpu_ws(slot, n * sizeof(uint16_t), s);
  sf_gpu_to_bf16(d, src, n, s);
  return d;
}

void sf_gpu_zero_d(double *dst, size_t n, cudaStream_t s)
{
  if (n) SF_CUDA_CHECK(cudaMemsetAsync(dst, 0, n * sizeof(double), s));
}

/* sums: (C) double += column sums over rows [blockIdx.x*vpb + lane_v, ...) of x: (n,C). Dynamic
 * shared memory: C doubles. */
static __global__ void colsum_kernel(double *sums, const float *__restrict__ x, size_t n, int C)
{
  extern __shared__ double sh[];
  const sf_lanes l = sf_lanes_of(C);
  for (int c = threadIdx.x; c < C; c += blockDim.x) sh[c] = 0.0;
  __syncthreads();
  if (l.active)
    for (int c = l.lane_c; c < C; c += l.ct) {
      double a = 0.0;
      for (size_t i = (size_t)blockIdx.x * l.vpb + l.lane_v; i < n; i += (size_t)gridDim.x * l.vpb)
        a += x[i * C + c];
      atomicAdd(&sh[c], a);
    }
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += blockDim.x) atomicAdd(&sums[c], sh[c]);
}

static __global__ void add_sums_kernel(float *db, const double *sums, int C)
{
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < C; c += gridDim.x * blockDim.x) db[c] += (float)sums[c];
}

void sf_gpu_colsum_add(float *db, const float *x, size_t n, int C, cudaStream_t s)
{
  double *sums = (double *)sf_gpu_ws(SF_WS_SUMS, (size_t)C * sizeof(double), s);
  sf_gpu_zero_d(sums, (size_t)C, s);
  if (n > 0) {
    colsum_kernel<<<sf_gpu_row_blocks(n, C), SF_GPU_THREADS, (size_t)C * sizeof(double), s>>>(sums, x, n, C);
    SF_LAUNCH_CHECK(colsum_kernel);
  }
  add_sums_kernel<<<(C + SF_GPU_THREADS - 1) / SF_GPU_THREADS, SF_GPU_THREADS, 0, s>>>(db, sums, C);
  SF_LAUNCH_CHECK(add_sums_kernel);
}
