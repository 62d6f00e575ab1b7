/* Where the 2x2x2 children of an input voxel of the k2s2 transposed convolution lie in its output,
 * shared by the sgemm and direct kernels (upconv3d_blas.c, upconv3d_direct.c). */
#ifndef SF_UPCONV3D_CHILD_H
#define SF_UPCONV3D_CHILD_H

#include <stddef.h>

/* Offset in a (2nd,2H,2W,C) tensor of child (a,p,0) of input voxel v; children q = 0, 1 are adjacent,
 * as they are in a y8 row, so each (a,p) moves 2*C contiguous floats, and the children (a,p) of the
 * voxels of one input row follow each other 2*C floats apart. */
static inline size_t sf_upconv_child_pair(size_t v, int a, int p, int H, int W, int C)
{
  size_t hw = (size_t)H * W, d = v / hw, h = v / W % H, w = v % W;
  return (((2 * d + a) * 2 * H + 2 * h + p) * 2 * W + 2 * w) * C;
}

#endif
