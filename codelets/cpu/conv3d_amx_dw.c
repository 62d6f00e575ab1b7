/* Weight gradient of the 3x3x3 convolution with bf16 operands and fp32 accumulation on AMX tiles, for
 * torch_amp: 1 on CPUs with AMX-BF16 (forward and dX: conv3d_amx.c); the same contract and rounding as
 * conv3d_bf16_dw.c:
 *   dw[t][ci][co] += sum over output voxels v of bf16(x[v + offset(t)][ci]) * bf16(dy[v][co])
 * A GEMM per tap over the padded grid (conv3d_bf16_internal.h): C (16 input x 16 output channels) += A (16
 * input channels x 32 padded voxels) . B (32 padded voxels x 16 output channels). A is read from a transposed
 * copy of the padded input, xT[ci][q], whose 32 voxels from q0 + offset(t) are one strided tile load for any
 * tap; B from the output gradient on the padded grid in VNNI order, [block of 16 channels][q/2][16][2], zero
 * at padding voxels, so those contribute nothing. Block: 2 x 2 C tiles (32 input x 32 output channels) of one
 * tap over a group of SF_AMX_DW_GROUP voxels, summed from zero and then added to dw (so a long reduction sums
 * group partials); groups outermost, so a group's inputs under all 27 taps stay in L2. */
#include <string.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "conv3d_amx_internal.h"

#ifndef SF_AMX_DW_GROUP
#define SF_AMX_DW_GROUP 2048 /* padded voxels per partial sum, a multiple of 32 */
#endif

/* Rows of the transposed slab: SF_AMX_LEAD zeros, then the nvox padded voxels. The lead covers the voxel before
 * the first output voxel, which a tile starting at an even voxel reads under tap 0. */
#define SF_AMX_LEAD 2
/* xT: Cp rows of rs = nvox + SF_AMX_LEAD bf16, row ci = input channel ci at every padded voxel from column
 * SF_AMX_LEAD (zero rows >= Cin) */
SF_AMX_TARGET static void transpose_slab(sf_bf16 *xT, size_t rs, const sf_bf16 *xb, size_t nvox, int Cin, int Cp)
{
  for (int c = 0; c < Cp; c++) memset(xT + (size_t)c * rs, 0, sizeof(sf_bf16) * (c < Cin ? SF_AMX_LEAD : rs));
  for (size_t q = 0; q < nvox; q++) {
    const sf_bf16 *src = xb + q * Cin;
    for (int c = 0; c < Cin; c++) xT[(size_t)c * rs + SF_AMX_LEAD + q] = src[c];
  }
}

/* gv: (NB blocks of 16 channels)(nvox/2)(16)(2) bf16: dy of padded voxel q, channel 16n+j at [n][q/2][j][q%2];
 * zero at padding voxels and channels >= Cout */
SF_AMX_TARGET static void pack_dy(sf_bf16 *gv, float *row, const float *dy, size_t nvox, int nd, int H, int W, int Cout,
                                  int NB)
{
  memset(gv, 0, sizeof(sf_bf16) * (size_t)NB * nvox * 16);
  sf_bf16 *rb = (sf_bf16 *)(row + (size_t)NB * 16);
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++) {
        size_t q = sf_bf16_pidx(d, h, w, H, W);
        memset(row, 0, sizeof(float) * NB * 16);
        memcpy(row, dy + (((size_t)d * H + h) * W + w) * Cout, sizeof(float) * Cout);
        sf_bf16_from_floats(rb, row, (size_t)NB * 16);
        for (int n = 0; n < NB; n++) {
          sf_bf16 *dst = gv + ((size_t)n * (nvox / 2) + q / 2) * 32 + q % 2;
          for (int j = 0; j < 16; j++) dst[2 * j] = rb[16 * n + j];
        }
      }
}

/* dw rows [ci0, ci0+nci) x channels [co0, co0+nco) (rows Cout apart) += buf (32 x 32 floats) */
static void add_block(float *dw, const float *buf, int Cout, int nci, int co0, int nco)
{
  for (int i = 0; i < nci; i++)
    for (int j = 0; j < nco; j++) dw[(size_t)i * Cout + co0 + j] += buf[(size_t)i * 32 + j];
}

/* The 2 x 2 C tiles of input channels [ci0, ci0+32) x output channels [16*n0, 16*n0+32) of one tap (dwt: that
 * tap's (Cin, Cout) rows) += the voxels [g, g1) (a multiple of 32 apart) */
SF_AMX_TARGET static void dw_tap_block(float *dwt, float *buf, const sf_bf16 *xT, size_t rs, size_t nvox,
                                       const sf_bf16 *gv, ptrdiff_t off, size_t g, size_t g1, int ci0, int Cin, int n0,
                                       int NB, int Cout)
{
  int two_c = ci0 + 16 < Cin, two_n = n0 + 1 < NB;
  size_t xs = rs * 2; /* bytes between channel rows */
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (size_t q = g; q < g1; q += 32) {
    const sf_bf16 *a = xT + (size_t)ci0 * rs + (size_t)((ptrdiff_t)q + off + SF_AMX_LEAD);
    const sf_bf16 *b = gv + ((size_t)n0 * (nvox / 2) + q / 2) * 32;
    _tile_loadd(4, a, xs);
    _tile_loadd(6, b, 64);
    _tile_dpbf16ps(0, 4, 6);
    if (two_n) {
      _tile_loadd(7, b + (nvox / 2) * 32, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if (two_c) {
      _tile_loadd(5, a + 16 * rs, xs);
      _tile_dpbf16ps(2, 5, 6);
      if (two_n) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, buf, 128);
  _tile_stored(1, buf + 16, 128);
  _tile_stored(2, buf + 16 * 32, 128);
  _tile_stored(3, buf + 16 * 32 + 16, 128);
  int nci = Cin - ci0 < 32 ? Cin - ci0 : 32, nco = Cout - 16 * n0 < 32 ? Cout - 16 * n0 : 32;
  add_block(dwt + (size_t)ci0 * Cout, buf, Cout, nci, 16 * n0, nco);
}

SF_AMX_TARGET void sf_conv3d_weights_amx(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                         const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_amx_supported() && 0 <= t0 && t0 <= t1 && t1 <= 27);
  /* padded voxels, even, with room for a tile of 32 past the last output voxel under any tap */
  size_t nvox = (sf_bf16_pad_voxels(nd, H, W) + SF_AMX_MARGIN + 1) & ~(size_t)1;
  int Cp = (Cin + 15) / 16 * 16, NB = (Cout + 15) / 16;
  sf_bf16 *xb = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_X, nvox * Cin / 2 + 1);
  size_t rs = nvox + SF_AMX_LEAD;
  sf_bf16 *xT = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_AUX, rs * Cp / 2 + 1);
  sf_bf16 *gv = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_PACK, (size_t)NB * nvox * 8 + 1);
  float *buf = sf_workspace_floats(SF_BF16_SLOT_LIST, 32 * 32 + (size_t)NB * 24);
  sf_bf16_pad_slab(xb, x_lo, x, x_hi, nd, H, W, Cin, Cin);
  size_t used = sf_bf16_pad_voxels(nd, H, W);
  memset(xb + used * Cin, 0, sizeof(sf_bf16) * (nvox - used) * Cin);
  transpose_slab(xT, rs, xb, nvox, Cin, Cp);
  pack_dy(gv, buf + 32 * 32, dy, nvox, nd, H, W, Cout, NB);
  size_t q0 = sf_bf16_pidx(0, 0, 0, H, W) & ~(size_t)1, q1 = sf_bf16_pidx(nd - 1, H - 1, W - 1, H, W) + 1;
  q1 = q0 + (q1 - q0 + 31) / 32 * 32;
  sf_amx_config cfg;
  sf_amx_config_set(&cfg, 16, 64, 16);
  _tile_loadconfig(&cfg);
  /* voxel groups outermost: a group's input rows under all 27 taps (its span plus a plane either side) and its
   * output gradient stay in L2 while every tap and channel block visits them */
  for (size_t g = q0; g < q1; g += SF_AMX_DW_GROUP) {
    size_t g1 = g + SF_AMX_DW_GROUP < q1 ? g + SF_AMX_DW_GROUP : q1;
    for (int t = t0; t < t1; t++) {
      ptrdiff_t off = sf_bf16_tap_off(t, H, W);
      float *dwt = dw + (size_t)(t - t0) * Cin * Cout;
      for (int ci0 = 0; ci0 < Cin; ci0 += 32)
        for (int n0 = 0; n0 < NB; n0 += 2) dw_tap_block(dwt, buf, xT, rs, nvox, gv, off, g, g1, ci0, Cin, n0, NB, Cout);
    }
  }
  _tile_release();
}
