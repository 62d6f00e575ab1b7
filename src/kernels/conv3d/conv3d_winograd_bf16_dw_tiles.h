/* The Winograd F(2x2x2, 3x3x3) weight gradient with its 64 element-wise GEMMs on AVX-512 BF16 (VDPBF16PS), for
 * torch_amp: 1 on CPUs whose bf16 engine is VDPBF16PS (no AMX). Included by conv3d_winograd_tiles.h in the
 * AVX-512 set only, after the fp32 stages and conv3d_winograd_bf16_tiles.h (whose SF_WB_* target it uses):
 *   Wt[xi] (K x N, fp32) += V[xi]^T M[xi] summed over the block's tiles, V = B^T x B (wino_input_t) and
 *   M = A dy A^T (wino_dy_t) computed in fp32 and rounded to bf16 (round to nearest even, as every bf16
 *   kernel); G^T Wt G back to the taps is the fp32 wino_dw_finish; Wt sums block sums in fp32.
 *
 * The sum runs over tiles, so one VDPBF16PS lane takes two tiles: lane n += V[2q][k] M[2q][n] +
 * V[2q+1][k] M[2q+1][n]. Vb and Mb keep a tile pair of one channel adjacent, (tb/2, K, 2) and (tb/2, N, 2) per
 * point (conv3d_winograd_internal.h): a tile's 16 rounded channels go to every other bf16 word of 32 (a masked
 * store), and an odd block pads its last pair with a zero tile. Register block as the forward's: R <= 12 input
 * channels (the K rows split evenly) x NV = 1 or 2 vectors of 16 output channels, 24 zmm accumulators, per tile
 * pair NV loads of Mb and R broadcasts of a Vb pair; the block's sum is then added to Wt (stored by the first
 * block, so Wt needs no zeroing pass but at the points a tap range skips).
 * A call for a range of taps (the graph's two tap blocks) runs only the points those taps read (j->pts: G^T
 * takes tap 0 of an axis from points 0..2, tap 1 from 1..2, tap 2 from 1..3), 48 of 64 for either block.
 *
 * Speed (tests/kernels_conv/bench_wino_bf16 --dw, 1 thread, the variants taking turns, 5 reps, medians; Emerald
 * Rapids KVM guest, AVX512_BF16 without AMX, load average 1.6-2.8 from other builds), against the direct VDPBF16PS
 * dW for all 27 taps / for the two tap blocks: 2.3-2.6x / 1.5-1.8x at ps5 b64's 64..256-channel slabs of
 * 128-1024 tiles, 1.9-2.2x / 1.2-1.35x at 32 tiles, 1.4-1.6x / 0.9-1.0x at 16 tiles (a per-call cost of Wt,
 * 64*K*N fp32, and G^T); the rule (conv3d.c, winograd_bf16_dw_wins) takes it from 32 tiles. There VDPBF16PS
 * issues at a quarter of the FMA rate (0.64 ns per instruction): at 8x32^2 64->64 the GEMMs' 8.4M instructions
 * alone take 5.4 of the 7.3 ms, and fp32 Winograd dW stays 1.1-1.6x faster.
 * Accuracy: as the forward's (the rounding applies to transformed values, sums of up to 8 inputs and 8 output
 * gradients): max error relative to the largest fp32 reference value 5.0e-3 .. 9.2e-3 against the direct
 * VDPBF16PS dW's 1.8e-3 .. 3.0e-3 (16..256 channels, three magnitudes); tests/kernels_conv/
 * test_conv_winograd_bf16_dw.c bounds it by 2e-2 and checks exact data to 1e-5. */

/* dst[2i + odd] = t[i] rounded to bf16, i < 16: one tile's 16 channels beside its pair partner's (sh: 16*odd
 * per lane, m: the words of this tile) */
SF_WB_INLINE void wino_bf16_store_tile(uint16_t *dst, __m512 t, __m512i sh, __mmask32 m)
{
  __m512i w = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(t));
  _mm512_mask_storeu_epi16(dst, m, _mm512_sllv_epi32(w, sh));
}

/* Vb words of tile `slot`: B^T x B of its input voxels (wino_input_t), rounded */
SF_WB_INLINE void wino_bf16_dw_input_body(const sf_wino_job *j, int slot, const float *const rows[16], int w0,
                                          const int edge)
{
  int odd = slot & 1;
  __m512i sh = _mm512_set1_epi32(16 * odd);
  __mmask32 m = (__mmask32)(0x55555555u << odd);
  uint16_t *base = j->Vb + (size_t)(slot / 2) * 2 * j->K;
  for (int c = 0; c < j->K; c += 16) {
    __m512 t[64];
    wino_input_t(j, rows, w0, edge, c, t);
#pragma GCC unroll 64
    for (int xi = 0; xi < 64; xi++) wino_bf16_store_tile(base + xi * j->vs + 2 * c, t[xi], sh, m);
  }
}

/* Mb words of tile `slot`: A dy A^T of the output gradient's 2x2x2 voxels at src (wino_dy_t), rounded */
SF_WB_TARGET SF_NO_ASAN static void wino_bf16_dy_tile(const sf_wino_job *j, int slot, const float *src)
{
  int odd = slot & 1;
  __m512i sh = _mm512_set1_epi32(16 * odd);
  __mmask32 m = (__mmask32)(0x55555555u << odd);
  uint16_t *base = j->Mb + (size_t)(slot / 2) * 2 * j->N;
  for (int c = 0; c < j->N; c += 16) {
    __m512 t[64];
    wino_dy_t(j, src, c, t);
    for (int xi = 0; xi < 64; xi++) wino_bf16_store_tile(base + xi * j->ms + 2 * c, t[xi], sh, m);
  }
}

/* the odd tile `slot` past the block's last: zero in Vb and Mb, so the last pair adds only its first tile */
SF_WB_TARGET SF_NO_ASAN static void wino_bf16_dw_zero_tile(const sf_wino_job *j, int slot)
{
  __m512i z = _mm512_setzero_si512();
  size_t pair = (size_t)(slot / 2) * 2;
  for (int xi = 0; xi < 64; xi++) {
    uint16_t *v = j->Vb + xi * j->vs + pair * j->K, *g = j->Mb + xi * j->ms + pair * j->N;
    for (int c = 0; c < j->K; c += 16) _mm512_mask_storeu_epi16(v + 2 * c, 0xAAAAAAAAu, z);
    for (int c = 0; c < j->N; c += 16) _mm512_mask_storeu_epi16(g + 2 * c, 0xAAAAAAAAu, z);
  }
}

/* Wt rows [k0, k0+R) of point xi, columns [n0, n0 + 16*NV) += sum over np tile pairs q of
 * Vb[q][k][.] . Mb[q][n][.] (the block's sum from zero, then added; the first block's stored) */
SF_WB_INLINE void wino_bf16_dw_rows(const sf_wino_job *j, int xi, int k0, int n0, int np, const int R, const int NV)
{
  __m512 acc[SF_VMAX_R][2];
  const uint16_t *v = j->Vb + (size_t)xi * j->vs + 2 * (size_t)k0, *g = j->Mb + (size_t)xi * j->ms + 2 * (size_t)n0;
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();
  for (int p = 0; p < np; p++, v += 2 * j->K, g += 2 * j->N) {
    __m512bh b[2];
#pragma GCC unroll 2
    for (int q = 0; q < NV; q++) {
      b[q] = (__m512bh)_mm512_loadu_si512(g + 32 * q);
      __asm__("" : "+v"(b[q])); /* one load per dy vector, not one per row */
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
      __m512bh a = (__m512bh)_mm512_set1_epi32(wino_bf16_pair(v + 2 * r));
#pragma GCC unroll 2
      for (int q = 0; q < NV; q++) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], a, b[q]);
    }
  }
  float *wt = j->Wt + (size_t)xi * j->K * j->N + (size_t)k0 * j->N + n0;
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int q = 0; q < NV; q++) {
      float *p = wt + (size_t)r * j->N + 16 * q;
      _mm512_storeu_ps(p, j->wt_first ? acc[r][q] : _mm512_add_ps(_mm512_loadu_ps(p), acc[r][q]));
    }
}

/* Wt[xi] += Vb[xi]^T Mb[xi] over np tile pairs: the K rows in nblk near-equal blocks of <= 12 */
#define SF_WINO_BF16_DW_CALL(R, NV) wino_bf16_dw_rows(j, xi, k0, n0, np, R, NV)
SF_WB_TARGET SF_NO_ASAN static void wino_bf16_dw_gemm(const sf_wino_job *j, int xi, int np)
{
  int nblk = (j->K + SF_VMAX_R - 1) / SF_VMAX_R, base = j->K / nblk, extra = j->K % nblk;
  for (int n0 = 0; n0 < j->N; n0 += 32) {
    int nv = j->N - n0 < 32 ? 1 : 2;
    for (int b = 0, k0 = 0; b < nblk; k0 += base + (b < extra), b++) {
      int r = base + (b < extra);
      SF_WINO_BY_R(r, SF_WINO_BF16_DW_CALL)
    }
  }
}

SF_WB_TARGET SF_NO_ASAN static void wino_bf16_dw_block(const sf_wino_job *j, size_t t0, int nt)
{
  SF_WINO_FOOTPRINT(j, t0, nt, 1);
  for (int s = 0; s < nt; s++) {
    int td, th, tw;
    const float *rows[16];
    wino_tile_at(j, t0 + s, &td, &th, &tw);
    wino_tile_rows(j, td, th, rows);
    int w0 = 2 * tw - 1;
    if (w0 >= 0 && w0 + 3 < j->W)
      wino_bf16_dw_input_body(j, s, rows, w0, 0);
    else
      wino_bf16_dw_input_body(j, s, rows, w0, 1);
    wino_bf16_dy_tile(j, s, wino_dy_at(j, td, th, tw));
  }
  if (nt & 1) wino_bf16_dw_zero_tile(j, nt);
  for (int xi = 0; xi < 64; xi++)
    if (j->pts >> xi & 1) wino_bf16_dw_gemm(j, xi, (nt + 1) / 2);
}
