/* Where the 2x2x2 children of an input voxel of the k2s2 transposed convolution lie in its output,
 * and the y8/g8 staging of a chunk of voxels' children as rows of 8*C floats (y8[v][k][c] = y[child
 * k of v][c], k = a*4+p*2+q), shared by the sgemm and direct kernels (upconv3d_blas.c,
 * upconv3d_direct.c). */
#ifndef SF_UPCONV3D_CHILD_H
#define SF_UPCONV3D_CHILD_H

#include <stddef.h>
#include <string.h>

#include "scaffold/common.h"

/* Offset in a (2nd,2H,2W,C) tensor of child (a,p,0) of input voxel v; children q = 0, 1 are adjacent,
 * as they are in a y8 row, so each (a,p) moves 2*C contiguous floats, and the children (a,p) of the
 * voxels of one input row follow each other 2*C floats apart. */
static inline size_t sf_upconv_child_pair(size_t v, int a, int p, int H, int W, int C)
{
  size_t hw = (size_t)H * W, d = v / hw, h = v / W % H, w = v % W;
  return (((2 * d + a) * 2 * H + 2 * h + p) * 2 * W + 2 * w) * C;
}

#define SF_UPCONV_BYTES ((size_t)4 << 20)
#define SF_UPCONV_MAX_ROWS 1024

static inline int sf_upconv_chunk_rows(int Cout, size_t nvox)
{
  size_t r = SF_UPCONV_BYTES / ((size_t)8 * Cout * sizeof(float));
  r = sf_max_sz(8, sf_min_sz(r, SF_UPCONV_MAX_ROWS));
  return (int)sf_min_sz(r, nvox);
}

/* y[children of voxels v0..v1-1] = y8: (v1-v0, 8*C) + b: (C) */
static inline void sf_upconv_scatter(float *y, const float *y8, const float *b, size_t v0, size_t v1, int H, int W,
                                     int C)
{
  for (size_t v = v0; v < v1; v++)
    for (int ap = 0; ap < 4; ap++) {
      float *yo = y + sf_upconv_child_pair(v, ap >> 1, ap & 1, H, W, C);
      const float *s = y8 + ((v - v0) * 4 + ap) * 2 * C;
      for (int q = 0; q < 2; q++)
        for (int c = 0; c < C; c++) yo[q * C + c] = s[q * C + c] + b[c];
    }
}

/* g8: (v1-v0, 8*C) = dy[children of voxels v0..v1-1] */
static inline void sf_upconv_gather(float *g8, const float *dy, size_t v0, size_t v1, int H, int W, int C)
{
  for (size_t v = v0; v < v1; v++)
    for (int ap = 0; ap < 4; ap++)
      memcpy(g8 + ((v - v0) * 4 + ap) * 2 * C, dy + sf_upconv_child_pair(v, ap >> 1, ap & 1, H, W, C),
             (size_t)2 * C * sizeof(float));
}

#endif
