/* StarPU glue for the transposed convolution (kernel 2, stride 2, bias) of the Up path: forward,
 * dX and dW/db codelets. Coarse slab k (nd,H,W,Cin) maps to fine slab k (2nd,2H,2W,Cout), so no
 * halo is needed. CPU = the _blas kernels of src/kernels/upconv3d/upconv3d_blas.c (sgemm, or the direct
 * kernels of upconv3d_direct.c where they win); the _bf16 codelets (sf_topt.bf16, torch_amp: 1) run the
 * bf16 kernels (AMX tiles), with their own perfmodels. */
#include <string.h>

#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

/* the coarse slab's (nd, H, W) from its block interface */
#define COARSE(iface, C) sf_blk_nz(iface), sf_blk_ny(iface), sf_blk_w(iface, C)

typedef void (*upconv_fwd_fn)(float *, const float *, const float *, const float *, int, int, int, int, int);
typedef void (*upconv_bwd_fn)(float *, const float *, const float *, int, int, int, int, int);
typedef void (*upconv_dw_fn)(float *, float *, const float *, const float *, int, int, int, int, int);

/* buffers: [y, x, w, b] */
static void upconv3d_fwd(void *buffers[], void *cl_arg, upconv_fwd_fn f)
{
  const sf_upconv3d_args *a = cl_arg;
  f(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), sf_vec_f(buffers[2]), sf_vec_f(buffers[3]), COARSE(buffers[1], a->Cin),
    a->Cin, a->Cout);
}

/* buffers: [dx, dy, w] */
static void upconv3d_bwd_data(void *buffers[], void *cl_arg, upconv_bwd_fn f)
{
  const sf_upconv3d_args *a = cl_arg;
  f(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), sf_vec_f(buffers[2]), COARSE(buffers[0], a->Cin), a->Cin, a->Cout);
}

/* buffers: [dw, db, x, dy] */
static void upconv3d_bwd_weights(void *buffers[], void *cl_arg, upconv_dw_fn f)
{
  const sf_upconv3d_args *a = cl_arg;
  float *dw = sf_vec_f(buffers[0]), *db = sf_vec_f(buffers[1]);
  if (a->overwrite) {
    memset(dw, 0, sf_vec_n(buffers[0]) * sizeof(float));
    memset(db, 0, sf_vec_n(buffers[1]) * sizeof(float));
  }
  f(dw, db, sf_blk_f(buffers[2]), sf_blk_f(buffers[3]), COARSE(buffers[2], a->Cin), a->Cin, a->Cout);
}

static void upconv3d_fwd_cpu(void *b[], void *a) { upconv3d_fwd(b, a, sf_upconv3d_forward); }
static void upconv3d_bwd_data_cpu(void *b[], void *a) { upconv3d_bwd_data(b, a, sf_upconv3d_backward_data); }
static void upconv3d_bwd_weights_cpu(void *b[], void *a) { upconv3d_bwd_weights(b, a, sf_upconv3d_backward_weights); }
/* The bf16 codelets (sf_topt.bf16, torch_amp: 1): the same buffers, bf16 operands on AMX tiles */
static void upconv3d_fwd_bf16_cpu(void *b[], void *a) { upconv3d_fwd(b, a, sf_upconv3d_forward_bf16); }
static void upconv3d_bwd_data_bf16_cpu(void *b[], void *a) { upconv3d_bwd_data(b, a, sf_upconv3d_backward_data_bf16); }
static void upconv3d_bwd_weights_bf16_cpu(void *b[], void *a)
{
  upconv3d_bwd_weights(b, a, sf_upconv3d_backward_weights_bf16);
}

SF_CODELET(upconv3d_fwd, openblas_v1, upconv3d_fwd_cpu, sf_upconv3d_fwd_cuda, sf_upconv3d_fwd_opencl);
SF_CODELET(upconv3d_bwd_data, openblas_v1, upconv3d_bwd_data_cpu, sf_upconv3d_bwd_data_cuda, sf_upconv3d_bwd_data_opencl);
SF_CODELET(upconv3d_bwd_weights, openblas_v1, upconv3d_bwd_weights_cpu, sf_upconv3d_bwd_weights_cuda, sf_upconv3d_bwd_weights_opencl);
SF_CODELET(upconv3d_fwd_bf16, bf16_v1, upconv3d_fwd_bf16_cpu, sf_upconv3d_fwd_cuda, sf_upconv3d_fwd_opencl);
SF_CODELET(upconv3d_bwd_data_bf16, bf16_v1, upconv3d_bwd_data_bf16_cpu, sf_upconv3d_bwd_data_cuda,
           sf_upconv3d_bwd_data_opencl);
SF_CODELET(upconv3d_bwd_weights_bf16, bf16_v1, upconv3d_bwd_weights_bf16_cpu, sf_upconv3d_bwd_weights_cuda,
           sf_upconv3d_bwd_weights_opencl);
SF_OPENCL_CODELET(upconv3d_fwd, SF_OCL_INEXACT);
SF_OPENCL_CODELET(upconv3d_bwd_data, SF_OCL_INEXACT);
SF_OPENCL_CODELET(upconv3d_bwd_weights, SF_OCL_INEXACT);
SF_OPENCL_CODELET(upconv3d_fwd_bf16, SF_OCL_INEXACT);
SF_OPENCL_CODELET(upconv3d_bwd_data_bf16, SF_OCL_INEXACT);
SF_OPENCL_CODELET(upconv3d_bwd_weights_bf16, SF_OCL_INEXACT);

/* MACs = fine voxels * Cin * Cout = 8 * coarse voxels * Cin * Cout */
static double macs(sf_handle coarse, int Cin, int Cout)
{
  return 8.0 * (double)sf_block_nx(coarse) / Cin * sf_block_ny(coarse) *
         sf_block_nz(coarse) * Cin * Cout;
}

void insert_task_upconv3d_forward(const sf_topt *o, sf_handle y, sf_handle x, sf_handle w, sf_handle b, int Cin,
                                  int Cout)
{
  sf_upconv3d_args a = {.Cin = Cin, .Cout = Cout};
  sf_buf bf = {.n = 0};
  sf_buf_add(&bf, y, STARPU_W);
  sf_buf_add(&bf, x, STARPU_R);
  sf_buf_add(&bf, w, STARPU_R);
  sf_buf_add(&bf, b, STARPU_R);
  sf_submit(o->bf16 ? &cl_upconv3d_fwd_bf16 : &cl_upconv3d_fwd, o, &a, sizeof a, &bf, 2.0 * macs(x, Cin, Cout));
}

void insert_task_upconv3d_backward_data(const sf_topt *o, sf_handle dx, sf_handle dy, sf_handle w, int Cin,
                                        int Cout)
{
  sf_upconv3d_args a = {.Cin = Cin, .Cout = Cout};
  sf_buf bf = {.n = 0};
  sf_buf_add(&bf, dx, STARPU_W);
  sf_buf_add(&bf, dy, STARPU_R);
  sf_buf_add(&bf, w, STARPU_R);
  sf_submit(o->bf16 ? &cl_upconv3d_bwd_data_bf16 : &cl_upconv3d_bwd_data, o, &a, sizeof a, &bf, 2.0 * macs(dx, Cin, Cout));
}

void insert_task_upconv3d_backward_weights(const sf_topt *o, sf_accum acc, sf_handle dw, sf_handle db, sf_handle x,
                                           sf_handle dy, int Cin, int Cout)
{
  sf_upconv3d_args a = {.Cin = Cin, .Cout = Cout, .overwrite = acc == SF_ACC_PARTIAL};
  sf_buf bf = {.n = 0};
  sf_buf_add(&bf, dw, sf_accum_mode(acc));
  sf_buf_add(&bf, db, sf_accum_mode(acc));
  sf_buf_add(&bf, x, STARPU_R);
  sf_buf_add(&bf, dy, STARPU_R);
  sf_submit(o->bf16 ? &cl_upconv3d_bwd_weights_bf16 : &cl_upconv3d_bwd_weights, o, &a, sizeof a, &bf, 2.0 * macs(x, Cin, Cout));
}
