/* CUDA wrappers of the channel concatenation codelets (codelets/concat.c): [y, a, b] and [da, db, dy]. */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

void sf_concat_fwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_concat_args *a = SF_CU_ARGS(sf_concat_args, "concat_fwd", cl_arg);
  sf_cuda_concat_forward(SF_CU_STREAM, sf_cu_blk(buffers[0], "concat_fwd y"), sf_cu_blk(buffers[1], "concat_fwd a"),
                         sf_cu_blk(buffers[2], "concat_fwd b"), sf_blk_vox(buffers[1], a->Ca), a->Ca, a->Cb);
}

void sf_concat_bwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_concat_args *a = SF_CU_ARGS(sf_concat_args, "concat_bwd", cl_arg);
  sf_cuda_concat_backward(SF_CU_STREAM, sf_cu_blk(buffers[0], "concat_bwd da"), sf_cu_blk(buffers[1], "concat_bwd db"),
                          sf_cu_blk(buffers[2], "concat_bwd dy"), sf_blk_vox(buffers[0], a->Ca), a->Ca, a->Cb);
}

#endif
