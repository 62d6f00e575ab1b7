/* The H/W block copies (codelets/halo_blocks.c) as rectangular moves between blocks, for the device
 * implementations (cuda_glue/blocks_cuda.c, opencl/launch_blocks.c), which copy boxes with the
 * device's rectangular copy and zero-fill instead of running the CPU kernels. A block interface is
 * a contiguous (nz, ny, nx / C) volume of C-channel voxels; each move copies a box of ext voxels from
 * src at slo to dst at dlo; zero_first asks for dst to be zeroed before the moves. */
#ifndef SF_HALO_BLOCKS_MOVES_H
#define SF_HALO_BLOCKS_MOVES_H

#include <starpu.h>

#include "scaffold/codelet_args.h"

enum { SF_MV_BOX_COPY, SF_MV_LAYER_COPY, SF_MV_PAD_COLS, SF_MV_PAD_ROWS, SF_MV_CROP, SF_MV_EMBED };

typedef struct {
  void *dst, *src;            /* block interfaces */
  int dn[3], sn[3];           /* their extents in voxels (depth, rows, columns) */
  int dlo[3], slo[3], ext[3]; /* the box */
} sf_box_move;

static inline void sf_mv_extents(void *iface, int C, int n[3])
{
  n[0] = (int)STARPU_BLOCK_GET_NZ(iface);
  n[1] = (int)STARPU_BLOCK_GET_NY(iface);
  n[2] = (int)(STARPU_BLOCK_GET_NX(iface) / (uint32_t)C);
}

/* Adds a move of ext from src at slo to dst at dlo. */
static inline void sf_mv_add(sf_box_move *mv, int *n, void *dst, void *src, int C, const int dlo[3], const int slo[3],
                             const int ext[3])
{
  sf_box_move *m = &mv[(*n)++];
  m->dst = dst;
  m->src = src;
  sf_mv_extents(dst, C, m->dn);
  sf_mv_extents(src, C, m->sn);
  for (int i = 0; i < 3; i++) {
    m->dlo[i] = dlo[i];
    m->slo[i] = slo[i];
    m->ext[i] = ext[i];
  }
}

/* The moves of op (SF_MV_*) on buffers [dst, src, lo?, hi?] (at most 3); *zero_first: zero dst first. */
static inline int sf_blocks_moves(int op, void *buffers[], const sf_blocks_args *a, sf_box_move mv[3], int *zero_first)
{
  int n = 0, s[3], z[3] = {0, 0, 0};
  void *dst = buffers[0], *src = buffers[1];
  *zero_first = 0;
  if (op == SF_MV_BOX_COPY) {
    sf_mv_add(mv, &n, dst, src, a->C, a->dlo, a->slo, a->ext);
    return n;
  }
  if (op == SF_MV_LAYER_COPY) { /* dst: src's first or last layer along a->axis */
    sf_mv_extents(src, a->C, s);
    int slo[3] = {0, 0, 0}, ext[3] = {s[0], s[1], s[2]};
    slo[a->axis] = a->last ? s[a->axis] - 1 : 0;
    ext[a->axis] = 1;
    sf_mv_add(mv, &n, dst, src, a->C, z, slo, ext);
    return n;
  }
  if (op == SF_MV_CROP || op == SF_MV_EMBED) { /* the interior of the padded one */
    int in[3] = {0, 1, 1};
    sf_mv_extents(op == SF_MV_CROP ? dst : src, a->C, s);
    sf_mv_add(mv, &n, dst, src, a->C, op == SF_MV_CROP ? z : in, op == SF_MV_CROP ? in : z, s);
    *zero_first = op == SF_MV_EMBED;
    return n;
  }
  /* pad along axis 2 (columns) or 1 (rows): the centre one voxel in, then each neighbour's facing layer */
  const int axis = op == SF_MV_PAD_COLS ? 2 : 1;
  sf_mv_extents(src, a->C, s);
  int at[3] = {0, 0, 0}, ext[3] = {s[0], s[1], s[2]};
  at[axis] = 1;
  sf_mv_add(mv, &n, dst, src, a->C, at, z, s);
  ext[axis] = 1;
  int i = 2;
  if (a->has_lo) {
    int ln[3], slo[3] = {0, 0, 0};
    sf_mv_extents(buffers[i], a->C, ln);
    slo[axis] = ln[axis] - 1; /* its last layer */
    sf_mv_add(mv, &n, dst, buffers[i++], a->C, z, slo, ext);
  }
  if (a->has_hi) {
    int hi_at[3] = {0, 0, 0};
    hi_at[axis] = s[axis] + 1;
    sf_mv_add(mv, &n, dst, buffers[i], a->C, hi_at, z, ext); /* its first layer */
  }
  *zero_first = !a->has_lo || !a->has_hi;
  return n;
}

#endif
