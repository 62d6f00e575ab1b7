/* Weight gradient of the 3x3x3 convolution computed directly, without im2col, with the register
 * blocks of the active CPU kernel set (scaffold/cpu_isa.h, conv3d_direct_tiles.h):
 *   dw[t][ci][co] += sum over output voxels v of x[v + offset(t)][ci] * dy[v][co]
 * NDHWC activations, (27,Cin,Cout) weights (scaffold/ops.h), a range of taps [t0, t1) so two
 * workers can share one layer's gradient as with the im2col kernel.
 * Register block: R input channels (R <= 12 with AVX-512, 6 with AVX2/C) times NV vectors of
 * output channels (NV = 2, or 1 for a last block of one vector) of one tap, loaded from dw,
 * accumulated over a group of output rows (about SF_DW_GROUP_VOXELS voxels, so the group's dy and
 * x rows stay in L2 while every block of the gradient visits them), stored back. Per voxel: NV
 * loads of dy, R broadcasts of x, R*NV FMAs. A last output channel block narrower than a vector
 * runs on zero-padded copies of its dy columns and gradient rows, so any Cout works. */
#include <string.h>

#include "conv3d_direct_internal.h"
#include "conv3d_variants.h"

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#ifndef SF_DW_GROUP_VOXELS
#define SF_DW_GROUP_VOXELS 256
#endif
/* Planes smaller than the group (short rows: at 8^3 a plane is 64 voxels) would make every block
 * of the gradient (27*Cin*Cout floats, 7 MiB at 256 channels) load and store itself per plane;
 * their groups span planes instead, up to this many voxels, over a W-padded copy of the slab */
#ifndef SF_DW_SLAB_GROUP_VOXELS
#define SF_DW_SLAB_GROUP_VOXELS 512
#endif
#define SF_DW_MAX_ROWS SF_DW_SLAB_GROUP_VOXELS
#ifndef SF_DWP_MIN_CIN
#define SF_DWP_MIN_CIN 64 /* the packed driver: at least this many input channels, */
#endif
#ifndef SF_DWP_WIDE_CIN
#define SF_DWP_WIDE_CIN 256 /* and short rows or at least this many */
#endif

/* dst: (n, width) = the nb columns of src: (n, stride), zero-padded */
static void copy_cols_padded(float *dst, int width, const float *src, size_t stride, size_t n, int nb)
{
  for (size_t i = 0; i < n; i++, dst += width, src += stride) {
    memcpy(dst, src, sizeof(float) * nb);
    memset(dst + nb, 0, sizeof(float) * (width - nb));
  }
}

/* The gradient rows of one tap (dwt: (Cin, Cout)) += the group's contribution, in balanced blocks
 * of input channels times two vectors of output channels. gpad: the group's dy columns of the last,
 * partial channel block zero-padded to its vectors (n x width), or NULL when there is none. */
static void dw_tap(const sf_direct_kernels *ks, float *dwt, const float *const *xrows, const float *g,
                   const float *gpad, int nrows, int W, int Cin, int Cout)
{
  int vw = ks->vw, nblk = (Cin + ks->max_r - 1) / ks->max_r, bbase = Cin / nblk, blong = Cin % nblk;
  const float *xb[SF_DW_MAX_ROWS];
  for (int b = 0, ci0 = 0; b < nblk; b++) {
    int r = bbase + (b < blong);
    for (int i = 0; i < nrows; i++) xb[i] = xrows[i] ? xrows[i] + ci0 : NULL;
    for (int co = 0; co < Cout; co += 2 * vw) {
      int nb = Cout - co < 2 * vw ? Cout - co : 2 * vw, nv = (nb + vw - 1) / vw, width = nv * vw;
      float *dwb = dwt + (size_t)ci0 * Cout + co;
      if (nb == width) {
        ks->dw[nv - 1][r - 1](dwb, Cout, xb, g + co, Cout, nrows, W, Cin);
        continue;
      }
      float *tmp = sf_workspace_floats(SF_DIRECT_TAIL2_SLOT, (size_t)r * width);
      copy_cols_padded(tmp, width, dwb, Cout, r, nb);
      ks->dw[nv - 1][r - 1](tmp, width, xb, gpad, width, nrows, W, Cin);
      for (int i = 0; i < r; i++) memcpy(dwb + (size_t)i * Cout, tmp + (size_t)i * width, sizeof(float) * nb);
    }
    ci0 += r;
  }
}

/* The group of output rows [r0, r0+nrows) of the slab (row r = plane r/H, row r%H), for tap t:
 * xrows[i] = the W-padded input row under row r0+i, offset by kw voxels (NULL: outside the volume).
 * pad: nd+2 padded planes (plane e+1 = input plane e, e = -1..nd; have_lo/hi: the halos exist).
 * Returns whether any row is present. */
static int slab_group_rows(const float **xrows, const float *pad, int t, int r0, int nrows, int nd, int H, int W,
                           int Cin, int have_lo, int have_hi)
{
  size_t prow = (size_t)(W + 2) * Cin, pplane = (size_t)H * prow;
  int kd = t / 9, kh = t / 3 % 3, kw = t % 3, any = 0;
  for (int i = 0; i < nrows; i++) {
    int e = (r0 + i) / H + kd - 1, hh = (r0 + i) % H + kh - 1;
    int present = hh >= 0 && hh < H && (e >= 0 || have_lo) && (e < nd || have_hi);
    xrows[i] = present ? pad + (size_t)(e + 1) * pplane + (size_t)hh * prow + (size_t)kw * Cin : NULL;
    any |= present;
  }
  return any;
}

/* The same gradient for planes smaller than a group: groups of whole rows spanning planes */
static void dw_slab_groups(const sf_direct_kernels *ks, float *dw, int t0, int t1, const float *x_lo,
                           const float *x, const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                           int Cout, int last_c, int last_w)
{
  size_t plane = (size_t)H * W * Cin, pplane = (size_t)H * (W + 2) * Cin;
  float *pad = sf_workspace_floats(SF_DIRECT_RING_SLOT, (size_t)(nd + 2) * pplane);
  for (int e = -1; e <= nd; e++) {
    const float *src = e < 0 ? x_lo : e >= nd ? x_hi : x + (size_t)e * plane;
    if (src) sf_direct_pad_plane(pad + (size_t)(e + 1) * pplane, src, H, W, Cin);
  }
  int rows = nd * H, group = (int)sf_max_sz(1, sf_min_sz(rows, SF_DW_SLAB_GROUP_VOXELS / W));
  float *gpad = Cout - last_c < last_w ? sf_workspace_floats(SF_DIRECT_TAIL_SLOT, (size_t)group * W * last_w) : NULL;
  for (int r0 = 0; r0 < rows; r0 += group) {
    int nrows = rows - r0 < group ? rows - r0 : group;
    const float *g = dy + (size_t)r0 * W * Cout;
    if (gpad) copy_cols_padded(gpad, last_w, g + last_c, Cout, (size_t)nrows * W, Cout - last_c);
    for (int t = t0; t < t1; t++) {
      const float *xrows[SF_DW_MAX_ROWS];
      if (slab_group_rows(xrows, pad, t, r0, nrows, nd, H, W, Cin, x_lo != NULL, x_hi != NULL))
        dw_tap(ks, dw + (size_t)(t - t0) * Cin * Cout, xrows, g, gpad, nrows, W, Cin, Cout);
    }
  }
}

/* Where the packed driver (conv3d_direct_dw_packed.c) beats this file's in-place one, 8-float sets:
 * planes smaller than a group or many input channels (measured with bench-kernels on the AVX2 EPYC
 * of conv3d.c, GFLOP/s packed vs in place: 8^3 256->256 78.5 vs 42.9, 16^3 256->256
 * 64.8 vs 44.7, 4^3 512->512 79.6 vs 43.8), but with few input channels and large planes it loses
 * (64^3 64->64 39.8 vs 55.4, 32^3 128->64 39.8 vs 48.9, 64^3 3->64 14.7 vs 38.2) */
static int dw_packed_pays(int H, int W, int Cin)
{
  return Cin >= SF_DWP_MIN_CIN && ((size_t)H * W * 2 <= SF_DW_GROUP_VOXELS || Cin >= SF_DWP_WIDE_CIN);
}

void sf_conv3d_backward_weights_taps_direct(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                            const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                            int Cout)
{
  SF_ASSERT(0 <= t0 && t0 <= t1 && t1 <= 27);
  const sf_direct_kernels *ks = sf_direct_kernels_for(Cout);
  /* the last channel block: channels [last_c, Cout) in last_w floats of vectors */
  int vw = ks->vw, last_c = (Cout - 1) / (2 * vw) * (2 * vw), last_w = (Cout - last_c + vw - 1) / vw * vw;
  if (ks->vw == 8 && Cout % 8 == 0 && dw_packed_pays(H, W, Cin)) {
    sf_direct_dw_packed(ks, dw, t0, t1, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout);
    return;
  }
  if ((size_t)H * W * 2 <= SF_DW_GROUP_VOXELS) {
    dw_slab_groups(ks, dw, t0, t1, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout, last_c, last_w);
    return;
  }
  size_t prow = (size_t)(W + 2) * Cin;
  float *ring = sf_workspace_floats(SF_DIRECT_RING_SLOT, 3 * H * prow);
  int held[3] = {-2, -2, -2}, group = (int)sf_max_sz(1, sf_min_sz(H, SF_DW_GROUP_VOXELS / W));
  float *gpad = Cout - last_c < last_w ? sf_workspace_floats(SF_DIRECT_TAIL_SLOT, (size_t)group * W * last_w) : NULL;
  for (int d = 0; d < nd; d++) {
    const float *pl[3];
    sf_direct_ring_planes(pl, ring, held, d, x_lo, x, x_hi, nd, H, W, Cin);
    for (int h0 = 0; h0 < H; h0 += group) {
      int nrows = H - h0 < group ? H - h0 : group;
      const float *g = dy + ((size_t)d * H + h0) * W * Cout;
      if (gpad) copy_cols_padded(gpad, last_w, g + last_c, Cout, (size_t)nrows * W, Cout - last_c);
      for (int t = t0; t < t1; t++) {
        int kd = t / 9, kh = t / 3 % 3, kw = t % 3, any = 0;
        const float *xrows[SF_DW_MAX_ROWS];
        for (int i = 0; i < nrows; i++) {
          int hh = h0 + i + kh - 1;
          xrows[i] = (pl[kd] && hh >= 0 && hh < H) ? pl[kd] + (size_t)hh * prow + (size_t)kw * Cin : NULL;
          any |= xrows[i] != NULL;
        }
        if (any) dw_tap(ks, dw + (size_t)(t - t0) * Cin * Cout, xrows, g, gpad, nrows, W, Cin, Cout);
      }
    }
  }
}

void sf_conv3d_backward_weights_direct(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                       const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  sf_conv3d_backward_weights_taps_direct(dw, 0, 27, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout);
}
