/* StarPU glue for the 3x3x3 convolution (padding 1, no bias): forward, dX and dW codelets on depth
 * slabs with halos, and a CPU-only dW codelet for the gradient rows of a range of taps.
 * Buffers: [out, in, w, in_lo?, in_hi?]; the halo slabs are passed whole and the
 * kernel gets a pointer to the last plane of slab k-1 and the first plane of slab k+1 (NULL at the
 * volume's faces). CPU = the im2col + OpenBLAS kernels (src/kernels/conv3d/conv3d_im2col.c), which hand over to
 * the direct kernels where they win. The _bf16 codelets (sf_topt.bf16, torch_amp: 1) run the bf16
 * engine's kernels on CPU workers (src/kernels/conv3d/conv3d_bf16*.c, conv3d_amx*.c), with their own perfmodels; their
 * forward and dX read the weights packed once per step (conv3d_pack_bf16, CPU only) where the graph passes them. */
#include <stdlib.h>
#include <string.h>

#include "codelet_common.h"
#include "conv3d_halos.h"
#include "scaffold/codelet_args.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"
#include "scaffold/runtime.h"
#include "scaffold/switches.h"

typedef void (*conv3d_slab_fn)(float *, const float *, const float *, const float *, const float *, int, int, int, int,
                               int);
typedef void (*conv3d_taps_fn)(float *, int, int, const float *, const float *, const float *, const float *, int, int,
                               int, int, int);

/* buffers: [out, in, w, in_lo?, in_hi?]: the forward or dX kernel f on the slab */
static void conv3d_slab(void *buffers[], const sf_conv3d_args *a, conv3d_slab_fn f)
{
  const float *lo, *hi;
  sf_conv3d_halo_planes(buffers, a, &lo, &hi);
  f(sf_blk_f(buffers[0]), lo, sf_blk_f(buffers[1]), hi, sf_vec_f(buffers[2]), sf_blk_nz(buffers[0]), a->H, a->W, a->Cin,
    a->Cout);
}

/* buffers: [dw rows, x, dy, x_lo?, x_hi?]: the gradient rows of taps [t0, t1) by f, or all of dW by the _blas
 * kernel when f is NULL; a partial (SF_ACC_PARTIAL) is zeroed first */
static void conv3d_weights(void *buffers[], const sf_conv3d_args *a, int t0, int t1, conv3d_taps_fn f)
{
  const float *lo, *hi;
  sf_conv3d_halo_planes(buffers, a, &lo, &hi);
  float *dw = sf_vec_f(buffers[0]);
  if (a->overwrite) memset(dw, 0, sf_vec_n(buffers[0]) * sizeof(float));
  if (f)
    f(dw, t0, t1, lo, sf_blk_f(buffers[1]), hi, sf_blk_f(buffers[2]), sf_blk_nz(buffers[1]), a->H, a->W, a->Cin,
      a->Cout);
  else
    sf_conv3d_backward_weights(dw, lo, sf_blk_f(buffers[1]), hi, sf_blk_f(buffers[2]), sf_blk_nz(buffers[1]), a->H,
                                    a->W, a->Cin, a->Cout);
}

static void conv3d_fwd_cpu(void *buffers[], void *cl_arg) { conv3d_slab(buffers, cl_arg, sf_conv3d_forward); }
static void conv3d_bwd_data_cpu(void *buffers[], void *cl_arg)
{
  conv3d_slab(buffers, cl_arg, sf_conv3d_backward_data);
}
static void conv3d_bwd_weights_cpu(void *buffers[], void *cl_arg) { conv3d_weights(buffers, cl_arg, 0, 27, NULL); }
static void conv3d_bwd_weights_taps_cpu(void *buffers[], void *cl_arg)
{
  const sf_conv3d_taps_args *r = cl_arg;
  conv3d_weights(buffers, &r->c, r->t0, r->t1, sf_conv3d_backward_weights_taps);
}

/* buffers: [out, in, w, in_lo?, in_hi?, w_packed]: the bf16 forward (flip 0) or dX on the weights packed once */
static void conv3d_slab_packed(void *buffers[], const sf_conv3d_args *a, int flip)
{
  const float *lo, *hi;
  sf_conv3d_halo_planes(buffers, a, &lo, &hi);
  const void *wp = sf_vec_f(buffers[3 + a->has_lo + a->has_hi]);
  sf_conv3d_bf16_packed(sf_blk_f(buffers[0]), lo, sf_blk_f(buffers[1]), hi, wp, sf_blk_nz(buffers[0]), a->H, a->W,
                        a->Cin, a->Cout, flip);
}

/* The bf16 codelets (sf_topt.bf16, torch_amp: 1): the same buffers, the bf16 engine's kernels */
static void conv3d_fwd_bf16_cpu(void *buffers[], void *cl_arg)
{
  const sf_conv3d_args *a = cl_arg;
  if (a->has_packed) conv3d_slab_packed(buffers, a, 0);
  else conv3d_slab(buffers, a, sf_conv3d_forward_bf16);
}
static void conv3d_bwd_data_bf16_cpu(void *buffers[], void *cl_arg)
{
  const sf_conv3d_args *a = cl_arg;
  if (a->has_packed) conv3d_slab_packed(buffers, a, 1);
  else conv3d_slab(buffers, a, sf_conv3d_backward_data_bf16);
}

/* buffers: [w, fwd?, dx?] */
static void conv3d_pack_bf16_cpu(void *buffers[], void *cl_arg)
{
  const sf_conv3d_pack_args *a = cl_arg;
  void *fwd = a->has_fwd ? sf_vec_f(buffers[1]) : NULL, *dx = a->has_dx ? sf_vec_f(buffers[1 + a->has_fwd]) : NULL;
  sf_conv3d_bf16_pack(fwd, dx, sf_vec_f(buffers[0]), a->Cin, a->Cout);
}
static void conv3d_bwd_weights_bf16_cpu(void *buffers[], void *cl_arg)
{
  conv3d_weights(buffers, cl_arg, 0, 27, sf_conv3d_backward_weights_taps_bf16);
}
static void conv3d_bwd_weights_taps_bf16_cpu(void *buffers[], void *cl_arg)
{
  const sf_conv3d_taps_args *r = cl_arg;
  conv3d_weights(buffers, &r->c, r->t0, r->t1, sf_conv3d_backward_weights_taps_bf16);
}

const char *sf_cpu_bf16_engine(void)
{
  sf_bf16_engine e = sf_bf16_engine_active();
  return e == SF_BF16_NONE ? NULL : sf_bf16_engine_name(e);
}

SF_CODELET(conv3d_fwd, avx512_openblas_v2, conv3d_fwd_cpu, sf_conv3d_fwd_cuda, sf_conv3d_fwd_opencl);
SF_CODELET(conv3d_bwd_data, avx512_openblas_v2, conv3d_bwd_data_cpu, sf_conv3d_bwd_data_cuda,
           sf_conv3d_bwd_data_opencl);
SF_CODELET(conv3d_bwd_weights, avx512_openblas_v2, conv3d_bwd_weights_cpu, sf_conv3d_bwd_weights_cuda,
           sf_conv3d_bwd_weights_opencl);
SF_CODELET(conv3d_bwd_weights_taps, avx512_openblas_v2, conv3d_bwd_weights_taps_cpu, SF_NONE, SF_NONE);
SF_CODELET(conv3d_fwd_bf16, bf16_v1, conv3d_fwd_bf16_cpu, sf_conv3d_fwd_cuda, sf_conv3d_fwd_opencl);
SF_CODELET(conv3d_bwd_data_bf16, bf16_v1, conv3d_bwd_data_bf16_cpu, sf_conv3d_bwd_data_cuda, sf_conv3d_bwd_data_opencl);
SF_CODELET(conv3d_bwd_weights_bf16, bf16_v1, conv3d_bwd_weights_bf16_cpu, sf_conv3d_bwd_weights_cuda,
           sf_conv3d_bwd_weights_opencl);
SF_CODELET(conv3d_bwd_weights_taps_bf16, bf16_v1, conv3d_bwd_weights_taps_bf16_cpu, SF_NONE, SF_NONE);
SF_CODELET(conv3d_pack_bf16, v1, conv3d_pack_bf16_cpu, SF_NONE, SF_NONE);
SF_OPENCL_CODELET(conv3d_fwd, SF_OCL_INEXACT);
SF_OPENCL_CODELET(conv3d_bwd_data, SF_OCL_INEXACT);
SF_OPENCL_CODELET(conv3d_bwd_weights, SF_OCL_INEXACT);
SF_OPENCL_CODELET(conv3d_fwd_bf16, SF_OCL_INEXACT);
SF_OPENCL_CODELET(conv3d_bwd_data_bf16, SF_OCL_INEXACT);
SF_OPENCL_CODELET(conv3d_bwd_weights_bf16, SF_OCL_INEXACT);

static void add_halos(sf_buf *b, sf_conv3d_args *a, sf_handle lo, sf_handle hi)
{
  a->has_lo = lo != NULL;
  a->has_hi = hi != NULL;
  if (lo) sf_buf_add(b, lo, STARPU_R);
  if (hi) sf_buf_add(b, hi, STARPU_R);
}

/* 2 * voxels * 27 * Cin * Cout */
static double conv_flops(sf_handle slab, int H, int W, int Cin, int Cout)
{
  size_t nz = sf_block_nz(slab);
  return 2.0 * 27.0 * (double)nz * H * W * Cin * Cout;
}

/* The weights packed once, last (bf16 only) */
static void add_packed(sf_buf *b, sf_conv3d_args *a, const sf_topt *o, sf_handle w_packed)
{
  SF_ASSERT(!w_packed || o->bf16);
  a->has_packed = w_packed != NULL;
  if (w_packed) sf_buf_add(b, w_packed, STARPU_R);
}

size_t sf_conv3d_packed_bytes(const sf_topt *o, int Cin, int Cout, int flip)
{
#ifdef STARPU_SIMGRID
  (void)o, (void)Cin, (void)Cout, (void)flip;
  return 0; /* simulated kernels: nothing to pack */
#else
  /* SF_BF16_PREPACK=0: every task packs its own copy (the comparison path) */
  if (!o->bf16 || sf_switch_is("SF_BF16_PREPACK", "0") || sf_runtime_nworkers() != sf_runtime_ncpu_workers()) return 0;
  return sf_conv3d_bf16_packed_bytes(Cin, Cout, flip);
#endif
}

void insert_task_conv3d_pack_bf16(const sf_topt *o, sf_handle w_fwd, sf_handle w_dx, sf_handle w, int Cin, int Cout)
{
  sf_conv3d_pack_args a = {.Cin = Cin, .Cout = Cout, .has_fwd = w_fwd != NULL, .has_dx = w_dx != NULL};
  sf_buf b = {.n = 0};
  SF_ASSERT(w_fwd || w_dx);
  sf_buf_add(&b, w, STARPU_R);
  if (w_fwd) sf_buf_add(&b, w_fwd, STARPU_W);
  if (w_dx) sf_buf_add(&b, w_dx, STARPU_W);
  sf_submit(&cl_conv3d_pack_bf16, o, &a, sizeof a, &b, 0.0);
}

void insert_task_conv3d_forward(const sf_topt *o, sf_handle y, sf_handle x_lo, sf_handle x, sf_handle x_hi, sf_handle w,
                                sf_handle w_packed, int H, int W, int Cin, int Cout)
{
  sf_conv3d_args a = {.H = H, .W = W, .Cin = Cin, .Cout = Cout};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, y, STARPU_W);
  sf_buf_add(&b, x, STARPU_R);
  sf_buf_add(&b, w, STARPU_R);
  add_halos(&b, &a, x_lo, x_hi);
  add_packed(&b, &a, o, w_packed);
  sf_submit(o->bf16 ? &cl_conv3d_fwd_bf16 : &cl_conv3d_fwd, o, &a, sizeof a, &b, conv_flops(y, H, W, Cin, Cout));
}

void insert_task_conv3d_backward_data(const sf_topt *o, sf_handle dx, sf_handle dy_lo, sf_handle dy, sf_handle dy_hi,
                                      sf_handle w, sf_handle w_packed, int H, int W, int Cin, int Cout)
{
  sf_conv3d_args a = {.H = H, .W = W, .Cin = Cin, .Cout = Cout};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dx, STARPU_W);
  sf_buf_add(&b, dy, STARPU_R);
  sf_buf_add(&b, w, STARPU_R);
  add_halos(&b, &a, dy_lo, dy_hi);
  add_packed(&b, &a, o, w_packed);
  sf_submit(o->bf16 ? &cl_conv3d_bwd_data_bf16 : &cl_conv3d_bwd_data, o, &a, sizeof a, &b,
            conv_flops(dx, H, W, Cin, Cout));
}

void insert_task_conv3d_backward_weights(const sf_topt *o, sf_accum acc, sf_handle dw, sf_handle x_lo, sf_handle x,
                                         sf_handle x_hi, sf_handle dy, int H, int W, int Cin, int Cout)
{
  sf_conv3d_args a = {.H = H, .W = W, .Cin = Cin, .Cout = Cout};
  sf_buf b = {.n = 0};
  a.overwrite = acc == SF_ACC_PARTIAL;
  sf_buf_add(&b, dw, sf_accum_mode(acc));
  sf_buf_add(&b, x, STARPU_R);
  sf_buf_add(&b, dy, STARPU_R);
  add_halos(&b, &a, x_lo, x_hi);
  sf_submit(o->bf16 ? &cl_conv3d_bwd_weights_bf16 : &cl_conv3d_bwd_weights, o, &a, sizeof a, &b,
            conv_flops(x, H, W, Cin, Cout));
}

void insert_task_conv3d_backward_weights_taps(const sf_topt *o, sf_accum acc, sf_handle dw_rows, int t0, int t1,
                                              sf_handle x_lo, sf_handle x, sf_handle x_hi, sf_handle dy, int H, int W,
                                              int Cin, int Cout)
{
  sf_conv3d_taps_args a = {.c = {.H = H, .W = W, .Cin = Cin, .Cout = Cout}, .t0 = t0, .t1 = t1};
  sf_buf b = {.n = 0};
  a.c.overwrite = acc == SF_ACC_PARTIAL;
  sf_buf_add(&b, dw_rows, sf_accum_mode(acc));
  sf_buf_add(&b, x, STARPU_R);
  sf_buf_add(&b, dy, STARPU_R);
  add_halos(&b, &a.c, x_lo, x_hi);
  sf_submit(o->bf16 ? &cl_conv3d_bwd_weights_taps_bf16 : &cl_conv3d_bwd_weights_taps, o, &a, sizeof a, &b,
            conv_flops(x, H, W, Cin, Cout) * (double)(t1 - t0) / 27.0);
}
