/* Whether the direct 3x3x3 conv kernels (conv3d_direct.c, conv3d_direct_dw.c) may run and where
 * they beat im2col + sgemm, per CPU kernel set, with the measurements behind each rule; the _blas
 * kernels (conv3d_blas.c) ask this before each call. */
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

int sf_conv3d_direct_available(void) { return sf_cpu_isa_active() != SF_ISA_NONE; }

/* Where the direct kernels beat im2col + sgemm, per kernel set: channel counts that fill the
 * vectors, rows long enough to amortise the weight stream (forward/dX: MIN_W; dW: DW_MIN_W).
 * AVX-512 (measured on an AVX-512 EPYC, 1 thread): at 4^3 x 512 channels the direct kernel ran at
 * 42 GFLOP/s against im2col + sgemm's 73; from 8^3 up at 102-122 against 78-92. Its dW at 8^3 x 256
 * ran at 77 against 90; from 16^2 planes up at 106-116 against 81-93. Channel counts that are odd
 * multiples of 8 run the AVX2 blocks under the AVX2 rule (sf_direct_kernels_for; not measured on
 * an AVX-512 CPU).
 * AVX2: see sf_conv3d_direct_avx2_wins below.
 * Portable C: never chosen. On the AVX2 EPYC below (where -march=native compiles it to AVX2 code)
 * it beat im2col + sgemm only on layers of <= 16 channels, where the AVX2 set is faster still, and
 * it was not measured on a CPU where it would be the best set (no AVX2, or not x86). It runs when
 * asked for (SF_CPU_ISA=c) through the _direct entry points only. */
#ifndef SF_CONV_DIRECT_MIN_W
#define SF_CONV_DIRECT_MIN_W 8
#endif
#ifndef SF_CONV_DIRECT_DW_MIN_W
#define SF_CONV_DIRECT_DW_MIN_W 16
#endif
/* AVX2 (8-float ymm, blocks of 6 voxels/input channels x 16 channels). Measured with
 * bench_kernels (1 thread, GFLOP/s direct AVX2 vs im2col + OpenBLAS Zen sgemm, side by side in one
 * run; three base-64 and two base-8 runs, noisy) on an "AMD EPYC" Zen 3 (lscpu model name), 2 cores
 * shared with other jobs (load average 10-12); fwd/dX/dW, run after run:
 *   Rows >= 16 voxels with <= 128 channels win: 64^3 64->64 25.9/26.2/26.3 vs 23.4/26.4/22.8,
 *   28.4/26.0/31.9 vs 24.0/20.1/31.6, 34.2/34.9/31.0 vs 28.7/30.5/31.6; 16^3 128->128
 *   35.5/25.1/14.2 vs 25.0/12.1/13.6, 42.3/33.4/29.0 vs 25.9/26.5/22.6, 35.6/40.7/32.5 vs
 *   32.9/30.3/33.1 (dW at 128 channels a tie).
 *   16^3 256->256: 18.5/20.7/10.7 vs 13.4/16.4/10.3, 12.6/21.3/22.4 vs 16.5/19.2/21.8,
 *   26.0/28.6/23.1 vs 27.8/22.0/28.1: only dX wins every time; one rule for forward and dX (the
 *   caller does not say which) leaves both on im2col.
 *   Rows of 8 and below with 256-512 channels lose (the 27*K*16 packed weights outgrow L2): 8^3
 *   256->256 12.6/18.1/12.4 vs 18.7/18.2/15.7, 28.5/29.9/25.1 vs 34.8/29.9/30.6; 4^3 512->512
 *   11.2/17.0/10.2 vs 22.8/21.7/17.6.
 *   Short rows with few channels: 8^3 32->32 25.9/25.0/22.5 vs 22.6/15.8/16.6 and 20.2/24.1/28.4
 *   vs 14.7/16.0/22.2 (win); 8^3 64->64 23.6/32.1 vs 24.6/25.2, then 29.0/23.5 vs 34.9/22.7
 *   (forward/dX: no clear win), its dW 34.5 vs 30.9, then 35.1 vs 21.2; 2^3 64->64 dW 15.9 vs
 *   12.7, then 13.3 vs 13.4. */
#ifndef SF_CONV_DIRECT_AVX2_MIN_W
#define SF_CONV_DIRECT_AVX2_MIN_W 16 /* rows of at least this many voxels: */
#endif
#ifndef SF_CONV_DIRECT_AVX2_MAX_C
#define SF_CONV_DIRECT_AVX2_MAX_C 128 /* ... up to this many channels */
#endif
#ifndef SF_CONV_DIRECT_AVX2_SMALL_C
#define SF_CONV_DIRECT_AVX2_SMALL_C 32 /* forward/dX, up to this many channels: */
#endif
#ifndef SF_CONV_DIRECT_AVX2_SMALL_MIN_W
#define SF_CONV_DIRECT_AVX2_SMALL_MIN_W 4 /* ... rows of at least this many voxels */
#endif
#ifndef SF_CONV_DIRECT_AVX2_DW_SMALL_C
#define SF_CONV_DIRECT_AVX2_DW_SMALL_C 64 /* dW, up to this many output channels: any row length */
#endif

static int sf_conv3d_direct_avx2_wins(int W, int nout, int dw)
{
  if (nout % 8 || W < 1) return 0;
  if (W >= SF_CONV_DIRECT_AVX2_MIN_W && nout <= SF_CONV_DIRECT_AVX2_MAX_C) return 1;
  if (dw) return nout <= SF_CONV_DIRECT_AVX2_DW_SMALL_C;
  return nout <= SF_CONV_DIRECT_AVX2_SMALL_C && W >= SF_CONV_DIRECT_AVX2_SMALL_MIN_W;
}

int sf_conv3d_direct_wins(int W, int nout)
{
  switch (sf_cpu_isa_active()) {
  case SF_ISA_AVX512: return nout % 16 ? sf_conv3d_direct_avx2_wins(W, nout, 0) : W >= SF_CONV_DIRECT_MIN_W;
  case SF_ISA_AVX2: return sf_conv3d_direct_avx2_wins(W, nout, 0);
  default: return 0; /* C: see above; none: off */
  }
}

int sf_conv3d_direct_dw_wins(int W, int Cout)
{
  switch (sf_cpu_isa_active()) {
  case SF_ISA_AVX512: return Cout % 16 ? sf_conv3d_direct_avx2_wins(W, Cout, 1) : W >= SF_CONV_DIRECT_DW_MIN_W;
  case SF_ISA_AVX2: return sf_conv3d_direct_avx2_wins(W, Cout, 1);
  default: return 0;
  }
}
