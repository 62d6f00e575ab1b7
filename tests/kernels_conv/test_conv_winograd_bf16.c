/* Winograd F(2x2x2, 3x3x3) with its 64 GEMMs in bf16 on VDPBF16PS (src/kernels/conv3d/conv3d_winograd_bf16_tiles.h,
 * torch_amp: 1 on CPUs without AMX), forward and dX, against the naive fp32 _ref oracle:
 *  - exact data (inputs small integers, weights in {-1, 0, 1}): the transformed inputs and weights are
 *    then exact in bf16 (integers below 2^8, multiples of 1/8 below 2^5), so the result must equal the
 *    reference to fp32 summation error (max error relative to the largest value <= 1e-5): this checks
 *    the arithmetic (pairing of channels, interleaving of the weights, blocks, edges);
 *  - uniform random data at several magnitudes: max error relative to the largest reference value
 *    <= RTOL_WINO_BF16, and at least MIN_BF16 (the operands really are rounded). Each line also prints
 *    the direct VDPBF16PS kernel's error on the same data, which the bound is set against. Measured on an
 *    Emerald Rapids Xeon, these 8 shapes (16..256 channels) x 3 magnitudes (x*1 w*1, x*1e-3 w*3e-2,
 *    x*300 w*1e-4), per direction: Winograd-bf16 max 4.0e-3 .. 7.5e-3 (rms, relative to the reference's
 *    rms, 5.1e-3 .. 6.1e-3) against direct VDPBF16PS max 1.7e-3 .. 3.2e-3 (rms 2.1e-3 .. 2.5e-3), the
 *    same in both directions and at every magnitude: the transforms sum up to 8 inputs and 27 weights
 *    before the rounding, which is then relative to those larger sums, about 2.5x the direct kernel's
 *    error. RTOL_WINO_BF16 = 1.5e-2 is 2x the largest measured; a swapped channel pair or a wrong
 *    transform is off by O(1) (checked: swapping the pair interleave of the weights fails with 1.6).
 *  - the rule: the bf16 entries take it where sf_conv3d_choose says so (bitwise the same result), never
 *    with SF_CONV_WINOGRAD off, nor on a slab of few tiles (dW: test_conv_winograd_bf16_dw.c).
 * Shapes: edge tiles only, a last column block of one vector (N = 48, 16), K != N, a partial last block of
 * tiles, slabs with and without halo planes, 16 .. 256 channels.
 * Skipped (exit 77) on a CPU without AVX512_BF16. */
#include <math.h>
#include <stdio.h>

#include "bf16test.h"
#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#include "../../src/kernels/conv3d/conv3d_bf16_internal.h"
#include "../../src/kernels/conv3d/conv3d_variants.h"
#include "testutil.h"

#define RTOL_WINO_BF16 1.5e-2
#define RTOL_WINO_EXACT 1e-5

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

typedef void (*conv_fn)(float *, const float *, const float *, const float *, const float *, int, int, int, int, int);

/* exact: 0 random data scaled by sx (inputs) and sw (weights), 1 small integers */
static void check_shape(int nd, int H, int W, int Ci, int Co, int lo, int hi, int exact, float sx, float sw, uint64_t s)
{
  size_t px = (size_t)H * W * Ci, py = (size_t)H * W * Co, nw = (size_t)27 * Ci * Co;
  float *x = ct_rand(nd * px, s), *xlo = lo ? ct_rand(px, s + 1) : NULL, *xhi = hi ? ct_rand(px, s + 2) : NULL;
  float *dy = ct_rand(nd * py, s + 3), *dylo = lo ? ct_rand(py, s + 4) : NULL, *dyhi = hi ? ct_rand(py, s + 5) : NULL;
  float *w = ct_rand(nw, s + 6);
  float *ins[6] = {x, xlo, xhi, dy, dylo, dyhi};
  size_t ns[6] = {nd * px, px, px, nd * py, py, py};
  for (int i = 0; i < 6; i++)
    if (ins[i]) exact ? quantise(ins[i], ns[i], 2) : scale(ins[i], ns[i], sx);
  exact ? quantise(w, nw, 1) : scale(w, nw, sw);
  const struct {
    const char *dir;
    conv_fn ref, wino;
    const float *lo, *in, *hi;
    int K, N;
    size_t nout;
  } dirs[2] = {
      {"forward", sf_conv3d_forward_ref, sf_conv3d_forward_winograd_bf16, xlo, x, xhi, Ci, Co, nd * py},
      {"dX", sf_conv3d_backward_data_ref, sf_conv3d_backward_data_winograd_bf16, dylo, dy, dyhi, Co, Ci, nd * px},
  };
  for (int i = 0; i < 2; i++) {
    char nm[224];
    snprintf(nm, sizeof nm, "winograd-vdpbf16ps %s %dx%dx%d %d->%d halo %d/%d %s x*%g w*%g", dirs[i].dir, nd, H, W,
             Ci, Co, lo, hi, exact ? "integers" : "uniform", (double)sx, (double)sw);
    SF_CHECK(sf_conv3d_winograd_bf16_fits(nd, H, W, dirs[i].K, dirs[i].N), "%s: does not fit", nm);
    float *ref = ct_zeros(dirs[i].nout), *out = ct_rand(dirs[i].nout, 99), *direct = ct_zeros(dirs[i].nout);
    dirs[i].ref(ref, dirs[i].lo, dirs[i].in, dirs[i].hi, w, nd, H, W, Ci, Co);
    dirs[i].wino(out, dirs[i].lo, dirs[i].in, dirs[i].hi, w, nd, H, W, Ci, Co);
    if (exact) {
      sf_check_close_f(nm, out, ref, dirs[i].nout, RTOL_WINO_EXACT);
    } else {
      sf_conv3d_vdpbf16(direct, dirs[i].lo, dirs[i].in, dirs[i].hi, w, nd, H, W, Ci, Co, i);
      double e = sf_max_rel_err_f(out, ref, dirs[i].nout, NULL), ed = sf_max_rel_err_f(direct, ref, dirs[i].nout, NULL);
      printf("%-78s max %.2e rms %.2e | direct vdpbf16ps max %.2e rms %.2e\n", nm, e,
             rms_rel(out, ref, dirs[i].nout), ed, rms_rel(direct, ref, dirs[i].nout));
      sf_check_close_f(nm, out, ref, dirs[i].nout, RTOL_WINO_BF16);
      SF_CHECK(e >= MIN_BF16, "%s: differs from fp32 by only %.3e < %.1e: operands not rounded to bf16?", nm, e,
               MIN_BF16);
    }
    free(ref), free(out), free(direct);
  }
  for (int i = 0; i < 6; i++) free(ins[i]);
  free(w);
}

static void check_rule(void)
{
  if (sf_bf16_engine_set_for_testing(SF_BF16_VDPBF16PS) != SF_BF16_VDPBF16PS) {
    printf("skip the rule checks: the VDPBF16PS engine cannot be made active\n");
    return;
  }
  sf_conv_winograd_set_for_testing(1);
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 1, 8, 32, 32, 64, 64) == SF_CONV3D_WINOGRAD_BF16,
           "bf16 forward 8x32x32 64->64 should take winograd-vdpbf16ps");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_BACKWARD_DATA, 1, 8, 32, 32, 64, 64) == SF_CONV3D_WINOGRAD_BF16,
           "bf16 dX 8x32x32 64->64 should take winograd-vdpbf16ps");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_BACKWARD_WEIGHTS_TAPS, 1, 8, 32, 32, 64, 64) == SF_CONV3D_WINOGRAD_BF16,
           "bf16 dW 8x32x32 64->64 should take winograd-vdpbf16ps too (test_conv_winograd_bf16_dw.c checks it)");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 1, 2, 8, 8, 256, 256) == SF_CONV3D_VDPBF16,
           "a slab of 16 tiles should stay direct");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_BACKWARD_DATA, 1, 4, 8, 8, 128, 128) == SF_CONV3D_WINOGRAD_BF16,
           "bf16 dX 4x8x8 128->128 (32 tiles) should take winograd-vdpbf16ps");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 1, 3, 32, 32, 64, 64) == SF_CONV3D_VDPBF16,
           "an odd slab does not fit");
  SF_CHECK(!strcmp(sf_conv3d_variant_name(SF_CONV3D_WINOGRAD_BF16), "winograd-vdpbf16ps"), "variant name %s",
           sf_conv3d_variant_name(SF_CONV3D_WINOGRAD_BF16));
  sf_conv_winograd_set_for_testing(0);
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 1, 8, 32, 32, 64, 64) == SF_CONV3D_VDPBF16,
           "SF_CONV_WINOGRAD off, yet bf16 Winograd is chosen");
  sf_conv_winograd_set_for_testing(1);

  /* the entries hand over to it where it wins: bitwise the same result */
  int nd = 8, H = 32, W = 32, C = 64;
  size_t n = (size_t)nd * H * W * C;
  float *x = ct_rand(n, 70), *lo = ct_rand(n / nd, 71), *w = ct_rand((size_t)27 * C * C, 72);
  float *a = ct_zeros(n), *b = ct_zeros(n);
  sf_conv3d_forward_bf16(a, lo, x, NULL, w, nd, H, W, C, C);
  sf_conv3d_forward_winograd_bf16(b, lo, x, NULL, w, nd, H, W, C, C);
  sf_check_bitwise_f("the bf16 forward entry hands over to winograd-vdpbf16ps", a, b, n);
  sf_conv3d_backward_data_bf16(a, lo, x, NULL, w, nd, H, W, C, C);
  sf_conv3d_backward_data_winograd_bf16(b, lo, x, NULL, w, nd, H, W, C, C);
  sf_check_bitwise_f("the bf16 dX entry hands over to winograd-vdpbf16ps", a, b, n);
  free(x), free(lo), free(w), free(a), free(b);
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
      float sx = mags[m][0], sw = mags[m][1];
      check_shape(2, 4, 6, 16, 32, 1, 1, exact, sx, sw, 10);     /* edge tiles only */
      check_shape(4, 6, 10, 32, 48, 0, 1, exact, sx, sw, 20);    /* front face; 48: a last block of one vector */
      check_shape(2, 8, 4, 48, 32, 1, 0, exact, sx, sw, 30);     /* back face, K != N */
      check_shape(6, 10, 12, 32, 16, 0, 0, exact, sx, sw, 40);   /* 90 tiles: partial last block */
      check_shape(2, 16, 16, 64, 64, 1, 1, exact, sx, sw, 50);   /* a slab of ps5 b64's top level */
      check_shape(2, 16, 16, 128, 128, 1, 0, exact, sx, sw, 60); /* down1 */
      check_shape(2, 8, 8, 256, 256, 0, 1, exact, sx, sw, 70);   /* down2 */
      check_shape(2, 8, 8, 128, 256, 1, 1, exact, sx, sw, 80);   /* K != N, wide */
    }
  }
  check_rule();
  return sf_test_end();
}
