/* Voxelization of one fractal point cloud (spec §4.3, upstream `points_to_voxel_indices`, dataset
 * format v5): isotropic fit of the longest extent to the grid, shorter axes centred, all in the
 * same float32 arithmetic as NumPy so boundary voxels land where upstream's do. Output is the
 * sorted set of occupied voxels as linear indices d*G*G + h*G + w, where (d, h, w) = (i0, i1, i2)
 * come from the point's (x, y, z) - the order np.unique(idx, axis=0) returns them in. Pure C. */
#include "scaffold/dataset.h"

#include <math.h>
#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int sf_voxelize(const float *pts, size_t n, int grid, uint64_t *lin, size_t *n_out)
{
  *n_out = 0;
  if (n == 0) return 0;
  for (size_t i = 0; i < 3 * n; i++)
    if (!isfinite(pts[i])) return -1;

  /* 1) bounding box, float32 */
  float mn[3], mx[3];
  for (int a = 0; a < 3; a++) mn[a] = mx[a] = pts[a];
  for (size_t i = 1; i < n; i++)
    for (int a = 0; a < 3; a++) {
      float v = pts[3 * i + a];
      if (v < mn[a]) mn[a] = v;
      if (v > mx[a]) mx[a] = v;
    }
  /* 2) isotropic voxel size: (maxs - mins) in float32, its max as a double */
  float ext = mx[0] - mn[0];
  for (int a = 1; a < 3; a++) {
    float e = mx[a] - mn[a];
    if (e > ext) ext = e;
  }
  double vs = ((double)ext + 1e-6) / (double)grid;
  float vsf = (float)vs; /* NumPy casts the Python float to the array's float32 */

  /* 3) s = (p - min) / vs in float32; 4) span = max s per axis, offset = (G - span) / 2 */
  float span[3] = {0.0f, 0.0f, 0.0f};
  for (size_t i = 0; i < n; i++)
    for (int a = 0; a < 3; a++) {
      float s = (pts[3 * i + a] - mn[a]) / vsf;
      if (s > span[a]) span[a] = s;
    }
  float off[3];
  for (int a = 0; a < 3; a++) off[a] = ((float)grid - span[a]) / 2.0f;

  /* idx = floor(s + offset), clipped to [0, G-1] */
  for (size_t i = 0; i < n; i++) {
    uint64_t id[3];
    for (int a = 0; a < 3; a++) {
      float s = (pts[3 * i + a] - mn[a]) / vsf;
      float f = floorf(s + off[a]);
      long v = (long)f;
      if (v < 0) v = 0;
      if (v > grid - 1) v = grid - 1;
      id[a] = (uint64_t)v;
    }
    lin[i] = (id[0] * (uint64_t)grid + id[1]) * (uint64_t)grid + id[2]; /* 64-bit: 2048^3 > 2^32 */
  }
  /* 5) deduplicate (sorted, like np.unique(axis=0)) */
  qsort(lin, n, sizeof *lin, cmp_u64);
  size_t k = 1;
  for (size_t i = 1; i < n; i++)
    if (lin[i] != lin[k - 1]) lin[k++] = lin[i];
  *n_out = k;
  return 0;
}
