/* CUDA wrappers of the loss codelets (codelets/loss.c): per-slab partial sums (device doubles, zeroed
 * then accumulated) and the loss gradient from the reduced sums. Labels are uint16 blocks. */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

/* buffers: [acc_part SF_LOSS_NACC(K) double, z, lab (uint16), cw] */
void sf_loss_partial_cuda(void *buffers[], void *cl_arg)
{
  const sf_loss_args *a = SF_CU_ARGS(sf_loss_args, "loss_partial", cl_arg);
  cudaStream_t s = SF_CU_STREAM;
  double *acc = sf_vec_d(buffers[0]);
  sf_cu_check(cudaMemsetAsync(acc, 0, sf_vec_n(buffers[0]) * sizeof(double), s), "cudaMemsetAsync(loss acc)");
  sf_cuda_loss_partial(s, acc, sf_cu_blk(buffers[1], "loss_partial z"),
                       (const uint16_t *)sf_cu_blk(buffers[2], "loss_partial labels"), sf_vec_f(buffers[3]),
                       sf_blk_vox(buffers[1], a->K), a->K);
}

/* buffers: [dz, z, lab, cw, acc] */
void sf_loss_bwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_loss_args *a = SF_CU_ARGS(sf_loss_args, "loss_bwd", cl_arg);
  sf_cuda_loss_backward(SF_CU_STREAM, sf_cu_blk(buffers[0], "loss_bwd dz"), sf_cu_blk(buffers[1], "loss_bwd z"),
                        (const uint16_t *)sf_cu_blk(buffers[2], "loss_bwd labels"), sf_vec_f(buffers[3]),
                        sf_vec_d(buffers[4]), sf_blk_vox(buffers[1], a->K), a->K, a->scale);
}

#endif
