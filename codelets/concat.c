/* StarPU glue for the channel concatenation [skip, upsampled] of the Up block and its backward
 * split, one depth slab per task. CPU = src/kernels/elementwise/concat.c. */
#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

/* buffers: [y, a, b] */
static void concat_fwd_cpu(void *buffers[], void *cl_arg)
{
  const sf_concat_args *a = cl_arg;
  sf_concat_forward(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), sf_blk_f(buffers[2]), sf_blk_vox(buffers[1], a->Ca),
                    a->Ca, a->Cb);
}

/* buffers: [da, db, dy] */
static void concat_bwd_cpu(void *buffers[], void *cl_arg)
{
  const sf_concat_args *a = cl_arg;
  sf_concat_backward(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), sf_blk_f(buffers[2]),
                     sf_blk_vox(buffers[0], a->Ca), a->Ca, a->Cb);
}

SF_CODELET(concat_fwd, v1, concat_fwd_cpu, sf_concat_fwd_cuda, sf_concat_fwd_opencl);
SF_CODELET(concat_bwd, v1, concat_bwd_cpu, sf_concat_bwd_cuda, sf_concat_bwd_opencl);
SF_OPENCL_CODELET(concat_fwd, SF_OCL_EXACT);
SF_OPENCL_CODELET(concat_bwd, SF_OCL_EXACT);

void insert_task_concat_forward(const sf_topt *o, sf_handle y, sf_handle a, sf_handle b, int Ca, int Cb)
{
  sf_concat_args args = {Ca, Cb};
  sf_buf bf = {.n = 0};
  sf_buf_add(&bf, y, STARPU_W);
  sf_buf_add(&bf, a, STARPU_R);
  sf_buf_add(&bf, b, STARPU_R);
  sf_submit(&cl_concat_fwd, o, &args, sizeof args, &bf, 0.0);
}

void insert_task_concat_backward(const sf_topt *o, sf_handle da, sf_handle db, sf_handle dy, int Ca, int Cb)
{
  sf_concat_args args = {Ca, Cb};
  sf_buf bf = {.n = 0};
  sf_buf_add(&bf, da, STARPU_W);
  sf_buf_add(&bf, db, STARPU_W);
  sf_buf_add(&bf, dy, STARPU_R);
  sf_submit(&cl_concat_bwd, o, &args, sizeof args, &bf, 0.0);
}
