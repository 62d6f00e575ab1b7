/* Weight gradient of the 3x3x3 convolution with bf16 operands and fp32 accumulation on AVX-512 BF16
 * (VDPBF16PS), for torch_amp: 1 on CPU workers (the forward and dX are in conv3d_bf16.c):
 *   dw[t][ci][co] += sum over output voxels v of bf16(x[v + offset(t)][ci]) * bf16(dy[v][co])
 * NDHWC fp32 activations, (27,Cin,Cout) fp32 gradient rows of taps [t0, t1), as
 * sf_conv3d_backward_weights_taps_direct (scaffold/ops.h).
 *
 * Here the reduction runs over voxels, so VDPBF16PS takes two output voxels of a row, (w, w+1), per
 * instruction: the output gradient is packed as [pair][output channel][2] (a last odd voxel paired with zero),
 * and the input as pairs of neighbouring padded voxels, xi[q][ci] = (x[q][ci], x[q+1][ci]), so the pair's
 * inputs under any tap are the one 32-bit word xi[q + offset(t)][ci]: one copy serves all 27 taps. Register
 * block: R <= 12 input channels times NV = 1 or 2 vectors of 16 output channels of one tap, summed from zero
 * over a group of SF_BF16_DW_GROUP pairs and then added to dw (so a long reduction sums group partials, as the
 * fp32 kernels do). */
#include <string.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "conv3d_bf16_internal.h"

#define SF_BF16_DW_MAX_R 12
#ifndef SF_BF16_DW_GROUP
#define SF_BF16_DW_GROUP 256 /* voxel pairs per partial sum */
#endif
#define SF_BF16_INLINE SF_BF16_TARGET static inline __attribute__((always_inline))

/* dwb row r (rows dstride apart), channels [0, 16*NV) masked by mlast on the last vector, += sum over the n
 * pairs i of xi[q[i] + off][r] . gp[i][.][..] (xi already offset to the block's first input channel, rows Cin
 * words apart; gp: 64 bf16 per pair) */
SF_BF16_INLINE void dw_body(float *dwb, size_t dstride, const uint32_t *xi, size_t Cin, const uint32_t *q,
                            ptrdiff_t off, int n, const sf_bf16 *gp, __mmask16 mlast, const int R, const int NV)
{
  __m512 acc[SF_BF16_DW_MAX_R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
  for (int i = 0; i < n; i++, gp += 64) {
    const uint32_t *xq = xi + (size_t)((ptrdiff_t)q[i] + off) * Cin;
    __m512bh b[2];
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) {
      b[v] = (__m512bh)_mm512_loadu_si512(gp + 32 * v);
      __asm__("" : "+v"(b[v]));
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
      __m512bh a = (__m512bh)_mm512_set1_epi32((int)xq[r]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, b[v]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; r++) {
    float *row = dwb + r * dstride;
    if (NV == 2) _mm512_storeu_ps(row, _mm512_add_ps(_mm512_loadu_ps(row), acc[r][0]));
    float *last = row + 16 * (NV - 1);
    _mm512_mask_storeu_ps(last, mlast, _mm512_add_ps(_mm512_maskz_loadu_ps(mlast, last), acc[r][NV - 1]));
  }
}

typedef void (*dw_fn)(float *dwb, size_t dstride, const uint32_t *xi, size_t Cin, const uint32_t *q, ptrdiff_t off,
                      int n, const sf_bf16 *gp, __mmask16 mlast);
#define SF_BF16_DW(R, NV)                                                                                              \
  SF_BF16_TARGET static void dw_##R##_##NV(float *d, size_t ds, const uint32_t *xi, size_t C, const uint32_t *q,       \
                                           ptrdiff_t off, int n, const sf_bf16 *gp, __mmask16 m)                       \
  {                                                                                                                    \
    dw_body(d, ds, xi, C, q, off, n, gp, m, R, NV);                                                                    \
  }
#define SF_BF16_DW_NV(NV)                                                                                              \
  SF_BF16_DW(1, NV)                                                                                                    \
  SF_BF16_DW(2, NV)                                                                                                    \
  SF_BF16_DW(3, NV)                                                                                                    \
  SF_BF16_DW(4, NV) SF_BF16_DW(5, NV) SF_BF16_DW(6, NV) SF_BF16_DW(7, NV) SF_BF16_DW(8, NV) SF_BF16_DW(9, NV)          \
      SF_BF16_DW(10, NV) SF_BF16_DW(11, NV) SF_BF16_DW(12, NV)
SF_BF16_DW_NV(1)
SF_BF16_DW_NV(2)
#define SF_BF16_DW_ROW(NV)                                                                                             \
  {                                                                                                                    \
    dw_1_##NV, dw_2_##NV, dw_3_##NV, dw_4_##NV, dw_5_##NV, dw_6_##NV, dw_7_##NV, dw_8_##NV, dw_9_##NV, dw_10_##NV,     \
        dw_11_##NV, dw_12_##NV                                                                                         \
  }
static const dw_fn dw_blocks[2][SF_BF16_DW_MAX_R] = {SF_BF16_DW_ROW(1), SF_BF16_DW_ROW(2)};

/* xi[q][ci] = (xb[q][ci], xb[q+1][ci]) for every padded voxel q (the last one pairs with the margin) */
SF_BF16_TARGET static void pair_neighbours(uint32_t *xi, const sf_bf16 *xb, size_t nvox, int C)
{
  size_t n = (nvox - 1) * (size_t)C, i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(xb + i)));
    __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(xb + i + C)));
    _mm512_storeu_si512(xi + i, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
  for (; i < n; i++) xi[i] = xb[i] | (uint32_t)xb[i + C] << 16;
  memset(xi + n, 0, sizeof(uint32_t) * C);
}

/* The output voxel pairs (w, w+1) of every row: q[i] the padded index of the first; gp[cob][i]: 32 output
 * channels (from 32*cob, zero beyond Cout) x the pair's two dy values, bf16 (a last odd voxel's partner is
 * zero). Returns the pair count. */
static int pack_pairs(uint32_t *q, sf_bf16 *gp, float *stage, const float *dy, int nd, int H, int W, int Cout, int ncob)
{
  int npairs = nd * H * ((W + 1) / 2), i = 0;
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w += 2, i++) {
        q[i] = (uint32_t)sf_bf16_pidx(d, h, w, H, W);
        const float *g0 = dy + (((size_t)d * H + h) * W + w) * Cout, *g1 = w + 1 < W ? g0 + Cout : NULL;
        for (int cob = 0; cob < ncob; cob++) {
          memset(stage, 0, sizeof(float) * 64);
          for (int j = 0; j < 32 && 32 * cob + j < Cout; j++) {
            stage[2 * j] = g0[32 * cob + j];
            stage[2 * j + 1] = g1 ? g1[32 * cob + j] : 0.0f;
          }
          sf_bf16_from_floats(gp + ((size_t)cob * npairs + i) * 64, stage, 64);
        }
      }
  return npairs;
}

void sf_conv3d_weights_vdpbf16(float *dw, int t0, int t1, const float *x_lo, const float *x, const float *x_hi,
                               const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_cpu_bf16_supported() && 0 <= t0 && t0 <= t1 && t1 <= 27);
  size_t nvox = sf_bf16_pad_voxels(nd, H, W);
  int ncob = (Cout + 31) / 32, maxpairs = nd * H * ((W + 1) / 2);
  sf_bf16 *xb = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_X, nvox * Cin / 2 + 1);
  uint32_t *xi = (uint32_t *)sf_workspace_floats(SF_BF16_SLOT_AUX, nvox * Cin);
  uint32_t *q = (uint32_t *)sf_workspace_floats(SF_BF16_SLOT_LIST, (size_t)maxpairs + 64);
  sf_bf16 *gp = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_PACK, (size_t)ncob * maxpairs * 32);
  SF_ASSERT(nvox < UINT32_MAX);
  sf_bf16_pad_slab(xb, x_lo, x, x_hi, nd, H, W, Cin, Cin);
  pair_neighbours(xi, xb, nvox, Cin);
  int npairs = pack_pairs(q, gp, (float *)(q + maxpairs), dy, nd, H, W, Cout, ncob);
  int nblk = (Cin + SF_BF16_DW_MAX_R - 1) / SF_BF16_DW_MAX_R, bbase = Cin / nblk, blong = Cin % nblk;
  for (int g0 = 0; g0 < npairs; g0 += SF_BF16_DW_GROUP) {
    int n = npairs - g0 < SF_BF16_DW_GROUP ? npairs - g0 : SF_BF16_DW_GROUP;
    for (int t = t0; t < t1; t++) {
      ptrdiff_t off = sf_bf16_tap_off(t, H, W);
      for (int cob = 0; cob < ncob; cob++) {
        int nb = Cout - 32 * cob < 32 ? Cout - 32 * cob : 32, nv = nb > 16 ? 2 : 1;
        __mmask16 mlast = (__mmask16)((1u << (nb - 16 * (nv - 1))) - 1);
        const sf_bf16 *gpb = gp + ((size_t)cob * npairs + g0) * 64;
        for (int b = 0, ci0 = 0; b < nblk; ci0 += bbase + (b < blong), b++) {
          float *dwb = dw + ((size_t)(t - t0) * Cin + ci0) * Cout + 32 * cob;
          dw_blocks[nv - 1][bbase + (b < blong) - 1](dwb, Cout, xi + ci0, Cin, q + g0, off, n, gpb, mlast);
        }
      }
    }
  }
}
