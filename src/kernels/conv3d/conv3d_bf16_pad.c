/* The zero-padded bf16 copy of a slab that the bf16 3x3x3 convolution kernels read (its geometry:
 * common/bf16_internal.h): only the padding is zeroed, the interior is converted from fp32. */
#include <string.h>

#include "scaffold/common.h"

#include "conv3d_bf16_internal.h"

/* Zero the padding voxels of padded plane e (-1..nd) of xb: the rows above and below the interior rows and the
 * column on each side, which lie between two interior rows as one run of 2 voxels (conv3d_bf16_internal.h) */
static void zero_plane_border(sf_bf16 *xb, int e, int H, int W, int Kp)
{
  const size_t vb = sizeof(sf_bf16) * Kp, prow = (size_t)W + 2;
  sf_bf16 *plane = xb + sf_bf16_pidx(e, -1, -1, H, W) * Kp;
  memset(plane, 0, (prow + 1) * vb); /* row -1, then the left column of row 0 */
  for (int h = 0; h + 1 < H; h++) memset(xb + sf_bf16_pidx(e, h, W, H, W) * Kp, 0, 2 * vb);
  memset(xb + sf_bf16_pidx(e, H - 1, W, H, W) * Kp, 0, (prow + 1) * vb); /* right column of row H-1, row H */
}

void sf_bf16_pad_slab(sf_bf16 *xb, const float *x_lo, const float *x, const float *x_hi, int nd, int H, int W, int K,
                      int Kp)
{
  const size_t plane = (size_t)H * W * K, pplane = (size_t)(H + 2) * (W + 2);
  /* K < Kp leaves channels of every voxel unwritten: all zero first; else only what no row copy writes */
  if (K != Kp) memset(xb, 0, sizeof(sf_bf16) * sf_bf16_pad_voxels(nd, H, W) * Kp);
  else memset(xb + (size_t)(nd + 2) * pplane * Kp, 0, sizeof(sf_bf16) * SF_BF16_MARGIN * Kp);
  for (int e = -1; e <= nd; e++) {
    const float *src = e < 0 ? x_lo : e >= nd ? x_hi : x + (size_t)e * plane;
    if (K == Kp && !src) memset(xb + (size_t)(e + 1) * pplane * Kp, 0, sizeof(sf_bf16) * pplane * Kp);
    if (!src) continue;
    if (K == Kp) zero_plane_border(xb, e, H, W, Kp);
    for (int h = 0; h < H; h++, src += (size_t)W * K) {
      sf_bf16 *dst = xb + sf_bf16_pidx(e, h, 0, H, W) * Kp;
      if (K == Kp) {
        sf_bf16_from_floats(dst, src, (size_t)W * K);
        continue;
      }
      for (int w = 0; w < W; w++) sf_bf16_from_floats(dst + (size_t)w * Kp, src + (size_t)w * K, (size_t)K);
    }
  }
}
