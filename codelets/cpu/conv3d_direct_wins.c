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
 * scripts/bench-kernels --reps 5 (1 thread, median GFLOP/s, direct AVX2 vs im2col + OpenBLAS Zen
 * sgemm, side by side in one run; two base-64 runs and one base-8 run, quiet machine) on an
 * "AMD EPYC" Zen 3 (lscpu model name), 2 cores, fwd/dX/dW, run after run:
 *   Forward and dX win at every shape whose output channels fill the vectors, now that short rows
 *   with many channels take the slab-blocked driver (conv3d_direct_blocked.c) and the register
 *   blocks load each weight vector once (SF_VKEEP): 8^3 256->256 91.4/73.1 vs 63.0/49.8 and
 *   74.6/67.3 vs 54.7/50.8; 8^3 512->512 70.8/65.1 vs 59.2/55.1, 58.7/53.5 vs 56.2/49.9; 4^3
 *   512->512 71.5/48.7 vs 50.1/38.1, 72.4/53.7 vs 58.1/45.0; 16^3 256->256 66.6/69.8 vs 58.6/58.0;
 *   64^3 64->64 50.2/72.0 vs 45.6/61.0. Only 2^3 x 64 (base 8, 1e-3 GFLOP) loses its forward.
 *   dW: the packed driver (conv3d_direct_dw_packed.c) wins from 256 output channels at any row
 *   length: 8^3 256->256 78.5 vs 49.1, 8^3 512->512 68.7 vs 50.2, 4^3 512->512 79.6 vs 43.2,
 *   16^3 256->256 64.8 vs 51.6, 2^3 512->512 15.8 vs 14.4. Below that the rules measured in
 *   session 7 stand (rows >= 16 with <= 128 channels, or <= 64 channels: 64^3 64->64 55.4 vs 50.6;
 *   32^3 128->64 48.9 vs 44.0), and 16^3 128->128 stays a tie (46.8 vs 51.2, 49.3 vs 47.3). */
#ifndef SF_CONV_DIRECT_AVX2_MIN_W
#define SF_CONV_DIRECT_AVX2_MIN_W 16 /* rows of at least this many voxels: */
#endif
#ifndef SF_CONV_DIRECT_AVX2_MAX_C
#define SF_CONV_DIRECT_AVX2_MAX_C 128 /* ... up to this many channels */
#endif
#ifndef SF_CONV_DIRECT_AVX2_DW_WIDE_C
#define SF_CONV_DIRECT_AVX2_DW_WIDE_C 256 /* dW, from this many output channels: any row length */
#endif
#ifndef SF_CONV_DIRECT_AVX2_DW_SMALL_C
#define SF_CONV_DIRECT_AVX2_DW_SMALL_C 64 /* dW, up to this many output channels: any row length */
#endif

static int sf_conv3d_direct_avx2_wins(int W, int nout, int dw)
{
  if (nout % 8 || W < 1) return 0;
  if (!dw) return 1; /* forward/dX: every shape (the slab-blocked driver takes short rows) */
  if (W >= SF_CONV_DIRECT_AVX2_MIN_W && nout <= SF_CONV_DIRECT_AVX2_MAX_C) return 1;
  return nout <= SF_CONV_DIRECT_AVX2_DW_SMALL_C || nout >= SF_CONV_DIRECT_AVX2_DW_WIDE_C;
}

/* OpenBLAS on a generic core (Prescott: it did not recognise the CPU) runs im2col's sgemm at a
 * fifth of a good core's speed (bench-kernels --coretype default --coretype Prescott on the EPYC
 * above: sgemm 2048^3 13.2-14.0 vs 65.8 GFLOP/s; 8^3 256->256 11.4/14.5/17.4 vs the direct
 * kernels' 67.4/66.5/49.4; 4^3 512->512 10.5/10.9/11.9 vs 72.2/51.7/47.5), below every direct
 * kernel set at every shape. So with a generic core every shape whose channels fill the vectors
 * runs direct, whatever the row length. */
static int sf_conv3d_generic_blas_direct(int nout) { return sf_blas_core_is_generic() && nout % 8 == 0; }

int sf_conv3d_direct_wins(int W, int nout)
{
  if (sf_cpu_isa_active() >= SF_ISA_AVX2 && sf_conv3d_generic_blas_direct(nout)) return 1;
  switch (sf_cpu_isa_active()) {
  case SF_ISA_AVX512: return nout % 16 ? sf_conv3d_direct_avx2_wins(W, nout, 0) : W >= SF_CONV_DIRECT_MIN_W;
  case SF_ISA_AVX2: return sf_conv3d_direct_avx2_wins(W, nout, 0);
  default: return 0; /* C: see above; none: off */
  }
}

int sf_conv3d_direct_dw_wins(int W, int Cout)
{
  if (sf_cpu_isa_active() >= SF_ISA_AVX2 && sf_conv3d_generic_blas_direct(Cout)) return 1;
  switch (sf_cpu_isa_active()) {
  case SF_ISA_AVX512: return Cout % 16 ? sf_conv3d_direct_avx2_wins(W, Cout, 1) : W >= SF_CONV_DIRECT_DW_MIN_W;
  case SF_ISA_AVX2: return sf_conv3d_direct_avx2_wins(W, Cout, 1);
  default: return 0;
  }
}
