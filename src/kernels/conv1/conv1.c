/* The 1x1x1 convolution's only entry (OutConv, with bias; contracts in scaffold/ops.h): the direct
 * small-GEMM kernels (conv1_direct.c) where they win, else OpenBLAS (conv1_blas.c). */
#include <stddef.h>

#include "scaffold/cpu_isa.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/ops.h"

#include "conv1_variants.h"

/* Measured in one run of scripts/bench-kernels --gemm --coretype default --coretype Prescott (1 thread,
 * thread CPU time) on an AMD EPYC Zen 3 (AVX2, no AVX-512) shared with other jobs, GFLOP/s
 * forward / dX / dW of the outc layers (32768 voxels):
 *   64->6: AVX2 direct 17.2 / 14.6 / 6.4;  sgemm Zen core 8.1 / 10.2 / 6.1;  Prescott 4.3 / 5.8 / 5.9
 *    8->6: AVX2 direct 10.7 / 30.7 / 11.9; sgemm Zen core 10.3 / 14.3 / 7.3; Prescott 6.2 / 7.3 / 7.0
 * so AVX2 (and AVX-512, assumed alike: not measured here) always wins; the portable C set's partial
 * vectors (Cout = 6 < 2 x 4 lanes) lose even to Prescott (separate run, 64->6: 4.1 / 12.2 / 3.3
 * against 9.3 / 8.3 / 8.1), so the C set keeps sgemm. */
static int direct_wins(void)
{
  return sf_cpu_isa_active() >= SF_ISA_AVX2;
}


/* The choice, counted for the run's report (scaffold/kernel_choices.h) */
static int direct_chosen(sf_kernel_op op)
{
  int d = direct_wins();
  sf_kernel_choice_note(op, d ? "direct" : "blas");
  return d;
}

void sf_conv1_forward(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout)
{
  if (direct_chosen(SF_KOP_CONV1_FORWARD)) sf_conv1_forward_direct(y, x, w, b, n, Cin, Cout);
  else sf_conv1_forward_blas(y, x, w, b, n, Cin, Cout);
}

void sf_conv1_backward_data(float *dx, const float *dy, const float *w, size_t n, int Cin, int Cout)
{
  if (direct_chosen(SF_KOP_CONV1_BACKWARD_DATA)) sf_conv1_backward_data_direct(dx, dy, w, n, Cin, Cout);
  else sf_conv1_backward_data_blas(dx, dy, w, n, Cin, Cout);
}

void sf_conv1_backward_weights(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin, int Cout)
{
  if (direct_chosen(SF_KOP_CONV1_BACKWARD_WEIGHTS)) sf_conv1_backward_weights_direct(dw, db, x, dy, n, Cin, Cout);
  else sf_conv1_backward_weights_blas(dw, db, x, dy, n, Cin, Cout);
}

const char *sf_conv1_variant_name(void) { return direct_wins() ? "direct" : "blas"; }
