/* CPU emulation of the CUDA device side used by src/kernels/cuda (for the CTest gpu_kernels_emu): kernel
 * keywords, dim3 and the vector types, threadIdx/blockIdx/blockDim/gridDim, __syncthreads, atomics,
 * bit casts and the _rn intrinsics. Kernels are launched through sf_emu_launch (cu2cpp.py rewrites each
 * `k<<<g, b, shm, s>>>(args);`): the blocks run one after another, each block's threads as host threads
 * with a real barrier, so shared-memory reductions and races between a block's threads behave as on a
 * GPU. Dynamic shared memory is the arrays sh (double), shf (float) and cnt (unsigned long long), 48 KiB
 * each, as the kernels name it. */
#ifndef SF_EMU_CUDA_RUNTIME_H
#define SF_EMU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <functional>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct sf_emu_uint3 {
  unsigned x, y, z;
};
/* __thread, not thread_local: plain TLS without C++ init wrappers */
extern __thread sf_emu_uint3 threadIdx, blockIdx, blockDim, gridDim;

struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
static inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }

static inline unsigned __float_as_uint(float f)
{
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float __uint_as_float(unsigned u)
{
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }

void __syncthreads();
double atomicAdd(double *p, double v);
unsigned long long atomicAdd(unsigned long long *p, unsigned long long v);
int atomicExch(int *p, int v);

#define SF_EMU_SHARED_BYTES (48 * 1024)
extern double sh[];
extern float shf[];
extern unsigned long long cnt[];

/* Runs f as a grid of g blocks of b threads (synchronously); a bad configuration sets the error that
 * cudaGetLastError returns. */
void sf_emu_launch(dim3 g, dim3 b, size_t shmem, const std::function<void()> &f);
#endif

#endif
