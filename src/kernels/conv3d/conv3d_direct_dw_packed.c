/* Weight gradient of the 3x3x3 convolution for short rows with many channels, as BLAS computes a
 * product: per tap, the voxels whose input lies in the volume are packed into two contiguous
 * panels, their inputs by blocks of R input channels (m x R) and their output gradients by blocks
 * of 16 channels (m x 16), and the register block (R input x 16 output channels, conv3d_direct_tiles.h
 * dwp blocks) runs down both panels sequentially:
 *   dw[t][ci][co] += sum over those voxels v of x[v + offset(t)][ci] * dy[v][co]
 * The unpacked kernel (conv3d_direct_dw.c) reads x and dy in place: 6 of 512 input floats and 16 of
 * 512 gradient floats per voxel, so each block pulls two whole cache lines per voxel from L2 and at
 * 8^3 x 512 channels ran at a third of a good sgemm. Voxels are taken in groups of
 * SF_DWP_GROUP_VOXELS (the gradient is loaded and stored once per group and block). NDHWC
 * activations, (27,Cin,Cout) weights, Cout a multiple of the vector width. */
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/workspace.h"

#include "conv3d_direct_internal.h"

#ifndef SF_DWP_GROUP_VOXELS
#define SF_DWP_GROUP_VOXELS 512
#endif

/* The voxels v of [v0, v1) (slab order) whose tap-t input lies in the volume or a halo: v in vi,
 * their input voxel in xin. Returns how many. */
static int tap_present(int *vi, const float **xin, int t, int v0, int v1, const float *x_lo, const float *x,
                       const float *x_hi, int nd, int H, int W, int Cin)
{
  int kd = t / 9, kh = t / 3 % 3, kw = t % 3, m = 0;
  size_t plane = (size_t)H * W * Cin;
  for (int v = v0; v < v1; v++) {
    int d = v / (H * W), h = v / W % H, w = v % W, e = d + kd - 1, hh = h + kh - 1, ww = w + kw - 1;
    if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
    const float *pl = e < 0 ? x_lo : e >= nd ? x_hi : x + (size_t)e * plane;
    if (!pl) continue;
    vi[m] = v;
    xin[m++] = pl + ((size_t)hh * W + ww) * Cin;
  }
  return m;
}

/* xp: block by block of input channels (block ci0 of r channels at xp + ci0*m: (m, r)); gp: block
 * by block of 16 output channels (a last one of 8; block co at gp + co*m: (m, 16)) */
static void pack_panels(float *xp, float *gp, const int *vi, const float *const *xin, int m, const float *dy,
                        int Cin, int Cout, int max_r)
{
  int nblk = (Cin + max_r - 1) / max_r, bbase = Cin / nblk, blong = Cin % nblk;
  for (int b = 0, ci0 = 0; b < nblk; ci0 += bbase + (b < blong), b++) {
    int r = bbase + (b < blong);
    float *dst = xp + (size_t)ci0 * m;
    for (int i = 0; i < m; i++, dst += r)
      for (int j = 0; j < r; j++) dst[j] = xin[i][ci0 + j];
  }
  for (int i = 0; i < m; i++) {
    const float *g = dy + (size_t)vi[i] * Cout;
    for (int co = 0; co < Cout; co += 16) {
      if (Cout - co >= 16)
        memcpy(gp + (size_t)co * m + (size_t)i * 16, g + co, sizeof(float) * 16);
      else
        memcpy(gp + (size_t)co * m + (size_t)i * 8, g + co, sizeof(float) * 8);
    }
  }
}

/* The next block's gradient rows, which its register block loads first: with few voxels per group
 * (a slab of one 4^3 plane has 16) the block's FMAs are too few to hide a load from memory */
static void prefetch_rows(const float *row, int Cout, int rows)
{
  for (int i = 0; i < rows; i++) {
    __builtin_prefetch(row + (size_t)i * Cout, 1);
    __builtin_prefetch(row + (size_t)i * Cout + 15, 1);
  }
}

void sf_direct_dw_packed(const sf_direct_kernels *ks, float *dw, int t0, int t1, const float *x_lo, const float *x,
                         const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(ks->vw == 8 && Cout % 8 == 0 && 0 <= t0 && t0 <= t1 && t1 <= 27);
  int nvox = nd * H * W, group = nvox < SF_DWP_GROUP_VOXELS ? nvox : SF_DWP_GROUP_VOXELS;
  int nblk = (Cin + ks->max_r - 1) / ks->max_r, bbase = Cin / nblk, blong = Cin % nblk;
  size_t list_floats = (size_t)group * (sizeof(int) + sizeof(float *)) / sizeof(float) + 1;
  const float **xin = (const float **)sf_workspace_floats(SF_DIRECT_TAIL_SLOT, list_floats);
  int *vi = (int *)(xin + group);
  float *xp = sf_workspace_floats(SF_DIRECT_RING_SLOT, (size_t)group * Cin);
  float *gp = sf_workspace_floats(SF_DIRECT_PACK_SLOT, (size_t)group * Cout);
  for (int v0 = 0; v0 < nvox; v0 += group) {
    int v1 = v0 + group < nvox ? v0 + group : nvox;
    for (int t = t0; t < t1; t++) {
      int m = tap_present(vi, xin, t, v0, v1, x_lo, x, x_hi, nd, H, W, Cin);
      if (m == 0) continue;
      pack_panels(xp, gp, vi, xin, m, dy, Cin, Cout, ks->max_r);
      float *dwt = dw + (size_t)(t - t0) * Cin * Cout;
      for (int co = 0; co < Cout; co += 16) {
        int nv = Cout - co >= 16 ? 2 : 1;
        for (int b = 0, ci0 = 0; b < nblk; ci0 += bbase + (b < blong), b++) {
          int r = bbase + (b < blong);
          prefetch_rows(dwt + (size_t)(ci0 + r) * Cout + co, Cout, ci0 + r < Cin ? bbase + 1 : 0);
          ks->dwp[nv - 1][r - 1](dwt + (size_t)ci0 * Cout + co, Cout, xp + (size_t)ci0 * m, gp + (size_t)co * m, m);
        }
      }
    }
  }
}
