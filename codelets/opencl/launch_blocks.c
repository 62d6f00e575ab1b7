/* OpenCL launchers of the H/W block copies (codelets/halo_blocks.c: box copy, layer copy, column and row
 * padding, crop, embed): the moves of halo_blocks_moves.h as clEnqueueCopyBufferRect, after a zero
 * fill where a border has no neighbour. No kernels. Same buffers and cl_arg as the CPU functions. */
#include "ocl_internal.h" /* first: it sets the OpenCL version of the headers */

#include "../halo_blocks_moves.h"

#ifdef STARPU_USE_OPENCL

static void run_moves(int op, const char *name, void *buffers[], void *cl_arg)
{
  sf_ocl_check_args(name, sizeof(sf_blocks_args));
  const sf_blocks_args *a = cl_arg;
  sf_box_move mv[3];
  int zero, n = sf_blocks_moves(op, buffers, a, mv, &zero);
  const size_t es = STARPU_BLOCK_GET_ELEMSIZE(buffers[0]), vb = es * (size_t)a->C;
  if (zero) {
    size_t nd;
    sf_ocl_buf d = sf_ocl_any(buffers[0], es, &nd, name);
    sf_ocl_fill_zero(d, nd, es);
  }
  for (int i = 0; i < n; i++) {
    const sf_box_move *m = &mv[i];
    sf_ocl_buf d = sf_ocl_block(m->dst, es, name), s = sf_ocl_block(m->src, es, name);
    const size_t drow = (size_t)m->dn[2] * vb, dslice = drow * m->dn[1];
    const size_t srow = (size_t)m->sn[2] * vb, sslice = srow * m->sn[1];
    /* the buffers' own offsets go into the x origins (offset = z * slice + y * row + x) */
    size_t so[3] = {s.off * es + (size_t)m->slo[2] * vb, (size_t)m->slo[1], (size_t)m->slo[0]};
    size_t dof[3] = {d.off * es + (size_t)m->dlo[2] * vb, (size_t)m->dlo[1], (size_t)m->dlo[0]};
    size_t region[3] = {(size_t)m->ext[2] * vb, (size_t)m->ext[1], (size_t)m->ext[0]};
    sf_ocl_check(clEnqueueCopyBufferRect(sf_ocl_queue(), s.mem, d.mem, so, dof, region, srow, sslice, drow, dslice, 0,
                                         NULL, NULL),
                 "clEnqueueCopyBufferRect", name);
  }
  sf_ocl_done();
}

void sf_box_copy_opencl(void *buffers[], void *cl_arg) { run_moves(SF_MV_BOX_COPY, "box_copy", buffers, cl_arg); }
void sf_layer_copy_opencl(void *buffers[], void *cl_arg) { run_moves(SF_MV_LAYER_COPY, "layer_copy", buffers, cl_arg); }
void sf_pad_cols_opencl(void *buffers[], void *cl_arg) { run_moves(SF_MV_PAD_COLS, "pad_cols", buffers, cl_arg); }
void sf_pad_rows_opencl(void *buffers[], void *cl_arg) { run_moves(SF_MV_PAD_ROWS, "pad_rows", buffers, cl_arg); }
void sf_crop_hw_opencl(void *buffers[], void *cl_arg) { run_moves(SF_MV_CROP, "crop_hw", buffers, cl_arg); }
void sf_embed_hw_opencl(void *buffers[], void *cl_arg) { run_moves(SF_MV_EMBED, "embed_hw", buffers, cl_arg); }

#endif
