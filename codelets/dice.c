/* StarPU glue for the hard (argmax) foreground Dice of validation: one per-slab partial-sum task,
 * reduced in slab order by sum_d and finalized on the host. CPU = src/kernels/loss/dice.c. */
#include <string.h>

#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

/* buffers: [acc_part (K,3) double, z, lab (uint16)] */
static void dice_hard_partial_cpu(void *buffers[], void *cl_arg)
{
  const sf_dice_args *a = cl_arg;
  double *acc = sf_vec_d(buffers[0]);
  memset(acc, 0, sf_vec_n(buffers[0]) * sizeof(double));
  sf_dice_hard_partial_ref(acc, sf_blk_f(buffers[1]), (const uint16_t *)STARPU_BLOCK_GET_PTR(buffers[2]),
                           sf_blk_vox(buffers[1], a->K), a->K);
}

SF_CODELET(dice_hard_partial, v1, dice_hard_partial_cpu, sf_dice_hard_partial_cuda, sf_dice_hard_partial_opencl);
SF_OPENCL_CODELET(dice_hard_partial, SF_OCL_EXACT_IEEE);

void insert_task_dice_hard_partial(const sf_topt *o, sf_handle acc_part, sf_handle z, sf_handle lab, int K)
{
  sf_dice_args a = {K};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, acc_part, STARPU_W);
  sf_buf_add(&b, z, STARPU_R);
  sf_buf_add(&b, lab, STARPU_R);
  double n = (double)sf_block_nx(z) * sf_block_ny(z) * sf_block_nz(z);
  sf_submit(&cl_dice_hard_partial, o, &a, sizeof a, &b, 2.0 * n);
}
