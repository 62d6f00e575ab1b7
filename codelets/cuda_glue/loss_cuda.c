/* CUDA wrappers of the loss codelets (codelets/loss.c): per-slab partial sums (device doubles, zeroed
 * then accumulated), the loss gradient from the reduced sums, and a batch's CE weight-sum partials.
 * Labels are uint16 blocks. */
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

/* buffers: [dz, z, lab, cw, acc, wsum?] (wsum: a batch's pooled CE weight sum, 1 double) */
void sf_loss_bwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_loss_args *a = SF_CU_ARGS(sf_loss_args, "loss_bwd", cl_arg);
  const double *wsum = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current()) > 5 ? sf_vec_d(buffers[5]) : NULL;
  sf_cuda_loss_backward_batch(SF_CU_STREAM, sf_cu_blk(buffers[0], "loss_bwd dz"), sf_cu_blk(buffers[1], "loss_bwd z"),
                              (const uint16_t *)sf_cu_blk(buffers[2], "loss_bwd labels"), sf_vec_f(buffers[3]),
                              sf_vec_d(buffers[4]), wsum, a->batch, sf_blk_vox(buffers[1], a->K), a->K, a->scale);
}

/* buffers: [part (1) double, lab (uint16), cw]: part (+)= sum cw[lab] */
void sf_loss_wsum_cuda(void *buffers[], void *cl_arg)
{
  const sf_loss_args *a = SF_CU_ARGS(sf_loss_args, "loss_wsum", cl_arg);
  cudaStream_t s = SF_CU_STREAM;
  double *part = sf_vec_d(buffers[0]);
  if (!a->accumulate) sf_cu_check(cudaMemsetAsync(part, 0, sizeof(double), s), "cudaMemsetAsync(loss weight sum)");
  sf_cuda_loss_weight_sum(s, part, (const uint16_t *)sf_cu_blk(buffers[1], "loss_wsum labels"), sf_vec_f(buffers[2]),
                          sf_blk_vox(buffers[1], 1), a->K);
}

#endif
