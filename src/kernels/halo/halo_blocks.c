/* Plain kernels of the H/W block decomposition (docs/architecture.md §5): a conv on a block of an
 * activation split in rows and columns runs on a copy of the block with a one-voxel border of its
 * neighbours' rows and columns (pad: columns first, then rows of the column-padded blocks, so the
 * corners come along), and its output is the interior of the padded result (crop). Blocks are
 * contiguous (nd, h, w, C) volumes of vb bytes per voxel; a neighbour is passed whole or as the one
 * layer of it that matters (a halo piece), and NULL means the volume's face (zeros). */
#include <string.h>

#include "scaffold/ops.h"

/* dst (nd, h, w+2): src (nd, h, w) with column -1 from lo's last column and column w from hi's first.
 * lo: (nd, h, lo_w), hi: (nd, h, hi_w). */
void sf_pad_cols(void *dst, const void *src, const void *lo, int lo_w, const void *hi, int hi_w, int nd, int h,
                 int w, size_t vb)
{
  const size_t row = (size_t)w * vb, prow = row + 2 * vb;
  char *d = dst;
  const char *s = src;
  for (size_t r = 0; r < (size_t)nd * h; r++, d += prow, s += row) {
    if (lo) memcpy(d, (const char *)lo + (r * lo_w + lo_w - 1) * vb, vb);
    else memset(d, 0, vb);
    memcpy(d + vb, s, row);
    if (hi) memcpy(d + vb + row, (const char *)hi + r * hi_w * vb, vb);
    else memset(d + vb + row, 0, vb);
  }
}

/* dst (nd, h+2, W): src (nd, h, W) with row -1 from lo's last row and row h from hi's first.
 * lo: (nd, lo_h, W), hi: (nd, hi_h, W). */
void sf_pad_rows(void *dst, const void *src, const void *lo, int lo_h, const void *hi, int hi_h, int nd, int h,
                 int W, size_t vb)
{
  const size_t row = (size_t)W * vb;
  char *d = dst;
  const char *s = src;
  for (int z = 0; z < nd; z++) {
    if (lo) memcpy(d, (const char *)lo + ((size_t)z * lo_h + lo_h - 1) * row, row);
    else memset(d, 0, row);
    memcpy(d + row, s + (size_t)z * h * row, (size_t)h * row);
    d += (size_t)(h + 1) * row;
    if (hi) memcpy(d, (const char *)hi + (size_t)z * hi_h * row, row);
    else memset(d, 0, row);
    d += row;
  }
}

/* dst (nd, h, w): the interior of src (nd, h+2, w+2). */
void sf_crop_hw(void *dst, const void *src, int nd, int h, int w, size_t vb)
{
  const size_t row = (size_t)w * vb, prow = row + 2 * vb;
  char *d = dst;
  for (int z = 0; z < nd; z++)
    for (int y = 0; y < h; y++, d += row)
      memcpy(d, (const char *)src + (((size_t)z * (h + 2) + y + 1) * prow) + vb, row);
}

/* dst (nd, h+2, w+2): src (nd, h, w) inside a border of zeros. */
void sf_embed_hw(void *dst, const void *src, int nd, int h, int w, size_t vb)
{
  const size_t row = (size_t)w * vb, prow = row + 2 * vb;
  memset(dst, 0, (size_t)nd * (h + 2) * prow);
  const char *s = src;
  for (int z = 0; z < nd; z++)
    for (int y = 0; y < h; y++, s += row) memcpy((char *)dst + (((size_t)z * (h + 2) + y + 1) * prow) + vb, s, row);
}

/* dst: the first (last = 0) or last layer along axis (0 depth, 1 rows, 2 columns) of src (n[0], n[1],
 * n[2]); dst has that block's extents with 1 along axis. */
void sf_layer_copy(void *dst, const void *src, const int n[3], int axis, int last, size_t vb)
{
  const size_t row = (size_t)n[2] * vb, plane = (size_t)n[1] * row;
  char *d = dst;
  if (axis == 0) {
    memcpy(d, (const char *)src + (last ? (size_t)(n[0] - 1) : 0) * plane, plane);
    return;
  }
  for (int z = 0; z < n[0]; z++) {
    const char *s = (const char *)src + (size_t)z * plane;
    if (axis == 1) {
      memcpy(d, s + (last ? (size_t)(n[1] - 1) : 0) * row, row);
      d += row;
      continue;
    }
    for (int y = 0; y < n[1]; y++, d += vb) memcpy(d, s + y * row + (last ? (size_t)(n[2] - 1) : 0) * vb, vb);
  }
}

/* dst (dn[0], dn[1], dn[2]) at dlo gets the box of extents ext of src (sn[0], sn[1], sn[2]) at slo. */
void sf_box_copy(void *dst, const int dn[3], const int dlo[3], const void *src, const int sn[3], const int slo[3],
                 const int ext[3], size_t vb)
{
  const size_t run = (size_t)ext[2] * vb;
  for (int z = 0; z < ext[0]; z++)
    for (int y = 0; y < ext[1]; y++) {
      size_t d = (((size_t)(dlo[0] + z) * dn[1] + dlo[1] + y) * dn[2] + dlo[2]) * vb;
      size_t s = (((size_t)(slo[0] + z) * sn[1] + slo[1] + y) * sn[2] + slo[2]) * vb;
      memcpy((char *)dst + d, (const char *)src + s, run);
    }
}
