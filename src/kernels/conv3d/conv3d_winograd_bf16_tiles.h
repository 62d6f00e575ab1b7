/* The Winograd F(2x2x2, 3x3x3) stages with the 64 element-wise GEMMs on AVX-512 BF16 (VDPBF16PS), for
 * torch_amp: 1 on CPUs whose bf16 engine is VDPBF16PS (no AMX). Included by conv3d_winograd_tiles.h in the
 * AVX-512 set only (SF_WINO_BF16, conv3d_direct_avx512.c), after the fp32 stages it reuses: the input
 * transform B^T d B (wino_input_t), the output transform A^T m A (wino_output_tile) and the weight
 * transform G g G^T (wino_weights) all stay fp32; only their results V and U are rounded to bf16 (round to
 * nearest even, as every bf16 kernel), and the products are summed in fp32.
 *
 * One VDPBF16PS adds two input channels' products to 16 output channels: lane j += a[2p]*b[2p][j] +
 * a[2p+1]*b[2p+1][j]. V's rows (tile, K) hold a tile's channels contiguously, so channel pairs are adjacent
 * once converted; U's column blocks are interleaved by pairs, (K/2, width, 2) (conv3d_winograd_internal.h).
 * Register block as the direct bf16 kernel's (conv3d_bf16.c): R <= 12 tiles x NV = 1 or 2 vectors of 16
 * output channels, 24 zmm accumulators, per pair NV weight loads and R broadcasts of a V pair.
 * The functions carry the bf16 target (SF_BF16_TARGET plus FMA, the fp32 stages' own target, so those
 * inline), so the build needs no -march flag; only a CPU with AVX512_BF16 may call them.
 * Accuracy: the rounding applies to the transformed values, sums of up to 8 inputs and 27 weights, so the
 * error is about 2.5x the direct VDPBF16PS kernel's on the same data: max error relative to the largest
 * fp32 reference value 4.0e-3 .. 7.5e-3 against 1.7e-3 .. 3.2e-3 (16..256 channels, several magnitudes);
 * tests/kernels_conv/test_conv_winograd_bf16.c bounds it by 1.5e-2 and checks exact data to 1e-5. */
#include "../common/bf16_internal.h"

#define SF_WB_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,fma")))
#define SF_WB_INLINE SF_WB_TARGET SF_NO_ASAN static inline __attribute__((always_inline))

/* Ub from U (both (64, K, N) in U's column blocks): rows 2p and 2p+1 of a block become one row of
 * pairs: [j][0] = U[2p][j], [j][1] = U[2p+1][j] */
SF_WB_TARGET SF_NO_ASAN static void wino_bf16_weights(uint16_t *Ub, const float *U, int K, int N)
{
  SF_FOOTPRINT(U, (size_t)64 * K * N, 0);
  SF_FOOTPRINT((const float *)Ub, (size_t)32 * K * N, 1);
  /* after VCVTNE2PS2BF16: words 0..15 row 2p, 16..31 row 2p+1; interleave them */
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                       21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int xi = 0; xi < 64; xi++)
    for (int n0 = 0; n0 < N; n0 += 32) {
      int width = N - n0 < 32 ? 16 : 32;
      size_t off = (size_t)xi * K * N + (size_t)n0 * K;
      const float *src = U + off;
      uint16_t *dst = Ub + off;
      for (int p = 0; p < K / 2; p++)
        for (int c = 0; c < width; c += 16) {
          __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + (size_t)(2 * p + 1) * width + c),
                                           _mm512_loadu_ps(src + (size_t)(2 * p) * width + c));
          _mm512_storeu_si512(dst + ((size_t)p * width + c) * 2, _mm512_permutexvar_epi16(idx, (__m512i)b));
        }
    }
}

/* Vb rows of tile `slot`: B^T d B of its input voxels (fp32), rounded */
SF_WB_INLINE void wino_bf16_input_body(const sf_wino_job *j, int slot, const float *const rows[16], int w0,
                                       const int edge)
{
  for (int c = 0; c < j->K; c += 16) {
    __m512 t[64];
    wino_input_t(j, rows, w0, edge, c, t);
    uint16_t *dst = j->Vb + (size_t)slot * j->K + c;
#pragma GCC unroll 64
    for (int xi = 0; xi < 64; xi++)
      _mm256_storeu_si256((__m256i *)(dst + xi * j->vs), (__m256i)_mm512_cvtneps_pbh(t[xi]));
  }
}

SF_WB_TARGET SF_NO_ASAN static void wino_bf16_input_tiles(const sf_wino_job *j, size_t t0, int nt)
{
  for (int s = 0; s < nt; s++) {
    int td, th, tw;
    const float *rows[16];
    wino_tile_at(j, t0 + s, &td, &th, &tw);
    wino_tile_rows(j, td, th, rows);
    int w0 = 2 * tw - 1;
    if (w0 >= 0 && w0 + 3 < j->W)
      wino_bf16_input_body(j, s, rows, w0, 0);
    else
      wino_bf16_input_body(j, s, rows, w0, 1);
  }
}

static inline int32_t wino_bf16_pair(const uint16_t *p)
{
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* M rows [r0, r0+R) of point xi, columns [n0, n0 + 16*NV) = Vb rows . Ub block ub, over K/2 pairs */
SF_WB_INLINE void wino_bf16_gemm_rows(const sf_wino_job *j, int xi, int r0, int n0, const uint16_t *ub, const int R,
                                      const int NV)
{
  __m512 acc[SF_VMAX_R][2];
  const uint16_t *v = j->Vb + (size_t)xi * j->vs + (size_t)r0 * j->K;
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();
  for (int p = 0; p < j->K / 2; p++, ub += 32 * NV) {
    __m512bh b[2];
#pragma GCC unroll 2
    for (int q = 0; q < NV; q++) {
      b[q] = (__m512bh)_mm512_loadu_si512(ub + 32 * q);
      __asm__("" : "+v"(b[q])); /* one load per weight vector, not one per row */
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
      __m512bh a = (__m512bh)_mm512_set1_epi32(wino_bf16_pair(v + (size_t)r * j->K + 2 * p));
#pragma GCC unroll 2
      for (int q = 0; q < NV; q++) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], a, b[q]);
    }
  }
  float *m = j->M + (size_t)xi * j->ms + (size_t)r0 * j->N + n0;
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int q = 0; q < NV; q++) _mm512_storeu_ps(m + (size_t)r * j->N + 16 * q, acc[r][q]);
}

#define SF_WINO_BF16_GEMM_CALL(R, NV) wino_bf16_gemm_rows(j, xi, r0, n0, ub, R, NV)
SF_WB_TARGET SF_NO_ASAN static void wino_bf16_gemm(const sf_wino_job *j, int xi, int nt)
{
  const uint16_t *U = j->Ub + (size_t)xi * j->K * j->N;
  for (int n0 = 0; n0 < j->N; n0 += 32) {
    int nv = j->N - n0 < 32 ? 1 : 2;
    const uint16_t *ub = U + (size_t)n0 * j->K;
    for (int r0 = 0; r0 < nt; r0 += SF_VMAX_R) {
      int r = nt - r0 < SF_VMAX_R ? nt - r0 : SF_VMAX_R;
      SF_WINO_BY_R(r, SF_WINO_BF16_GEMM_CALL)
    }
  }
}

SF_WB_TARGET SF_NO_ASAN static void wino_bf16_block(const sf_wino_job *j, size_t t0, int nt)
{
  SF_WINO_FOOTPRINT(j, t0, nt, 0);
  wino_bf16_input_tiles(j, t0, nt);
  for (int xi = 0; xi < 64; xi++) wino_bf16_gemm(j, xi, nt);
  for (int s = 0; s < nt; s++) {
    int td, th, tw;
    wino_tile_at(j, t0 + s, &td, &th, &tw);
    wino_output_tile(j, s, 2 * td, 2 * th, 2 * tw);
  }
}
