/* Vector helpers of the direct small-GEMM kernels (gemm_direct.c), one family per CPU kernel set:
 * v16_ (AVX-512F, 16 floats), v8_ (AVX2 + FMA, 8 floats), v4_ (portable GCC vector extension, 4
 * floats, compiled for the build's target). Each family has the same names after its prefix, so
 * gemm_direct_body.h is written once and instantiated per family:
 *   _t vector, _mask lanes [0, n) for a partial vector, _mask_of(n), _load, _loadn (zero-filled
 *   lanes >= n), _store, _storen (lanes < n only), _set1, _fma(a, b, c) = a*b + c, _zero. */
#ifndef SF_GEMM_DIRECT_VEC_H
#define SF_GEMM_DIRECT_VEC_H

#include <string.h>

#define SF_GD_CAT_(a, b) a##b
#define SF_GD_CAT(a, b) SF_GD_CAT_(a, b)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SF_GD_HAVE_X86 1

#define SF_V16 __attribute__((target("avx512f,fma"), always_inline)) static inline
typedef __m512 v16_t;
typedef __mmask16 v16_mask;
SF_V16 v16_mask v16_mask_of(int n) { return (__mmask16)((1u << n) - 1u); }
SF_V16 v16_t v16_load(const float *p) { return _mm512_loadu_ps(p); }
SF_V16 v16_t v16_loadn(const float *p, v16_mask m) { return _mm512_maskz_loadu_ps(m, p); }
SF_V16 void v16_store(float *p, v16_t v) { _mm512_storeu_ps(p, v); }
SF_V16 void v16_storen(float *p, v16_t v, v16_mask m) { _mm512_mask_storeu_ps(p, m, v); }
SF_V16 v16_t v16_set1(float a) { return _mm512_set1_ps(a); }
SF_V16 v16_t v16_fma(v16_t a, v16_t b, v16_t c) { return _mm512_fmadd_ps(a, b, c); }
SF_V16 v16_t v16_zero(void) { return _mm512_setzero_ps(); }

#define SF_V8 __attribute__((target("avx2,fma"), always_inline)) static inline
typedef __m256 v8_t;
typedef __m256i v8_mask;
SF_V8 v8_mask v8_mask_of(int n)
{
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
SF_V8 v8_t v8_load(const float *p) { return _mm256_loadu_ps(p); }
SF_V8 v8_t v8_loadn(const float *p, v8_mask m) { return _mm256_maskload_ps(p, m); }
SF_V8 void v8_store(float *p, v8_t v) { _mm256_storeu_ps(p, v); }
SF_V8 void v8_storen(float *p, v8_t v, v8_mask m) { _mm256_maskstore_ps(p, m, v); }
SF_V8 v8_t v8_set1(float a) { return _mm256_set1_ps(a); }
SF_V8 v8_t v8_fma(v8_t a, v8_t b, v8_t c) { return _mm256_fmadd_ps(a, b, c); }
SF_V8 v8_t v8_zero(void) { return _mm256_setzero_ps(); }
#else
#define SF_GD_HAVE_X86 0
#endif

#define SF_V4 __attribute__((always_inline)) static inline
typedef float v4_t __attribute__((vector_size(16)));
typedef int v4_mask;
SF_V4 v4_mask v4_mask_of(int n) { return n; }
SF_V4 v4_t v4_load(const float *p)
{
  v4_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
SF_V4 v4_t v4_loadn(const float *p, v4_mask n) /* lane by lane: a memcpy of n floats is a libc call */
{
  v4_t v = {0, 0, 0, 0};
  for (int i = 0; i < n; i++) v[i] = p[i];
  return v;
}
SF_V4 void v4_store(float *p, v4_t v) { memcpy(p, &v, sizeof v); }
SF_V4 void v4_storen(float *p, v4_t v, v4_mask n)
{
  for (int i = 0; i < n; i++) p[i] = v[i];
}
SF_V4 v4_t v4_set1(float a) { return (v4_t){a, a, a, a}; }
SF_V4 v4_t v4_fma(v4_t a, v4_t b, v4_t c) { return a * b + c; }
SF_V4 v4_t v4_zero(void) { return (v4_t){0, 0, 0, 0}; }

/* Row-count lists for the register-block tables: M(R, NV, T) for R = 1 .. 4, 6 or 12 */
#define SF_GD_ROWS_4(M, NV, T) M(1, NV, T) M(2, NV, T) M(3, NV, T) M(4, NV, T)
#define SF_GD_ROWS_6(M, NV, T) SF_GD_ROWS_4(M, NV, T) M(5, NV, T) M(6, NV, T)
#define SF_GD_ROWS_12(M, NV, T)                                                                                \
  SF_GD_ROWS_6(M, NV, T) M(7, NV, T) M(8, NV, T) M(9, NV, T) M(10, NV, T) M(11, NV, T) M(12, NV, T)

#endif
