/* The transposed convolution's only entry (kernel 2, stride 2, with bias; contracts in scaffold/ops.h):
 * fp32 runs the direct small-GEMM kernels (upconv3d_direct.c) where they win, else OpenBLAS
 * (upconv3d_blas.c); torch_amp: 1 runs bf16 products on AMX tiles, in place (upconv3d_amx.c) where the
 * shape fits, else through the direct kernels' AMX runner, and the fp32 entry without the AMX engine
 * (there are no VDPBF16PS kernels for these small products). */
#include "scaffold/cpu_isa.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/ops.h"

#include "upconv3d_variants.h"

/* Measured in one run of scripts/bench-kernels --gemm --coretype default --coretype Prescott (1 thread,
 * thread CPU time) on an AMD EPYC Zen 3 (AVX2, no AVX-512) shared with other jobs, GFLOP/s fwd/dX/dW:
 *   layer (input, Cin->Cout)  AVX2 direct          sgemm Zen core       sgemm Prescott
 *   16^3  16->8               29.5 / 51.3 / 26.9   14.2 / 17.4 / 17.5   11.7 / 13.4 / 11.8
 *    8^3  64->32              65.7 / 74.4 / 64.1   25.6 / 38.7 / 46.5   21.0 / 16.5 / 16.1
 *   16^3 128->64              47.0 / 37.4 / 39.3   52.0 / 49.5 / 41.7   17.1 / 15.5 / 14.8
 *    8^3 256->128             39.4 / 36.3 / 32.3   54.9 / 52.6 / 55.3   12.2 / 10.2 / 11.6
 *    4^3 512->256             16.1 / 11.7 / 28.6   68.2 / 68.0 / 77.8   13.9 / 14.6 / 27.2
 * Direct AVX2 beats a generic (Prescott) core 2-4x up to 256 channels and ties it at 512 (where
 * transposing the 4 MiB weight for 64 voxels costs the dX 4 ms), so it takes every layer then; a
 * good core (Zen) still wins from 128 input channels (1.1-1.7x, 2.7-5.8x at 512), so sgemm keeps
 * those. AVX-512 is assumed alike (not measured here). The portable C set (SF_CPU_ISA=c, separate
 * run: 16->8 21.3 / 31.7 / 20.5, 256->128 23.7 / 27.3 / 21.6, 512->256 15.2 / 9.8 / 13.3) beats
 * Prescott below 512 channels only and never a good core. */
static int direct_wins(int Cin)
{
  sf_cpu_isa isa = sf_cpu_isa_active();
  if (isa == SF_ISA_NONE) return 0;
  if (sf_blas_core_is_generic()) return isa >= SF_ISA_AVX2 || Cin < 512;
  return isa >= SF_ISA_AVX2 && Cin < 128;
}


/* The choice, counted for the run's report (scaffold/kernel_choices.h) */
static int direct_chosen(sf_kernel_op op, int Cin)
{
  int d = direct_wins(Cin);
  sf_kernel_choice_note(op, d ? "direct" : "blas");
  return d;
}

/* bf16 on AMX: in place (1) or through the direct kernels' AMX runner (0), counted */
static int amx_in_place(sf_kernel_op op, int W, int Cin, int Cout)
{
  int fits = sf_upconv3d_amx_fits(W, Cin, Cout);
  sf_kernel_choice_note(op, fits ? "amx" : "direct-amx");
  return fits;
}

void sf_upconv3d_forward(float *y, const float *x, const float *w, const float *b, int nd, int H, int W, int Cin,
                         int Cout)
{
  if (direct_chosen(SF_KOP_UPCONV3D_FORWARD, Cin)) sf_upconv3d_forward_direct(y, x, w, b, nd, H, W, Cin, Cout);
  else sf_upconv3d_forward_blas(y, x, w, b, nd, H, W, Cin, Cout);
}

void sf_upconv3d_backward_data(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin, int Cout)
{
  if (direct_chosen(SF_KOP_UPCONV3D_BACKWARD_DATA, Cin)) sf_upconv3d_backward_data_direct(dx, dy, w, nd, H, W, Cin, Cout);
  else sf_upconv3d_backward_data_blas(dx, dy, w, nd, H, W, Cin, Cout);
}

void sf_upconv3d_backward_weights(float *dw, float *db, const float *x, const float *dy, int nd, int H, int W,
                                  int Cin, int Cout)
{
  if (direct_chosen(SF_KOP_UPCONV3D_BACKWARD_WEIGHTS, Cin)) sf_upconv3d_backward_weights_direct(dw, db, x, dy, nd, H, W, Cin, Cout);
  else sf_upconv3d_backward_weights_blas(dw, db, x, dy, nd, H, W, Cin, Cout);
}

void sf_upconv3d_forward_bf16(float *y, const float *x, const float *w, const float *b, int nd, int H, int W, int Cin,
                              int Cout)
{
  if (sf_bf16_engine_active() != SF_BF16_AMX) sf_upconv3d_forward(y, x, w, b, nd, H, W, Cin, Cout);
  else if (amx_in_place(SF_KOP_UPCONV3D_FORWARD, W, Cin, Cout)) sf_upconv3d_amx_forward(y, x, w, b, nd, H, W, Cin, Cout);
  else sf_upconv3d_forward_direct_amx(y, x, w, b, nd, H, W, Cin, Cout);
}

void sf_upconv3d_backward_data_bf16(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                    int Cout)
{
  if (sf_bf16_engine_active() != SF_BF16_AMX) sf_upconv3d_backward_data(dx, dy, w, nd, H, W, Cin, Cout);
  else if (amx_in_place(SF_KOP_UPCONV3D_BACKWARD_DATA, W, Cin, Cout)) sf_upconv3d_amx_backward_data(dx, dy, w, nd, H, W, Cin, Cout);
  else sf_upconv3d_backward_data_direct_amx(dx, dy, w, nd, H, W, Cin, Cout);
}

void sf_upconv3d_backward_weights_bf16(float *dw, float *db, const float *x, const float *dy, int nd, int H, int W,
                                       int Cin, int Cout)
{
  if (sf_bf16_engine_active() != SF_BF16_AMX) sf_upconv3d_backward_weights(dw, db, x, dy, nd, H, W, Cin, Cout);
  else if (amx_in_place(SF_KOP_UPCONV3D_BACKWARD_WEIGHTS, W, Cin, Cout)) sf_upconv3d_amx_backward_weights(dw, db, x, dy, nd, H, W, Cin, Cout);
  else sf_upconv3d_backward_weights_direct_amx(dw, db, x, dy, nd, H, W, Cin, Cout);
}

const char *sf_upconv3d_variant_name(int bf16, int W, int Cin, int Cout)
{
  if (bf16 && sf_bf16_engine_active() == SF_BF16_AMX) return sf_upconv3d_amx_fits(W, Cin, Cout) ? "amx" : "direct-amx";
  return direct_wins(Cin) ? "direct" : "blas";
}
