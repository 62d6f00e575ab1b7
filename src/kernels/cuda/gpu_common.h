/* Internal helpers shared by the GPU kernels in src/kernels/cuda/<op>.cu: error checks that report file:line
 * (every launch is followed by SF_LAUNCH_CHECK), the per-thread device workspace, grid sizing for
 * grid-stride loops, bfloat16 rounding, and a block-wide double reduction. Not a public header: the
 * launchers' interface is include/scaffold/ops_cuda.h. */
#ifndef SF_GPU_COMMON_H
#define SF_GPU_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "scaffold/gpu_vendor.h"
#include "scaffold/ops_cuda.h"

/* Budget of one im2col / gather chunk in bytes (the rest of a slab is processed in further chunks). */
#ifndef SF_GPU_COL_BYTES
#define SF_GPU_COL_BYTES ((size_t)512 << 20)
#endif
#ifndef SF_GPU_THREADS
#define SF_GPU_THREADS 256 /* threads per block (a power of two) */
#endif
#define SF_GPU_WS_SLOTS 8

/* GEMM / convolution precision: fp32 data with strict fp32 math, bf16 data with fp32 accumulation,
 * fp32 data with TF32 tensor-core math. */
enum { SF_PREC_FP32 = 0, SF_PREC_BF16 = 1, SF_PREC_TF32 = 2 };
static inline int sf_gpu_prec(unsigned flags)
{
  return (flags & SF_GPU_BF16) ? SF_PREC_BF16 : (flags & SF_GPU_TF32) ? SF_PREC_TF32 : SF_PREC_FP32;
}

/* Workspace slots (one op uses several at once; ops run one after another on a thread's stream). */
enum { SF_WS_COL = 0, SF_WS_WEIGHTS = 1, SF_WS_BF16_A = 2, SF_WS_DNN = 3, SF_WS_TMP = 4, SF_WS_SUMS = 5,
       SF_WS_BF16_B = 6, SF_WS_XA = 7 };

/* 3x3x3 convolution directions and the cuDNN engine (conv3d_cudnn.cu, built with SF_HAVE_CUDNN):
 * fwd: out = y, (lo,mid,hi) = x, other = w;  bwd_data: out = dx, (lo,mid,hi) = dy, other = w;
 * bwd_weights: out = dw (accumulated), (lo,mid,hi) = x, other = dy. Sizes as in ops.h. Returns 0, or -1
 * when cuDNN cannot run the shape (the caller then uses im2col + cuBLAS). */
enum { SF_CONV_FWD = 0, SF_CONV_BWD_DATA = 1, SF_CONV_BWD_WEIGHTS = 2 };
int sf_gpu_conv3d_cudnn(int dir, cudaStream_t s, int prec, float *out, const float *lo, const float *mid,
                        const float *hi, const float *other, int nd, int H, int W, int Cin, int Cout);
void sf_gpu_dnn_release(void);

/* Reports a failed GPU call (file:line, the call, the library's message, a hint) and aborts. */
__attribute__((noreturn)) void sf_gpu_fail(const char *file, int line, const char *call, const char *msg);

#define SF_CUDA_CHECK(call)                                                                           \
  do {                                                                                                \
    cudaError_t sf_e_ = (call);                                                                       \
    if (sf_e_ != cudaSuccess) sf_gpu_fail(__FILE__, __LINE__, #call, cudaGetErrorString(sf_e_));      \
  } while (0)
#define SF_LAUNCH_CHECK(kernel)                                                                       \
  do {                                                                                                \
    cudaError_t sf_e_ = cudaGetLastError();                                                           \
    if (sf_e_ != cudaSuccess) sf_gpu_fail(__FILE__, __LINE__, "launch of " #kernel, cudaGetErrorString(sf_e_)); \
  } while (0)

/* A device buffer of at least `bytes` bytes in this thread's workspace slot, valid for work queued
 * on stream s after this call (contents undefined). Grows with stream-ordered allocation. */
void *sf_gpu_ws(int slot, size_t bytes, cudaStream_t s);
/* Blocks for a grid-stride loop over `work` items with SF_GPU_THREADS threads a block. */
unsigned sf_gpu_blocks(size_t work);
/* Blocks for a per-channel reduction over (n,C) rows with sf_lanes (below). */
unsigned sf_gpu_row_blocks(size_t n, int C);
/* Multiprocessors of the current device (cached). */
int sf_gpu_sm_count(void);

/* dst: (n) bf16 bits = round-to-nearest-even(src: (n) float), on stream s. */
void sf_gpu_to_bf16(uint16_t *dst, const float *src, size_t n, cudaStream_t s);
/* A bf16 copy of src: (n) in workspace slot `slot`. */
const uint16_t *sf_gpu_bf16_copy(int slot, const float *src, size_t n, cudaStream_t s);
/* dst: (n) double = 0, on stream s. */
void sf_gpu_zero_d(double *dst, size_t n, cudaStream_t s);
/* db: (C) += column sums of x: (n,C), summed in double (bias gradients). */
void sf_gpu_colsum_add(float *db, const float *x, size_t n, int C, cudaStream_t s);

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(SF_GPU_EMU)
/* float -> bfloat16 bits, round to nearest even, NaN kept quiet (same as torch's conversion). */
__device__ __forceinline__ uint16_t sf_f2bf(float f)
{
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
__device__ __forceinline__ float sf_bf2f(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

/* Value conversion for templated kernels writing float or bf16 bits. */
template <typename T> __device__ __forceinline__ T sf_cvt(float v);
template <> __device__ __forceinline__ float sf_cvt<float>(float v) { return v; }
template <> __device__ __forceinline__ uint16_t sf_cvt<uint16_t>(float v) { return sf_f2bf(v); }
template <typename T> __device__ __forceinline__ float sf_tof(T v);
template <> __device__ __forceinline__ float sf_tof<float>(float v) { return v; }
template <> __device__ __forceinline__ float sf_tof<uint16_t>(uint16_t v) { return sf_bf2f(v); }

/* Channel lanes of a per-channel reduction over (n,C) rows: thread t handles channels
 * c = t % ct (+ ct, + 2ct, ...) of rows r = t / ct (+ vpb per block step); ct = min(C, blockDim). */
struct sf_lanes {
  int ct, vpb, lane_c, lane_v, active;
};
__device__ __forceinline__ sf_lanes sf_lanes_of(int C)
{
  sf_lanes l;
  l.ct = C < (int)blockDim.x ? C : (int)blockDim.x;
  l.vpb = (int)blockDim.x / l.ct;
  l.lane_c = (int)threadIdx.x % l.ct;
  l.lane_v = (int)threadIdx.x / l.ct;
  l.active = l.lane_v < l.vpb;
  return l;
}

/* Sum of v over the block (blockDim.x <= SF_GPU_THREADS, a power of two); valid in thread 0.
 * sh: SF_GPU_THREADS doubles of shared memory. Ends with a barrier so sh can be reused. */
__device__ __forceinline__ double sf_block_sum(double v, double *sh)
{
  const unsigned t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] += sh[t + s];
    __syncthreads();
  }
  double r = sh[0];
  __syncthreads();
  return r;
}
#endif

#endif
