/* StarPU glue for the training loss (weighted CE + 1 - soft foreground Dice, spec §6.2-6.3): a
 * per-slab partial-sum task (reduced in slab order by sum_d), a per-slab backward that reads the
 * reduced sums, and for a batch of samples the per-slab parts of its pooled CE weight sum (labels
 * only, so they run before the forward). Labels are uint16 slabs (C = 1). CPU = src/kernels/loss/loss.c
 * (the vector variants of src/kernels/loss/loss_ref.c's reference). */
#include <string.h>

#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

/* buffers: [acc_part SF_LOSS_NACC(K) double, z, lab (uint16), cw] */
static void loss_partial_cpu(void *buffers[], void *cl_arg)
{
  const sf_loss_args *a = cl_arg;
  double *acc = sf_vec_d(buffers[0]);
  memset(acc, 0, sf_vec_n(buffers[0]) * sizeof(double));
  sf_loss_partial(acc, sf_blk_f(buffers[1]), (const uint16_t *)STARPU_BLOCK_GET_PTR(buffers[2]),
                      sf_vec_f(buffers[3]), sf_blk_vox(buffers[1], a->K), a->K);
}

/* buffers: [dz, z, lab, cw, acc, wsum?] */
static void loss_bwd_cpu(void *buffers[], void *cl_arg)
{
  const sf_loss_args *a = cl_arg;
  const double *acc = sf_vec_d(buffers[4]);
  double wsum = sf_task_nbuffers() > 5 ? sf_vec_d(buffers[5])[0] : acc[1];
  sf_loss_backward_batch(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]),
                             (const uint16_t *)STARPU_BLOCK_GET_PTR(buffers[2]), sf_vec_f(buffers[3]), acc, wsum,
                             a->batch, sf_blk_vox(buffers[1], a->K), a->K, a->scale);
}

/* buffers: [part (1) double, lab (uint16), cw] */
static void loss_wsum_cpu(void *buffers[], void *cl_arg)
{
  const sf_loss_args *a = cl_arg;
  double *part = sf_vec_d(buffers[0]);
  if (!a->accumulate) part[0] = 0;
  sf_loss_weight_sum_ref(part, (const uint16_t *)STARPU_BLOCK_GET_PTR(buffers[1]), sf_vec_f(buffers[2]),
                         sf_blk_vox(buffers[1], 1), a->K);
}

SF_CODELET(loss_partial, v1, loss_partial_cpu, sf_loss_partial_cuda, sf_loss_partial_opencl);
SF_CODELET(loss_bwd, v1, loss_bwd_cpu, sf_loss_bwd_cuda, sf_loss_bwd_opencl);
SF_CODELET(loss_wsum, v1, loss_wsum_cpu, sf_loss_wsum_cuda, sf_loss_wsum_opencl);
SF_OPENCL_CODELET(loss_partial, SF_OCL_INEXACT);
SF_OPENCL_CODELET(loss_bwd, SF_OCL_INEXACT);
SF_OPENCL_CODELET(loss_wsum, SF_OCL_EXACT);

static double elems(sf_handle slab)
{
  return (double)sf_block_nx(slab) * sf_block_ny(slab) * sf_block_nz(slab);
}

void insert_task_loss_partial(const sf_topt *o, sf_handle acc_part, sf_handle z, sf_handle lab, sf_handle cw, int K)
{
  sf_loss_args a = {.K = K};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, acc_part, STARPU_W);
  sf_buf_add(&b, z, STARPU_R);
  sf_buf_add(&b, lab, STARPU_R);
  sf_buf_add(&b, cw, STARPU_R);
  sf_submit(&cl_loss_partial, o, &a, sizeof a, &b, 8.0 * elems(z)); /* softmax + sums, about 8 per logit */
}

void insert_task_loss_backward(const sf_topt *o, sf_handle dz, sf_handle z, sf_handle lab, sf_handle cw,
                               sf_handle acc, sf_handle wsum, int batch, int K, float scale)
{
  SF_ASSERT(batch >= 1 && (wsum != NULL || batch == 1));
  sf_loss_args a = {.K = K, .scale = scale, .batch = batch};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dz, STARPU_W);
  sf_buf_add(&b, z, STARPU_R);
  sf_buf_add(&b, lab, STARPU_R);
  sf_buf_add(&b, cw, STARPU_R);
  sf_buf_add(&b, acc, STARPU_R);
  if (wsum) sf_buf_add(&b, wsum, STARPU_R);
  sf_submit(&cl_loss_bwd, o, &a, sizeof a, &b, 10.0 * elems(z));
}

void insert_task_loss_weight_sum(const sf_topt *o, sf_accum acc, sf_handle part, sf_handle lab, sf_handle cw, int K)
{
  SF_ASSERT(acc == SF_ACC_PARTIAL || acc == SF_ACC_ADD);
  sf_loss_args a = {.K = K, .accumulate = acc == SF_ACC_ADD};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, part, sf_accum_mode(acc));
  sf_buf_add(&b, lab, STARPU_R);
  sf_buf_add(&b, cw, STARPU_R);
  sf_submit(&cl_loss_wsum, o, &a, sizeof a, &b, elems(lab));
}
