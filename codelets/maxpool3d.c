/* StarPU glue for MaxPool 2/2 (the Down block): fine slab k (2nd,2H,2W,C) maps to coarse slab k
 * (nd,H,W,C), so no halo. The backward optionally adds the skip-connection gradient of the same
 * encoder tensor (dx = unpool(dy) + add), which is how the two gradient paths of an encoder output
 * meet. CPU = the vector kernels of src/kernels/maxpool3d/maxpool3d.c (the add in the same pass). */
#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

/* buffers: [y, idx (uint8), x]; sizes from the coarse y */
static void maxpool3d_fwd_cpu(void *buffers[], void *cl_arg)
{
  const sf_maxpool3d_args *a = cl_arg;
  sf_maxpool3d_forward(sf_blk_f(buffers[0]), (uint8_t *)STARPU_BLOCK_GET_PTR(buffers[1]), sf_blk_f(buffers[2]),
                       sf_blk_nz(buffers[0]), sf_blk_ny(buffers[0]), sf_blk_w(buffers[0], a->C), a->C);
}

/* buffers: [dx, dy, idx, add?] */
static void maxpool3d_bwd_cpu(void *buffers[], void *cl_arg)
{
  const sf_maxpool3d_args *a = cl_arg;
  sf_maxpool3d_backward(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), (const uint8_t *)STARPU_BLOCK_GET_PTR(buffers[2]),
                        a->has_add ? sf_blk_f(buffers[3]) : NULL, sf_blk_nz(buffers[1]), sf_blk_ny(buffers[1]),
                        sf_blk_w(buffers[1], a->C), a->C);
}

SF_CODELET(maxpool3d_fwd, v1, maxpool3d_fwd_cpu, sf_maxpool3d_fwd_cuda, sf_maxpool3d_fwd_opencl);
SF_CODELET(maxpool3d_bwd, v1, maxpool3d_bwd_cpu, sf_maxpool3d_bwd_cuda, sf_maxpool3d_bwd_opencl);
SF_OPENCL_CODELET(maxpool3d_fwd, SF_OCL_EXACT_IEEE);
SF_OPENCL_CODELET(maxpool3d_bwd, SF_OCL_EXACT_IEEE);

static double elems(sf_handle slab)
{
  return (double)sf_block_nx(slab) * sf_block_ny(slab) * sf_block_nz(slab);
}

void insert_task_maxpool3d_forward(const sf_topt *o, sf_handle y, sf_handle idx, sf_handle x, int C)
{
  sf_maxpool3d_args a = {.C = C};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, y, STARPU_W);
  sf_buf_add(&b, idx, STARPU_W);
  sf_buf_add(&b, x, STARPU_R);
  sf_submit(&cl_maxpool3d_fwd, o, &a, sizeof a, &b, 7.0 * elems(y)); /* 7 comparisons per output */
}

void insert_task_maxpool3d_backward(const sf_topt *o, sf_handle dx, sf_handle dy, sf_handle idx, sf_handle add,
                                    int C)
{
  sf_maxpool3d_args a = {.C = C, .has_add = add != NULL};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dx, STARPU_W);
  sf_buf_add(&b, dy, STARPU_R);
  sf_buf_add(&b, idx, STARPU_R);
  if (add) sf_buf_add(&b, add, STARPU_R);
  sf_submit(&cl_maxpool3d_bwd, o, &a, sizeof a, &b, add ? elems(dx) : 0.0);
}
