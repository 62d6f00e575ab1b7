/* CUDA wrapper of the hard-Dice codelet of validation (codelets/dice.c): per-slab (K,3) partial
 * counts as device doubles, zeroed then accumulated. */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

/* buffers: [acc_part (K,3) double, z, lab (uint16)] */
void sf_dice_hard_partial_cuda(void *buffers[], void *cl_arg)
{
  const sf_dice_args *a = SF_CU_ARGS(sf_dice_args, "dice_hard_partial", cl_arg);
  cudaStream_t s = SF_CU_STREAM;
  double *acc = sf_vec_d(buffers[0]);
  sf_cu_check(cudaMemsetAsync(acc, 0, sf_vec_n(buffers[0]) * sizeof(double), s), "cudaMemsetAsync(dice acc)");
  sf_cuda_dice_hard_partial(s, acc, sf_cu_blk(buffers[1], "dice_hard_partial z"),
                            (const uint16_t *)sf_cu_blk(buffers[2], "dice_hard_partial labels"),
                            sf_blk_vox(buffers[1], a->K), a->K);
}

#endif
