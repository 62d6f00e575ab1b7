/* StarPU glue for the 1x1x1 convolution with bias (OutConv): forward, dX and dW/db codelets on one
 * depth slab (no halo). CPU = the _blas kernels of src/kernels/conv1/conv1.c (sgemm, or the
 * direct kernels of conv1_direct.c where they win). */
#include <string.h>

#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

/* buffers: [y, x, w, b] */
static void conv1_fwd_cpu(void *buffers[], void *cl_arg)
{
  const sf_conv1_args *a = cl_arg;
  sf_conv1_forward(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), sf_vec_f(buffers[2]), sf_vec_f(buffers[3]),
                        sf_blk_vox(buffers[1], a->Cin), a->Cin, a->Cout);
}

/* buffers: [dx, dy, w] */
static void conv1_bwd_data_cpu(void *buffers[], void *cl_arg)
{
  const sf_conv1_args *a = cl_arg;
  sf_conv1_backward_data(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), sf_vec_f(buffers[2]),
                              sf_blk_vox(buffers[0], a->Cin), a->Cin, a->Cout);
}

/* buffers: [dw, db, x, dy] */
static void conv1_bwd_weights_cpu(void *buffers[], void *cl_arg)
{
  const sf_conv1_args *a = cl_arg;
  float *dw = sf_vec_f(buffers[0]), *db = sf_vec_f(buffers[1]);
  if (a->overwrite) {
    memset(dw, 0, sf_vec_n(buffers[0]) * sizeof(float));
    memset(db, 0, sf_vec_n(buffers[1]) * sizeof(float));
  }
  sf_conv1_backward_weights(dw, db, sf_blk_f(buffers[2]), sf_blk_f(buffers[3]), sf_blk_vox(buffers[2], a->Cin),
                                 a->Cin, a->Cout);
}

SF_CODELET(conv1_fwd, openblas_v1, conv1_fwd_cpu, sf_conv1_fwd_cuda, sf_conv1_fwd_opencl);
SF_CODELET(conv1_bwd_data, openblas_v1, conv1_bwd_data_cpu, sf_conv1_bwd_data_cuda, sf_conv1_bwd_data_opencl);
SF_CODELET(conv1_bwd_weights, openblas_v1, conv1_bwd_weights_cpu, sf_conv1_bwd_weights_cuda, sf_conv1_bwd_weights_opencl);
SF_OPENCL_CODELET(conv1_fwd, SF_OCL_INEXACT);
SF_OPENCL_CODELET(conv1_bwd_data, SF_OCL_INEXACT);
SF_OPENCL_CODELET(conv1_bwd_weights, SF_OCL_INEXACT);

static double vox(sf_handle slab, int C)
{
  return (double)sf_block_nx(slab) / C * sf_block_ny(slab) *
         sf_block_nz(slab);
}

void insert_task_conv1_forward(const sf_topt *o, sf_handle y, sf_handle x, sf_handle w, sf_handle b, int Cin,
                               int Cout)
{
  sf_conv1_args a = {.Cin = Cin, .Cout = Cout};
  sf_buf bf = {.n = 0};
  sf_buf_add(&bf, y, STARPU_W);
  sf_buf_add(&bf, x, STARPU_R);
  sf_buf_add(&bf, w, STARPU_R);
  sf_buf_add(&bf, b, STARPU_R);
  sf_submit(&cl_conv1_fwd, o, &a, sizeof a, &bf, 2.0 * vox(x, Cin) * Cin * Cout);
}

void insert_task_conv1_backward_data(const sf_topt *o, sf_handle dx, sf_handle dy, sf_handle w, int Cin, int Cout)
{
  sf_conv1_args a = {.Cin = Cin, .Cout = Cout};
  sf_buf bf = {.n = 0};
  sf_buf_add(&bf, dx, STARPU_W);
  sf_buf_add(&bf, dy, STARPU_R);
  sf_buf_add(&bf, w, STARPU_R);
  sf_submit(&cl_conv1_bwd_data, o, &a, sizeof a, &bf, 2.0 * vox(dx, Cin) * Cin * Cout);
}

void insert_task_conv1_backward_weights(const sf_topt *o, sf_accum acc, sf_handle dw, sf_handle db, sf_handle x,
                                        sf_handle dy, int Cin, int Cout)
{
  sf_conv1_args a = {.Cin = Cin, .Cout = Cout, .overwrite = acc == SF_ACC_PARTIAL};
  sf_buf bf = {.n = 0};
  sf_buf_add(&bf, dw, sf_accum_mode(acc));
  sf_buf_add(&bf, db, sf_accum_mode(acc));
  sf_buf_add(&bf, x, STARPU_R);
  sf_buf_add(&bf, dy, STARPU_R);
  sf_submit(&cl_conv1_bwd_weights, o, &a, sizeof a, &bf, 2.0 * vox(x, Cin) * (Cin + 1) * Cout);
}
