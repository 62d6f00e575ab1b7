/* Shared by the direct AVX-512 convolution kernels (conv3d_direct.c, conv3d_direct_dw.c): the
 * target attribute, workspace slots and the ring of W-padded input planes. */
#ifndef SF_CONV3D_DIRECT_INTERNAL_H
#define SF_CONV3D_DIRECT_INTERNAL_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SF_HAVE_DIRECT 1
#define SF_AVX512 __attribute__((target("avx512f,fma")))
#define SF_DIRECT_RING_SLOT 2 /* slots 0 and 1 belong to the im2col kernels */
#define SF_DIRECT_MAX_R 12    /* voxels (forward) or input channels (dW) per register block */

/* pl[kd] = input plane d+kd-1 of a slab (lo: plane -1, x: planes 0..nd-1, hi: plane nd; NULL
 * halos = the volume's faces) as a (H, W+2, C) plane with a zero voxel at both ends of each row,
 * or NULL where there is no plane. ring: 3 such planes; held[3] = {-2,-2,-2} before plane 0, then
 * kept by the caller between calls, so each plane is copied once as d advances. */
void sf_direct_ring_planes(const float *pl[3], float *ring, int held[3], int d, const float *lo, const float *x,
                           const float *hi, int nd, int H, int W, int C);

/* Register blocks: acc[r][v] (r < R rows, v < NV vectors of 16 floats), R and NV compile-time
 * constants after inlining, so the block lives in zmm registers. */
#define SF_RB_INLINE SF_AVX512 static inline __attribute__((always_inline))

/* acc[r] = src row r (rows `stride` floats apart), or zero when src is NULL */
SF_RB_INLINE void sf_rb_load(__m512 acc[][2], const float *src, size_t stride, const int R, const int NV)
{
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[r][v] = src ? _mm512_loadu_ps(src + r * stride + 16 * v) : _mm512_setzero_ps();
}

/* acc[r][v] += a[r * astride] * b[16*v .. 16*v+16): one rank-1 update (a broadcast per row) */
SF_RB_INLINE void sf_rb_update(__m512 acc[][2], const float *a, size_t astride, const float *b, const int R,
                               const int NV)
{
  __m512 bv[2];
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 12
  for (int r = 0; r < R; r++) {
    __m512 ab = _mm512_set1_ps(a[r * astride]);
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(ab, bv[v], acc[r][v]);
  }
}

/* dst row r (rows `stride` floats apart) = acc[r] */
SF_RB_INLINE void sf_rb_store(float *dst, size_t stride, __m512 acc[][2], const int R, const int NV)
{
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) _mm512_storeu_ps(dst + r * stride + 16 * v, acc[r][v]);
}
#else
#define SF_HAVE_DIRECT 0
#endif

#endif
