/* The vector operations of one CPU kernel set, for the direct convolution template
 * (conv3d_direct_tiles.h): define SF_DIRECT_ISA to SF_DIRECT_SET_AVX512, _AVX2 or _C, then
 * include this. Gives the vector type SF_VEC of SF_VW floats, SF_VTARGET (the function attribute
 * enabling that set), SF_VMAX_R (register-block rows that fit the register file with two vectors
 * per row) and load/store/zero/broadcast/add/subtract/multiply/fused multiply-add. */
#ifndef SF_CONV3D_DIRECT_VEC_H
#define SF_CONV3D_DIRECT_VEC_H

#include <string.h>


#if SF_DIRECT_ISA == SF_DIRECT_SET_AVX512 /* 32 zmm: 12 rows x 2 accumulators + 2 weights + 1 broadcast */
#include <immintrin.h>
#define SF_VEC __m512
#define SF_VW 16
#define SF_VMAX_R 12
#define SF_VTARGET __attribute__((target("avx512f,fma")))
#define SF_VLOAD(p) _mm512_loadu_ps(p)
#define SF_VSTORE(p, v) _mm512_storeu_ps(p, v)
#define SF_VZERO() _mm512_setzero_ps()
#define SF_VSET1(s) _mm512_set1_ps(s)
#define SF_VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SF_VADD(a, b) _mm512_add_ps(a, b)
#define SF_VSUB(a, b) _mm512_sub_ps(a, b)
#define SF_VMUL(a, b) _mm512_mul_ps(a, b)
#define SF_VKEEP(v) __asm__("" : "+v"(v))
#elif SF_DIRECT_ISA == SF_DIRECT_SET_AVX2 /* 16 ymm: 6 rows x 2 accumulators + 2 weights + 1 broadcast */
#include <immintrin.h>
#define SF_VEC __m256
#define SF_VW 8
#define SF_VMAX_R 6
#define SF_VTARGET __attribute__((target("avx2,fma")))
#define SF_VLOAD(p) _mm256_loadu_ps(p)
#define SF_VSTORE(p, v) _mm256_storeu_ps(p, v)
#define SF_VZERO() _mm256_setzero_ps()
#define SF_VSET1(s) _mm256_set1_ps(s)
#define SF_VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define SF_VADD(a, b) _mm256_add_ps(a, b)
#define SF_VSUB(a, b) _mm256_sub_ps(a, b)
#define SF_VMUL(a, b) _mm256_mul_ps(a, b)
#define SF_VKEEP(v) __asm__("" : "+x"(v))
#elif SF_DIRECT_ISA == SF_DIRECT_SET_C /* GCC vector extension: whatever the build's target has */
typedef float sf_vec_c __attribute__((vector_size(32)));
#define SF_VEC sf_vec_c
#define SF_VW 8
#define SF_VMAX_R 6
#define SF_VTARGET
static inline sf_vec_c sf_vload_c(const float *p)
{
  sf_vec_c v;
  memcpy(&v, p, sizeof v);
  return v;
}
#define SF_VLOAD(p) sf_vload_c(p)
#define SF_VSTORE(p, v) memcpy(p, &(v), sizeof(sf_vec_c))
#define SF_VZERO() ((sf_vec_c){0})
#define SF_VSET1(s) ((sf_vec_c){0} + (s))
#define SF_VFMA(a, b, c) ((a) * (b) + (c))
#define SF_VADD(a, b) ((a) + (b))
#define SF_VSUB(a, b) ((a) - (b))
#define SF_VMUL(a, b) ((a) * (b))
#define SF_VKEEP(v) ((void)0)
#else
#error "SF_DIRECT_ISA must be one of the SF_DIRECT_SET_* (conv3d_direct_internal.h)"
#endif

#endif
