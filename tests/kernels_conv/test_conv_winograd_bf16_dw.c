/* The Winograd F(2x2x2, 3x3x3) weight gradient with its 64 GEMMs in bf16 on VDPBF16PS
 * (src/kernels/conv3d/conv3d_winograd_bf16_dw_tiles.h, torch_amp: 1 on CPUs without AMX) against the naive fp32
 * _ref oracle, for all 27 taps and as the graph's two tap blocks [0,14) + [14,27):
 *  - exact data (inputs and output gradients small integers): the transformed tiles are then integers below 2^5,
 *    exact in bf16, so the result must equal the reference to fp32 summation error (max error relative to the
 *    largest value <= RTOL_DW_EXACT), also accumulated onto a nonzero gradient: this checks the arithmetic (the
 *    tile pairs, the zero tile of an odd block, blocks, edges, the points a tap range runs);
 *  - uniform random data at several magnitudes: max error relative to the largest reference value <= RTOL_DW_BF16,
 *    and at least MIN_BF16 (the operands really are rounded). Each line prints the direct VDPBF16PS dW's error on
 *    the same data beside it. Measured on an Emerald Rapids Xeon, these 8 shapes (16..256 channels, 6..84 tiles)
 *    x 3 magnitudes (x*1 dy*1, x*1e-3 dy*3e-2, x*300 dy*1e-4), all taps and two tap blocks alike: Winograd-bf16
 *    max 5.0e-3 .. 9.2e-3 (rms relative to the reference's rms 5.2e-3 .. 5.5e-3) against direct VDPBF16PS max
 *    1.8e-3 .. 3.0e-3 (rms 2.0e-3 .. 2.4e-3), alike at every magnitude: the rounding applies to sums of up to 8
 *    inputs and 8 output gradients, about 2.5x the direct kernel's error, as the forward's.
 *    RTOL_DW_BF16 = 2e-2 (the direct bf16 kernels' bound, RTOL_BF16) is 2.2x the largest measured; a wrong pair,
 *    a missing zero tile or a skipped point is off by O(1) (checked: without the zero tile of an odd block the
 *    exact data fails by 0.12 .. 5.7).
 *  - the rule: the bf16 dW entry takes it where sf_conv3d_choose says so (bitwise the same result), never with
 *    SF_CONV_WINOGRAD off, nor on a slab of few tiles.
 * Skipped (exit 77) on a CPU without AVX512_BF16. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bf16test.h"
#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#include "../../src/kernels/conv3d/conv3d_bf16_internal.h"
#include "../../src/kernels/conv3d/conv3d_variants.h"
#include "testutil.h"

#define RTOL_DW_BF16 2e-2
#define RTOL_DW_EXACT 1e-5

/* rms(got - want) / rms(want) */
static double rms_rel(const float *got, const float *want, size_t n)
{
  double e = 0, s = 1e-300;
  for (size_t i = 0; i < n; i++) {
    double d = (double)got[i] - want[i];
    e += d * d, s += (double)want[i] * want[i];
  }
  return sqrt(e / s);
}

/* a: n values, each a random integer in [-q, q] */
static void quantise(float *a, size_t n, int q)
{
  for (size_t i = 0; i < n; i++) a[i] = rintf(a[i] * ((float)q + 0.49f));
}

static void scale(float *a, size_t n, float s)
{
  if (a)
    for (size_t i = 0; i < n; i++) a[i] *= s;
}

/* dw: (27, Ci, Co) += the kernel's gradient, all taps at once (split 0) or as taps [0,14) and [14,27) */
typedef void (*dw_fn)(float *, int, int, const float *, const float *, const float *, const float *, int, int, int,
                      int, int);
static void run_dw(dw_fn f, int split, float *dw, const float *xlo, const float *x, const float *xhi, const float *dy,
                   int nd, int H, int W, int Ci, int Co)
{
  if (!split) {
    f(dw, 0, 27, xlo, x, xhi, dy, nd, H, W, Ci, Co);
    return;
  }
  f(dw, 0, 14, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  f(dw + (size_t)14 * Ci * Co, 14, 27, xlo, x, xhi, dy, nd, H, W, Ci, Co);
}

/* exact: 0 random data scaled by sx (inputs) and sg (output gradients), 1 small integers */
static void check_shape(int nd, int H, int W, int Ci, int Co, int lo, int hi, int exact, float sx, float sg, uint64_t s)
{
  size_t px = (size_t)H * W * Ci, ny = (size_t)nd * H * W * Co, nw = (size_t)27 * Ci * Co;
  float *x = ct_rand(nd * px, s), *xlo = lo ? ct_rand(px, s + 1) : NULL, *xhi = hi ? ct_rand(px, s + 2) : NULL;
  float *dy = ct_rand(ny, s + 3);
  float *ins[4] = {x, xlo, xhi, dy};
  size_t ns[4] = {nd * px, px, px, ny};
  for (int i = 0; i < 4; i++)
    if (ins[i]) exact ? quantise(ins[i], ns[i], 2) : scale(ins[i], ns[i], i == 3 ? sg : sx);
  SF_CHECK(sf_conv3d_winograd_bf16_fits(nd, H, W, Ci, Co), "dW %dx%dx%d %d->%d: does not fit", nd, H, W, Ci, Co);
  /* exact data also accumulates onto a nonzero gradient (the same start for the reference) */
  float *start = exact ? ct_rand(nw, s + 4) : ct_zeros(nw), *ref = ct_copy(start, nw);
  sf_conv3d_backward_weights_ref(ref, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  float *direct = ct_zeros(nw);
  if (!exact) sf_conv3d_weights_vdpbf16(direct, 0, 27, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  for (int split = 0; split < 2; split++) {
    char nm[224];
    snprintf(nm, sizeof nm, "winograd-vdpbf16ps dW %s %dx%dx%d %d->%d (%d tiles) halo %d/%d %s x*%g dy*%g",
             split ? "taps 0-13,14-26" : "taps 0-26", nd, H, W, Ci, Co, nd / 2 * (H / 2) * (W / 2), lo, hi,
             exact ? "integers" : "uniform", (double)sx, (double)sg);
    float *out = ct_copy(start, nw);
    run_dw(sf_conv3d_backward_weights_winograd_bf16, split, out, xlo, x, xhi, dy, nd, H, W, Ci, Co);
    if (exact) {
      sf_check_close_f(nm, out, ref, nw, RTOL_DW_EXACT);
    } else {
      double e = sf_max_rel_err_f(out, ref, nw, NULL), ed = sf_max_rel_err_f(direct, ref, nw, NULL);
      printf("%-100s max %.2e rms %.2e | direct vdpbf16ps max %.2e rms %.2e\n", nm, e, rms_rel(out, ref, nw), ed,
             rms_rel(direct, ref, nw));
      sf_check_close_f(nm, out, ref, nw, RTOL_DW_BF16);
      SF_CHECK(e >= MIN_BF16, "%s: differs from fp32 by only %.3e < %.1e: operands not rounded to bf16?", nm, e,
               MIN_BF16);
    }
    free(out);
  }
  for (int i = 0; i < 4; i++) free(ins[i]);
  free(start), free(ref), free(direct);
}

static void check_rule(void)
{
  if (sf_bf16_engine_set_for_testing(SF_BF16_VDPBF16PS) != SF_BF16_VDPBF16PS) {
    printf("skip the rule checks: the VDPBF16PS engine cannot be made active\n");
    return;
  }
  const sf_conv3d_direction taps = SF_CONV3D_BACKWARD_WEIGHTS_TAPS;
  sf_conv_winograd_set_for_testing(1);
  SF_CHECK(sf_conv3d_choose(taps, 1, 8, 32, 32, 64, 64) == SF_CONV3D_WINOGRAD_BF16,
           "bf16 dW 8x32x32 64->64 should take winograd-vdpbf16ps");
  SF_CHECK(sf_conv3d_choose(taps, 1, 4, 16, 16, 128, 128) == SF_CONV3D_WINOGRAD_BF16,
           "bf16 dW 4x16x16 128->128 should take winograd-vdpbf16ps");
  SF_CHECK(sf_conv3d_choose(taps, 1, 2, 8, 8, 256, 256) == SF_CONV3D_VDPBF16, "a slab of 16 tiles should stay direct");
  SF_CHECK(sf_conv3d_choose(taps, 1, 8, 4, 4, 512, 512) == SF_CONV3D_VDPBF16, "512 x 512 does not fit");
  SF_CHECK(sf_conv3d_choose(taps, 1, 3, 32, 32, 64, 64) == SF_CONV3D_VDPBF16, "an odd slab does not fit");
  sf_conv3d_shape s = {taps, 1, 8, 32, 32, 64, 64};
  SF_CHECK(sf_conv3d_variant_runs(SF_CONV3D_WINOGRAD_BF16, &s), "winograd-vdpbf16ps is not a dW candidate");
  sf_conv_winograd_set_for_testing(0);
  SF_CHECK(sf_conv3d_choose(taps, 1, 8, 32, 32, 64, 64) == SF_CONV3D_VDPBF16,
           "SF_CONV_WINOGRAD off, yet bf16 Winograd dW is chosen");
  sf_conv_winograd_set_for_testing(1);

  /* the entry hands over to it where it wins: bitwise the same result, per tap block too */
  int nd = 8, H = 32, W = 32, C = 64;
  size_t n = (size_t)nd * H * W * C, nw = (size_t)27 * C * C;
  float *x = ct_rand(n, 70), *lo = ct_rand(n / nd, 71), *dy = ct_rand(n, 72);
  float *a = ct_zeros(nw), *b = ct_zeros(nw);
  for (int split = 0; split < 2; split++) {
    run_dw(sf_conv3d_backward_weights_taps_bf16, split, a, lo, x, NULL, dy, nd, H, W, C, C);
    run_dw(sf_conv3d_backward_weights_winograd_bf16, split, b, lo, x, NULL, dy, nd, H, W, C, C);
  }
  sf_check_bitwise_f("the bf16 dW entry hands over to winograd-vdpbf16ps", a, b, nw);
  free(x), free(lo), free(dy), free(a), free(b);
}

int main(void)
{
  if (!sf_cpu_bf16_supported()) {
    printf("skip: this CPU has no AVX512_BF16 (the bf16 Winograd GEMMs need VDPBF16PS)\n");
    return 77;
  }
  for (int exact = 1; exact >= 0; exact--) {
    const float mags[][2] = {{1.0f, 1.0f}, {1e-3f, 3e-2f}, {300.0f, 1e-4f}};
    for (int m = 0; m < (exact ? 1 : 3); m++) {
      float sx = mags[m][0], sg = mags[m][1];
      check_shape(2, 4, 6, 16, 32, 1, 1, exact, sx, sg, 10);      /* 6 tiles, edge tiles only */
      check_shape(2, 6, 6, 32, 48, 0, 1, exact, sx, sg, 20);      /* 9: an odd block; 48: a last vector of 16 */
      check_shape(4, 6, 10, 48, 16, 1, 0, exact, sx, sg, 30);     /* 30; K != N, rows in blocks of 12 */
      check_shape(6, 10, 10, 128, 128, 0, 0, exact, sx, sg, 40);  /* 75: blocks of 32, 32, 11 */
      check_shape(4, 12, 14, 64, 64, 1, 1, exact, sx, sg, 50);    /* 84: blocks of 64, 20 */
      check_shape(2, 8, 8, 256, 256, 0, 1, exact, sx, sg, 60);    /* 16: down2 at the size cap */
      check_shape(2, 8, 10, 128, 256, 1, 1, exact, sx, sg, 70);   /* 20: K != N, wide */
      check_shape(2, 6, 6, 256, 128, 1, 1, exact, sx, sg, 80);    /* 9: odd, wide */
    }
  }
  check_rule();
  return sf_test_end();
}
