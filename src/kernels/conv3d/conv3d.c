/* The 3x3x3 convolution's only entry (padding 1, stride 1, no bias; NDHWC activations, (27, Cin, Cout)
 * weights; contracts in scaffold/ops.h). Every rule that chooses a variant is here, with the measurements
 * behind it: Winograd F(2,3) on wide layers with enough tiles, else the direct register blocks of the active
 * CPU kernel set where they beat im2col + sgemm, plain loops (conv3d_small.c) on layers of a few channels, else
 * im2col; for torch_amp: 1, the bf16 engine (AMX tiles or
 * AVX-512 VDPBF16PS). A tuning record measured on the machine (scaffold/kernel_tuning.h) overrides these
 * rules per call shape. sf_conv3d_choose() answers "which variant do the built-in rules pick"; the entries
 * run the record's variant or that one, and count which ran for the run header, the result file and the
 * trace. With VDPBF16PS, forward, dX and dW run
 * Winograd with bf16 GEMMs where it beats the direct VDPBF16PS kernels. The variants (conv3d_variants.h,
 * conv3d_bf16_internal.h) never call back here. */
#include <stdio.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/kernel_tuning.h"
#include "scaffold/ops.h"

#include "conv3d_bf16_internal.h"
#include "conv3d_small.h"
#include "conv3d_variants.h"

/* ---- where the direct kernels beat im2col + sgemm ------------------------------------------------------ */

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
 * asked for (SF_CPU_ISA=c) through the direct variants only (the kernel tests). */
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
 *   16^3 256->256 64.8 vs 51.6, 2^3 512->512 15.8 vs 14.4. Below that these rules
 *   hold (rows >= 16 with <= 128 channels, or <= 64 channels: 64^3 64->64 55.4 vs 50.6;
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

static int direct_wins(int W, int nout)
{
  if (sf_cpu_isa_active() >= SF_ISA_AVX2 && sf_conv3d_generic_blas_direct(nout)) return 1;
  switch (sf_cpu_isa_active()) {
  case SF_ISA_AVX512: return nout % 16 ? sf_conv3d_direct_avx2_wins(W, nout, 0) : W >= SF_CONV_DIRECT_MIN_W;
  case SF_ISA_AVX2: return sf_conv3d_direct_avx2_wins(W, nout, 0);
  default: return 0; /* C: see above; none: off */
  }
}

static int direct_dw_wins(int W, int Cout)
{
  if (sf_cpu_isa_active() >= SF_ISA_AVX2 && sf_conv3d_generic_blas_direct(Cout)) return 1;
  switch (sf_cpu_isa_active()) {
  case SF_ISA_AVX512: return Cout % 16 ? sf_conv3d_direct_avx2_wins(W, Cout, 1) : W >= SF_CONV_DIRECT_DW_MIN_W;
  case SF_ISA_AVX2: return sf_conv3d_direct_avx2_wins(W, Cout, 1);
  default: return 0;
  }
}

/* ---- where the plain loops of conv3d_small.c beat both -------------------------------------------------- */
/* Layers of a few channels (the granularity sweep's finest shapes, docs/runtimes.md: 1-3 channels on blocks of
 * 1-2 planes of 3x3 padded voxels). Measured with tests/kernels_conv/bench_conv_small (1 thread, fastest of up
 * to 2000 calls in 10 ms, ns per call) on an "Intel(R) Xeon(R) Processor" family 6 model 207 (Emerald Rapids KVM
 * guest, AVX-512), blocks 1x3x3, 2x3x3, 2x4x4, 2x6x6, 4x10x10, small vs im2col + sgemm (what the rules below
 * pick when the output channels do not fill the vectors):
 *   forward 1->1 122/887, 160/1454, 196/2252, 325/4326, 1266/20463; 3->1 204/983 ... 3382/27682;
 *   3->3 317/1124 ... 5753/33497; 6->6 1124/1691, 2028/3137, 2248/5140, 4401/10871, 25287/89495;
 *   8->1 411/1447 ... 6242/50432; 12->12 4894/3545 (loses);
 *   dX 1->1 134/872 ... 1459/19875; 1->8 577/1808 ... 6416/45526; 6->6 1397/2620 ... 20047/57343;
 *   dW 1->1 224/854 ... 1084/17789; 3->3 864/1043, 1219/1986 ... 6602/27077; 4->4 1476/1351 (loses), 1662/2273,
 *   2380/4327; 6->6 3138/1936, 4677/4181 (lose), 3553/4723, 6475/9560.
 * Where the output channels fill the vectors the direct kernels run and small only ties (forward 1->8 345/392,
 * 589/533 ...; dW 1->8 743/693, 1064/1027, 1131/2114), so the rule leaves them. Hence: output channels not a
 * multiple of 8, Cin * Cout <= 36 for forward and dX, <= 9 for dW (whose 27 dot products per channel pair
 * cost more). Off with the kernel sets (SF_CONV_DIRECT=0: im2col everywhere). */
#ifndef SF_CONV_SMALL_MAX_PRODUCT
#define SF_CONV_SMALL_MAX_PRODUCT 36
#endif
#ifndef SF_CONV_SMALL_DW_MAX_PRODUCT
#define SF_CONV_SMALL_DW_MAX_PRODUCT 9
#endif

static int small_wins(sf_conv3d_direction dir, int Cin, int Cout)
{
  int nout = dir == SF_CONV3D_BACKWARD_DATA ? Cin : Cout;
  int max = dir == SF_CONV3D_BACKWARD_WEIGHTS ? SF_CONV_SMALL_DW_MAX_PRODUCT : SF_CONV_SMALL_MAX_PRODUCT;
  return sf_cpu_isa_active() != SF_ISA_NONE && dir != SF_CONV3D_BACKWARD_WEIGHTS_TAPS && nout % 8 &&
         Cin <= SF_CONV_SMALL_MAX_C && Cout <= SF_CONV_SMALL_MAX_C && Cin * Cout <= max;
}

/* ---- where Winograd beats the direct kernels ------------------------------------------------------------ */
/* Where it beats the direct kernels (scripts/bench-kernels; /tmp driver, 1 thread, "Intel(R) Xeon(R)
 * Processor" with AVX-512, forward/dX speedups over direct): 4x32^2 64->64 2.27/2.05x,
 * 8x64^2 64->64 2.33/2.28x, 4x32^2 128->64 1.99/2.01x, 4x16^2 128->128 1.74/1.54x, 2x16^2 128->128
 * (64 tiles) 1.59/1.28x, 2x32^2 16->16 1.58/1.50x; 4x8^2 128->128 (32 tiles) 1.20/0.92x: the
 * weight transform is per call, so a call needs enough tiles to amortise it. The AVX2 set on the same
 * CPU (bench_kernels under SF_CPU_ISA=avx2): 2.1-2.7x its direct kernels at 16^3-64^3, 64-128
 * channels, in all three directions. dW follows the same rule: 1.4-2.25x the direct dW. */
#ifndef SF_WINO_MIN_TILES
#define SF_WINO_MIN_TILES 64
#endif

static int winograd_wins(int nd, int H, int W, int K, int N)
{
  return sf_conv_winograd_active() && sf_conv3d_winograd_fits(nd, H, W, K, N) &&
         (size_t)(nd / 2) * (H / 2) * (W / 2) >= SF_WINO_MIN_TILES;
}

/* ---- where Winograd with bf16 GEMMs beats the direct VDPBF16PS kernel (torch_amp: 1, no AMX) ------------ */
/* Measured with tests/kernels_conv/bench_wino_bf16 (1 thread, the three taking turns, 5-7 reps, medians; other
 * builds running on the machine) on an "Intel(R) Xeon(R) Processor" family 6 model 207 (Emerald Rapids, KVM
 * guest, AVX512_BF16 without AMX), Winograd-bf16 speedup over direct VDPBF16PS, forward/dX:
 * 8x32^2 64->64 2.71/2.60x, 16x64^2 64->64 2.73/2.72x, 4x32^2 128->64 2.67/2.51x, 8x32^2 128->128
 * 2.81/2.76x, 4x16^2 128->128 1.88/1.71x, 2x16^2 128->128 (64 tiles) 2.21/1.81x, 4x16^2 256->128
 * 1.91/1.52x, 4x16^2 256->256 1.94/1.66x, 8x8^2 256->256 (64 tiles) 1.34/1.11x, 4x8^2 128->128 (32 tiles)
 * 1.90/1.57x, 4x8^2 256->256 (32 tiles) 1.34/1.41x; 2x8^2 256->256 (16 tiles) 0.67/0.53x: the weight
 * transform (64*K*N per call, staged in fp32) outweighs the GEMMs of so few tiles.
 * On that CPU VDPBF16PS issues at a quarter of the FMA rate (half its multiply-adds), so fp32 Winograd stays
 * 1.3-1.5x faster than Winograd-bf16 where both fit; the bf16 engine is what torch_amp: 1 asks for, and this
 * only picks the fastest bf16 kernel. */
#ifndef SF_WINO_BF16_MIN_TILES
#define SF_WINO_BF16_MIN_TILES 32
#endif

static int winograd_bf16_wins(int nd, int H, int W, int K, int N)
{
  return sf_conv_winograd_active() && sf_conv3d_winograd_bf16_fits(nd, H, W, K, N) &&
         (size_t)(nd / 2) * (H / 2) * (W / 2) >= SF_WINO_BF16_MIN_TILES;
}

/* dW (the taps direction, all bf16 weight gradients) takes it from as many tiles; measured with bench_wino_bf16 --dw
 * (same CPU, 1 thread, the five taking turns, 5 reps, medians; load average 1.6-2.8 from other builds), speedup
 * over direct VDPBF16PS for all 27 taps / for the graph's two tap blocks [0,14) + [14,27) (two calls, 48 of the
 * 64 GEMMs each, the transforms twice; CPU-only runs of several workers split the gradients of >= 128 channels
 * so): 8x32^2 64->64 (1024 tiles) 2.53/1.83x, 4x32^2 128->64 2.55/1.69x, 4x16^2 64->128 2.40/1.55x, 4x16^2
 * 128->128 2.33/1.53x, 4x16^2 256->128 2.41/1.50x, 8x8^2 256->256 (64 tiles) 2.05/1.30x, 2x16^2 128->128 (64)
 * 2.46/1.53x, 4x8^2 128->128 (32) 2.22/1.35x, 4x8^2 256->256 (32) 1.87/1.19x; at 16 tiles 2x8^2 128->256
 * 1.57/1.02x and 2x8^2 256->256 1.38/0.91x: Wt (64*K*N fp32 per call) and its transform back outweigh so few
 * tiles' GEMMs once the two blocks each pay them. fp32 Winograd dW stays 1.1-1.6x faster where it runs. */
#ifndef SF_WINO_BF16_DW_MIN_TILES
#define SF_WINO_BF16_DW_MIN_TILES 32
#endif

static int winograd_bf16_dw_wins(int nd, int H, int W, int Cin, int Cout)
{
  return sf_conv_winograd_active() && sf_conv3d_winograd_bf16_fits(nd, H, W, Cin, Cout) &&
         (size_t)(nd / 2) * (H / 2) * (W / 2) >= SF_WINO_BF16_DW_MIN_TILES;
}

static sf_conv3d_variant choose_bf16(sf_conv3d_direction dir, int nd, int H, int W, int Cin, int Cout)
{
  if (sf_bf16_engine_active() == SF_BF16_AMX) return SF_CONV3D_AMX;
  if ((dir == SF_CONV3D_FORWARD && winograd_bf16_wins(nd, H, W, Cin, Cout)) ||
      (dir == SF_CONV3D_BACKWARD_DATA && winograd_bf16_wins(nd, H, W, Cout, Cin)) ||
      (dir == SF_CONV3D_BACKWARD_WEIGHTS_TAPS && winograd_bf16_dw_wins(nd, H, W, Cin, Cout)))
    return SF_CONV3D_WINOGRAD_BF16;
  return SF_CONV3D_VDPBF16;
}

/* ---- the choice -------------------------------------------------------------------------------------- */
sf_conv3d_variant sf_conv3d_choose(sf_conv3d_direction dir, int bf16, int nd, int H, int W, int Cin, int Cout)
{
  if (bf16) return choose_bf16(dir, nd, H, W, Cin, Cout);
  if (small_wins(dir, Cin, Cout)) return SF_CONV3D_SMALL;
  switch (dir) {
  case SF_CONV3D_FORWARD:
    return winograd_wins(nd, H, W, Cin, Cout) ? SF_CONV3D_WINOGRAD
           : direct_wins(W, Cout)             ? SF_CONV3D_DIRECT
                                              : SF_CONV3D_IM2COL;
  case SF_CONV3D_BACKWARD_DATA: /* a forward conv of dy: K, N = Cout, Cin */
    return winograd_wins(nd, H, W, Cout, Cin) ? SF_CONV3D_WINOGRAD
           : direct_wins(W, Cin)              ? SF_CONV3D_DIRECT
                                              : SF_CONV3D_IM2COL;
  case SF_CONV3D_BACKWARD_WEIGHTS:
    return winograd_wins(nd, H, W, Cin, Cout) ? SF_CONV3D_WINOGRAD
           : direct_dw_wins(W, Cout)          ? SF_CONV3D_DIRECT
                                              : SF_CONV3D_IM2COL;
  case SF_CONV3D_BACKWARD_WEIGHTS_TAPS: return direct_dw_wins(W, Cout) ? SF_CONV3D_DIRECT : SF_CONV3D_IM2COL;
  }
  SF_ABORT("sf_conv3d_choose: direction %d", (int)dir);
}

/* The choice of one call: the machine's tuning record where it has the shape (scaffold/kernel_tuning.h), else
 * the built-in rules above; counted for the run's report (scaffold/kernel_choices.h) */
static sf_conv3d_variant chosen(const sf_conv3d_shape *s)
{
  static const sf_kernel_op ops[] = {SF_KOP_CONV3D_FORWARD, SF_KOP_CONV3D_BACKWARD_DATA,
                                     SF_KOP_CONV3D_BACKWARD_WEIGHTS, SF_KOP_CONV3D_BACKWARD_WEIGHTS_TAPS};
  sf_conv3d_shapes_note(s);
  sf_conv3d_variant v;
  int tuned = sf_conv3d_tuning_lookup(s, &v);
  if (!tuned) v = sf_conv3d_choose(s->dir, s->bf16, s->nd, s->H, s->W, s->Cin, s->Cout);
  sf_conv3d_tuning_count_call(tuned);
  sf_kernel_choice_note(ops[s->dir], sf_conv3d_variant_name(v));
  return v;
}

static void run_chosen(sf_conv3d_direction dir, int bf16, float *out, const float *lo, const float *mid,
                       const float *hi, const float *other, int t0, int t1, int nd, int H, int W, int Cin, int Cout)
{
  sf_conv3d_shape s = {dir, bf16, nd, H, W, Cin, Cout};
  sf_conv3d_run(chosen(&s), &s, out, lo, mid, hi, other, t0, t1);
}

/* ---- fp32 entries ------------------------------------------------------------------------------------ */
void sf_conv3d_forward(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd, int H,
                       int W, int Cin, int Cout)
{
  run_chosen(SF_CONV3D_FORWARD, 0, y, x_lo, x, x_hi, w, 0, 27, nd, H, W, Cin, Cout);
}

void sf_conv3d_backward_data(float *dx, const float *dy_lo, const float *dy, const float *dy_hi, const float *w,
                             int nd, int H, int W, int Cin, int Cout)
{
  run_chosen(SF_CONV3D_BACKWARD_DATA, 0, dx, dy_lo, dy, dy_hi, w, 0, 27, nd, H, W, Cin, Cout);
}

void sf_conv3d_backward_weights(float *dw, const float *x_lo, const float *x, const float *x_hi, const float *dy,
                                int nd, int H, int W, int Cin, int Cout)
{
  if ((size_t)nd * H * W == 0) return;
  run_chosen(SF_CONV3D_BACKWARD_WEIGHTS, 0, dw, x_lo, x, x_hi, dy, 0, 27, nd, H, W, Cin, Cout);
}

void sf_conv3d_backward_weights_taps(float *dw, int t0, int t1, const float *x_lo, const float *x, const float *x_hi,
                                     const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(0 <= t0 && t0 <= t1 && t1 <= 27 && Cout >= SF_CONV_DW_T_COUT);
  if ((size_t)nd * H * W == 0 || t1 == t0 || Cin == 0) return;
  run_chosen(SF_CONV3D_BACKWARD_WEIGHTS_TAPS, 0, dw, x_lo, x, x_hi, dy, t0, t1, nd, H, W, Cin, Cout);
}

/* ---- bf16 entries: the active engine ------------------------------------------------------------------ */
static void need_engine(void)
{
  if (sf_bf16_engine_active() == SF_BF16_NONE)
    SF_ABORT("bf16 conv3d called without a bf16 engine (no AVX512_BF16, or SF_CPU_BF16=none)");
}

void sf_conv3d_forward_bf16(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                            int H, int W, int Cin, int Cout)
{
  need_engine();
  run_chosen(SF_CONV3D_FORWARD, 1, y, x_lo, x, x_hi, w, 0, 27, nd, H, W, Cin, Cout);
}

void sf_conv3d_backward_data_bf16(float *dx, const float *dy_lo, const float *dy, const float *dy_hi, const float *w,
                                  int nd, int H, int W, int Cin, int Cout)
{
  need_engine();
  run_chosen(SF_CONV3D_BACKWARD_DATA, 1, dx, dy_lo, dy, dy_hi, w, 0, 27, nd, H, W, Cin, Cout);
}

void sf_conv3d_backward_weights_taps_bf16(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                          const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  need_engine();
  run_chosen(SF_CONV3D_BACKWARD_WEIGHTS_TAPS, 1, dw, x_lo, x, x_hi, dy, t0, t1, nd, H, W, Cin, Cout);
}

/* Weights packed once per forward: only the AMX engine has a slab-independent layout */
size_t sf_conv3d_bf16_packed_bytes(int Cin, int Cout, int flip)
{
  return sf_bf16_engine_active() == SF_BF16_AMX ? sf_conv3d_amx_packed_bytes(Cin, Cout, flip) : 0;
}

void sf_conv3d_bf16_pack(void *wfwd, void *wdx, const float *w, int Cin, int Cout)
{
  SF_ASSERT((!wfwd || sf_conv3d_bf16_packed_bytes(Cin, Cout, 0) > 0) &&
            (!wdx || sf_conv3d_bf16_packed_bytes(Cin, Cout, 1) > 0));
  sf_conv3d_amx_pack(wfwd, wdx, w, Cin, Cout);
}

void sf_conv3d_bf16_packed(float *y, const float *x_lo, const float *x, const float *x_hi, const void *wp, int nd,
                           int H, int W, int Cin, int Cout, int flip)
{
  SF_ASSERT(sf_conv3d_bf16_packed_bytes(Cin, Cout, flip) > 0);
  sf_conv3d_shape s = {flip ? SF_CONV3D_BACKWARD_DATA : SF_CONV3D_FORWARD, 1, nd, H, W, Cin, Cout};
  chosen(&s); /* AMX only: the one bf16 variant with a packed layout */
  sf_conv3d_amx_packed(y, x_lo, x, x_hi, wp, nd, H, W, Cin, Cout, flip);
}
