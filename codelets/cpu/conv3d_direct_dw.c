/* Weight gradient of the 3x3x3 convolution computed directly with AVX-512, without im2col:
 *   dw[t][ci][co] += sum over output voxels v of x[v + offset(t)][ci] * dy[v][co]
 * NDHWC activations, (27,Cin,Cout) weights (scaffold/ops.h), a range of taps [t0, t1) so two
 * workers can share one layer's gradient as with the im2col kernel.
 * Register block: R input channels (R <= 12) times 16*NV output channels (NV = 2, or 1 for a last
 * block of 16) of one tap, loaded from dw, accumulated over a group of output rows (about
 * SF_DW_GROUP_VOXELS voxels, so the group's dy and x rows stay in L2 while every block of the
 * gradient visits them), stored back. Per voxel: NV loads of dy, R broadcasts of x, R*NV FMAs. */
#include "conv3d_direct_internal.h"

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#ifndef SF_DW_GROUP_VOXELS
#define SF_DW_GROUP_VOXELS 256
#endif

#if SF_HAVE_DIRECT
/* dwb: R rows Cout apart (already offset to tap, first channel, first output channel);
 * xrows[i]: the padded input row under output row i of the group for this tap's (kd,kh), already
 * offset by kw voxels and ci0 channels (NULL: outside the volume); dy: the group's first output row,
 * offset to the block's first output channel; rows W*Cout floats apart. */
typedef void (*dw_fn)(float *dwb, const float *const *xrows, const float *dy, int nrows, int W, int Cin, int Cout);

SF_RB_INLINE void dw_body(float *dwb, const float *const *xrows, const float *dy, int nrows, int W, int Cin,
                          int Cout, const int R, const int NV)
{
  __m512 acc[SF_DIRECT_MAX_R][2];
  sf_rb_load(acc, dwb, Cout, R, NV);
  for (int i = 0; i < nrows; i++) {
    const float *xp = xrows[i], *g = dy + (size_t)i * W * Cout;
    if (!xp) continue;
    for (int w = 0; w < W; w++) sf_rb_update(acc, xp + (size_t)w * Cin, 1, g + (size_t)w * Cout, R, NV);
  }
  sf_rb_store(dwb, Cout, acc, R, NV);
}

#define SF_DEF_DW(R, NV)                                                                                        \
  SF_AVX512 static void dw_##R##_##NV(float *dwb, const float *const *xrows, const float *dy, int nrows, int W, \
                                      int Cin, int Cout)                                                      \
  {                                                                                                           \
    dw_body(dwb, xrows, dy, nrows, W, Cin, Cout, R, NV);                                                      \
  }
#define SF_DEF_DWS(NV)                                                                                          \
  SF_DEF_DW(1, NV) SF_DEF_DW(2, NV) SF_DEF_DW(3, NV) SF_DEF_DW(4, NV) SF_DEF_DW(5, NV) SF_DEF_DW(6, NV)          \
  SF_DEF_DW(7, NV) SF_DEF_DW(8, NV) SF_DEF_DW(9, NV) SF_DEF_DW(10, NV) SF_DEF_DW(11, NV) SF_DEF_DW(12, NV)
SF_DEF_DWS(1)
SF_DEF_DWS(2)

static const dw_fn dw_blocks[2][SF_DIRECT_MAX_R] = {
    {dw_1_1, dw_2_1, dw_3_1, dw_4_1, dw_5_1, dw_6_1, dw_7_1, dw_8_1, dw_9_1, dw_10_1, dw_11_1, dw_12_1},
    {dw_1_2, dw_2_2, dw_3_2, dw_4_2, dw_5_2, dw_6_2, dw_7_2, dw_8_2, dw_9_2, dw_10_2, dw_11_2, dw_12_2},
};

void sf_conv3d_backward_weights_taps_direct(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                            const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                            int Cout)
{
  SF_ASSERT(0 <= t0 && t0 <= t1 && t1 <= 27 && Cout % 16 == 0 && sf_conv3d_direct_available());
  size_t prow = (size_t)(W + 2) * Cin;
  float *ring = sf_workspace_floats(SF_DIRECT_RING_SLOT, 3 * H * prow);
  int held[3] = {-2, -2, -2}, group = (int)sf_max_sz(1, sf_min_sz(H, SF_DW_GROUP_VOXELS / W));
  /* balanced channel blocks: ceil(Cin/12) blocks of Cin/nblk channels, the first Cin%nblk one more */
  int nblk = (Cin + SF_DIRECT_MAX_R - 1) / SF_DIRECT_MAX_R, bbase = Cin / nblk, blong = Cin % nblk;
  for (int d = 0; d < nd; d++) {
    const float *pl[3];
    sf_direct_ring_planes(pl, ring, held, d, x_lo, x, x_hi, nd, H, W, Cin);
    for (int h0 = 0; h0 < H; h0 += group) {
      int nrows = H - h0 < group ? H - h0 : group;
      const float *g = dy + ((size_t)d * H + h0) * W * Cout;
      for (int t = t0; t < t1; t++) {
        int kd = t / 9, kh = t / 3 % 3, kw = t % 3, any = 0;
        const float *xrows[SF_DW_GROUP_VOXELS];
        for (int i = 0; i < nrows; i++) {
          int hh = h0 + i + kh - 1;
          xrows[i] = (pl[kd] && hh >= 0 && hh < H) ? pl[kd] + (size_t)hh * prow + (size_t)kw * Cin : NULL;
          any |= xrows[i] != NULL;
        }
        if (!any) continue;
        float *dwt = dw + (size_t)(t - t0) * Cin * Cout;
        const float *xb[SF_DW_GROUP_VOXELS];
        for (int b = 0, ci0 = 0; b < nblk; b++) {
          int r = bbase + (b < blong);
          for (int i = 0; i < nrows; i++) xb[i] = xrows[i] ? xrows[i] + ci0 : NULL;
          for (int co = 0; co < Cout; co += 32) {
            int nv = Cout - co >= 32 ? 2 : 1;
            dw_blocks[nv - 1][r - 1](dwt + (size_t)ci0 * Cout + co, xb, g + co, nrows, W, Cin, Cout);
          }
          ci0 += r;
        }
      }
    }
  }
}

#else /* not x86-64 GCC/Clang: never available (sf_conv3d_direct_available() is 0) */
void sf_conv3d_backward_weights_taps_direct(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                            const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                            int Cout)
{
  (void)dw, (void)t0, (void)t1, (void)x_lo, (void)x, (void)x_hi, (void)dy, (void)nd, (void)H, (void)W;
  (void)Cin, (void)Cout;
  SF_ABORT("sf_conv3d_backward_weights_taps_direct: no AVX-512 build on this platform");
}
#endif

void sf_conv3d_backward_weights_direct(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                       const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  sf_conv3d_backward_weights_taps_direct(dw, 0, 27, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout);
}
