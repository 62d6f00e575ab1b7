/* Streaming (non-temporal) stores for the memory-bound kernels whose output outgrows a core's L2 (concat, ...):
 * a plain store first reads the line it writes (read for ownership), so copying 1 MiB moved 3 MiB; a streaming
 * store writes the line without reading it. Below SF_STREAM_MIN_BYTES the output may still be in cache for the
 * next task, so plain stores stay. The writer ends with sf_stream_fence, which orders the streamed lines before
 * the task's end. SSE2 is in every x86-64, so no dispatch; elsewhere plain copies. */
#ifndef SF_STREAM_STORE_H
#define SF_STREAM_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define SF_STREAM_MIN_BYTES ((size_t)1 << 20)

/* 1 when an output of `bytes` at dst should be streamed by a writer whose streaming stores need `align` bytes
 * (16: sf_stream_floats, in runs of floats that are multiples of 4 from 16-byte aligned places; 64: whole
 * AVX-512 vectors) */
static inline int sf_stream_worth(const void *dst, size_t bytes, size_t align)
{
#if defined(__x86_64__)
  return bytes >= SF_STREAM_MIN_BYTES && ((uintptr_t)dst & (align - 1)) == 0;
#else
  (void)dst, (void)bytes, (void)align;
  return 0;
#endif
}

/* dst[0..n) = src[0..n), dst 16-byte aligned, n a multiple of 4 */
static inline void sf_stream_floats(float *restrict dst, const float *restrict src, size_t n)
{
#if defined(__x86_64__)
  for (size_t i = 0; i < n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
#else
  memcpy(dst, src, n * sizeof(float));
#endif
}

static inline void sf_stream_fence(void)
{
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

#endif
