/* CUDA wrappers of the H/W block copies (codelets/halo_blocks.c: box copy, layer copy, column and row
 * padding, crop, embed): the moves of halo_blocks_moves.h as one cudaMemcpy2DAsync per depth plane of
 * each box, after a cudaMemsetAsync where a border has no neighbour. Same buffers and cl_arg as the
 * CPU functions. */
#include "../halo_blocks_moves.h"
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

static void run_moves(int op, const char *name, void *buffers[], void *cl_arg)
{
  const sf_blocks_args *a = SF_CU_ARGS(sf_blocks_args, name, cl_arg);
  cudaStream_t st = SF_CU_STREAM;
  sf_box_move mv[3];
  int zero, n = sf_blocks_moves(op, buffers, a, mv, &zero);
  const size_t es = STARPU_BLOCK_GET_ELEMSIZE(buffers[0]), vb = es * (size_t)a->C;
  if (zero) {
    size_t bytes = STARPU_BLOCK_GET_NX(buffers[0]) * STARPU_BLOCK_GET_NY(buffers[0]) * STARPU_BLOCK_GET_NZ(buffers[0]) * es;
    sf_cu_check(cudaMemsetAsync((void *)STARPU_BLOCK_GET_PTR(buffers[0]), 0, bytes, st), "cudaMemsetAsync(block copy)");
  }
  for (int i = 0; i < n; i++) {
    const sf_box_move *m = &mv[i];
    char *d = (char *)STARPU_BLOCK_GET_PTR(m->dst);
    const char *s = (const char *)STARPU_BLOCK_GET_PTR(m->src);
    const size_t drow = (size_t)m->dn[2] * vb, srow = (size_t)m->sn[2] * vb;
    for (int z = 0; z < m->ext[0]; z++) {
      char *dp = d + ((size_t)(m->dlo[0] + z) * m->dn[1] + m->dlo[1]) * drow + (size_t)m->dlo[2] * vb;
      const char *sp = s + ((size_t)(m->slo[0] + z) * m->sn[1] + m->slo[1]) * srow + (size_t)m->slo[2] * vb;
      sf_cu_check(cudaMemcpy2DAsync(dp, drow, sp, srow, (size_t)m->ext[2] * vb, (size_t)m->ext[1],
                                    cudaMemcpyDeviceToDevice, st),
                  "cudaMemcpy2DAsync(block copy)");
    }
  }
}

void sf_box_copy_cuda(void *buffers[], void *cl_arg) { run_moves(SF_MV_BOX_COPY, "box_copy", buffers, cl_arg); }
void sf_layer_copy_cuda(void *buffers[], void *cl_arg) { run_moves(SF_MV_LAYER_COPY, "layer_copy", buffers, cl_arg); }
void sf_pad_cols_cuda(void *buffers[], void *cl_arg) { run_moves(SF_MV_PAD_COLS, "pad_cols", buffers, cl_arg); }
void sf_pad_rows_cuda(void *buffers[], void *cl_arg) { run_moves(SF_MV_PAD_ROWS, "pad_rows", buffers, cl_arg); }
void sf_crop_hw_cuda(void *buffers[], void *cl_arg) { run_moves(SF_MV_CROP, "crop_hw", buffers, cl_arg); }
void sf_embed_hw_cuda(void *buffers[], void *cl_arg) { run_moves(SF_MV_EMBED, "embed_hw", buffers, cl_arg); }

#endif
