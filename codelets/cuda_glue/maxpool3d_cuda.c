/* CUDA wrappers of the MaxPool 2/2 codelets (codelets/maxpool3d.c): forward [y, idx, x] with sizes
 * from the coarse y; backward [dx, dy, idx, add?] = unpool(dy), plus the skip-connection gradient
 * `add` when present (dx += add, as the CPU function). */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

void sf_maxpool3d_fwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_maxpool3d_args *a = SF_CU_ARGS(sf_maxpool3d_args, "maxpool3d_fwd", cl_arg);
  sf_cuda_maxpool3d_forward(SF_CU_STREAM, sf_cu_blk(buffers[0], "maxpool3d_fwd y"),
                            (uint8_t *)sf_cu_blk(buffers[1], "maxpool3d_fwd idx"), sf_cu_blk(buffers[2], "maxpool3d_fwd x"),
                            sf_blk_nz(buffers[0]), sf_blk_ny(buffers[0]), sf_blk_w(buffers[0], a->C), a->C);
}

void sf_maxpool3d_bwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_maxpool3d_args *a = SF_CU_ARGS(sf_maxpool3d_args, "maxpool3d_bwd", cl_arg);
  cudaStream_t s = SF_CU_STREAM;
  float *dx = sf_cu_blk(buffers[0], "maxpool3d_bwd dx");
  sf_cuda_maxpool3d_backward(s, dx, sf_cu_blk(buffers[1], "maxpool3d_bwd dy"),
                             (const uint8_t *)sf_cu_blk(buffers[2], "maxpool3d_bwd idx"), sf_blk_nz(buffers[1]),
                             sf_blk_ny(buffers[1]), sf_blk_w(buffers[1], a->C), a->C);
  if (a->has_add)
    sf_cuda_add_f(s, dx, sf_cu_blk(buffers[3], "maxpool3d_bwd add"), sf_blk_vox(buffers[0], a->C) * (size_t)a->C);
}

#endif
