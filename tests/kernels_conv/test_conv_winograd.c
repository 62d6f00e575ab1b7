/* The Winograd F(2x2x2, 3x3x3) forward, dX and dW kernels (src/kernels/conv3d/conv3d_winograd.c) against the
 * naive _ref oracles, for every CPU kernel set this CPU supports (portable C, AVX2, AVX-512; a set
 * it lacks is reported as skipped): slabs with and without halo planes, non-square planes, input and
 * output channel counts that differ, an output channel count that leaves a last column block of one
 * vector, tile counts that leave a partial block, and edge tiles on every face. Max error relative
 * to the largest reference value <= 2e-6 (measured: <= 4e-7; a wrong transform coefficient or a
 * dropped tile is off by far more). Also checks the dispatch rule: _fits refuses odd planes and
 * channel counts that do not fill the vectors, _wins follows SF_CONV_WINOGRAD and the tile count,
 * and the _blas entry points give the Winograd result where _wins (_dw_wins). */
#include <stdio.h>

#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#include "../../src/kernels/conv3d/conv3d_variants.h"
#include "testutil.h"

#define RTOL 2e-6

static void check_shape(const char *set, int nd, int H, int W, int Ci, int Co, int lo, int hi, uint64_t s)
{
  char nm[160];
  size_t px = (size_t)H * W * Ci, py = (size_t)H * W * Co;
  float *x = ct_rand(nd * px, s), *xlo = lo ? ct_rand(px, s + 1) : NULL, *xhi = hi ? ct_rand(px, s + 2) : NULL;
  float *dy = ct_rand(nd * py, s + 3), *dylo = lo ? ct_rand(py, s + 4) : NULL, *dyhi = hi ? ct_rand(py, s + 5) : NULL;
  float *w = ct_rand((size_t)27 * Ci * Co, s + 6);
  float *yr = ct_zeros(nd * py), *yw = ct_rand(nd * py, 99), *dxr = ct_zeros(nd * px), *dxw = ct_rand(nd * px, 98);

  sf_conv3d_forward_ref(yr, xlo, x, xhi, w, nd, H, W, Ci, Co);
  sf_conv3d_forward_winograd(yw, xlo, x, xhi, w, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s winograd forward %dx%dx%d %d->%d halo %d/%d", set, nd, H, W, Ci, Co, lo, hi);
  sf_check_close_f(nm, yw, yr, nd * py, RTOL);

  float *dwr = ct_copy(w, (size_t)27 * Ci * Co), *dww = ct_copy(w, (size_t)27 * Ci * Co); /* dW accumulates */
  sf_conv3d_backward_weights_ref(dwr, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  sf_conv3d_backward_weights_winograd(dww, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s winograd dW (accumulated) %dx%dx%d %d->%d halo %d/%d", set, nd, H, W, Ci, Co, lo, hi);
  sf_check_close_f(nm, dww, dwr, (size_t)27 * Ci * Co, RTOL);
  free(dwr), free(dww);

  sf_conv3d_backward_data_ref(dxr, dylo, dy, dyhi, w, nd, H, W, Ci, Co);
  sf_conv3d_backward_data_winograd(dxw, dylo, dy, dyhi, w, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s winograd dX %dx%dx%d %d->%d halo %d/%d", set, nd, H, W, Ci, Co, lo, hi);
  sf_check_close_f(nm, dxw, dxr, nd * px, RTOL);

  free(x), free(xlo), free(xhi), free(dy), free(dylo), free(dyhi), free(w), free(yr), free(yw), free(dxr), free(dxw);
}

static void check_set(sf_cpu_isa isa)
{
  const char *set = sf_cpu_isa_name(isa);
  int vw = isa == SF_ISA_AVX512 ? 16 : 8;
  check_shape(set, 2, 4, 6, vw, 2 * vw, 1, 1, 10);        /* edge tiles only */
  check_shape(set, 4, 6, 10, 2 * vw, vw, 0, 1, 20);       /* front face, last column block of one vector */
  check_shape(set, 2, 8, 4, 3 * vw, 2 * vw, 1, 0, 30);    /* back face, K != N */
  check_shape(set, 6, 10, 12, 2 * vw, 3 * vw, 0, 0, 40);  /* 90 tiles: partial last block, N = 3 vectors */
  check_shape(set, 2, 16, 16, 4 * vw, 4 * vw, 1, 1, 50);  /* a slab of a layer the rule picks */
}

static void check_rule(void)
{
  sf_conv_winograd_set_for_testing(1);
  int vw = sf_cpu_isa_active() == SF_ISA_AVX512 ? 16 : 8;
  SF_CHECK(sf_conv3d_winograd_fits(4, 8, 8, vw, vw), "fits 4x8x8 %d->%d", vw, vw);
  SF_CHECK(!sf_conv3d_winograd_fits(3, 8, 8, vw, vw), "odd slab depth must not fit");
  SF_CHECK(!sf_conv3d_winograd_fits(4, 7, 8, vw, vw) && !sf_conv3d_winograd_fits(4, 8, 9, vw, vw),
           "odd planes must not fit");
  SF_CHECK(!sf_conv3d_winograd_fits(4, 8, 8, 3, vw) && !sf_conv3d_winograd_fits(4, 8, 8, vw, vw + 4),
           "channel counts that do not fill the vectors must not fit");
  SF_CHECK(!sf_conv3d_winograd_fits(4, 8, 8, 512, 512), "512 x 512 (a 64 MiB transform) must not fit");
  if (sf_cpu_isa_active() < SF_ISA_AVX2) return;
  SF_CHECK((sf_conv3d_choose(SF_CONV3D_FORWARD, 0, 4, 32, 32, 64, 64) == SF_CONV3D_WINOGRAD), "4x32x32 64->64 should win on %s",
           sf_cpu_isa_name(sf_cpu_isa_active()));
  SF_CHECK(!(sf_conv3d_choose(SF_CONV3D_FORWARD, 0, 2, 4, 4, 64, 64) == SF_CONV3D_WINOGRAD), "a slab of 8 tiles should not win");
  sf_conv_winograd_set_for_testing(0);
  SF_CHECK(!(sf_conv3d_choose(SF_CONV3D_FORWARD, 0, 4, 32, 32, 64, 64) == SF_CONV3D_WINOGRAD), "SF_CONV_WINOGRAD off, yet it wins");
  sf_conv_winograd_set_for_testing(1);

  /* the entries hand over to it where it wins: bitwise the same result */
  int nd = 2, H = 16, W = 16, C = 32;
  size_t n = (size_t)nd * H * W * C;
  float *x = ct_rand(n, 70), *lo = ct_rand(n / nd, 71), *w = ct_rand((size_t)27 * C * C, 72);
  float *a = ct_zeros(n), *b = ct_zeros(n);
  SF_CHECK((sf_conv3d_choose(SF_CONV3D_FORWARD, 0, nd, H, W, C, C) == SF_CONV3D_WINOGRAD), "2x16x16 32->32 should win");
  sf_conv3d_forward(a, lo, x, NULL, w, nd, H, W, C, C);
  sf_conv3d_forward_winograd(b, lo, x, NULL, w, nd, H, W, C, C);
  sf_check_bitwise_f("the forward entry hands over to winograd", a, b, n);
  sf_conv3d_backward_data(a, lo, x, NULL, w, nd, H, W, C, C);
  sf_conv3d_backward_data_winograd(b, lo, x, NULL, w, nd, H, W, C, C);
  sf_check_bitwise_f("the dX entry hands over to winograd", a, b, n);
  size_t nw = (size_t)27 * C * C;
  float *ga = ct_copy(w, nw), *gb = ct_copy(w, nw);
  SF_CHECK((sf_conv3d_choose(SF_CONV3D_BACKWARD_WEIGHTS, 0, nd, H, W, C, C) == SF_CONV3D_WINOGRAD), "dW 2x16x16 32->32 should win");
  sf_conv3d_backward_weights(ga, lo, x, NULL, x, nd, H, W, C, C);
  sf_conv3d_backward_weights_winograd(gb, lo, x, NULL, x, nd, H, W, C, C);
  sf_check_bitwise_f("the dW entry hands over to winograd", ga, gb, nw);
  free(ga), free(gb);
  free(x), free(lo), free(w), free(a), free(b);
}

int main(void)
{
  const sf_cpu_isa sets[] = {SF_ISA_C, SF_ISA_AVX2, SF_ISA_AVX512};
  sf_cpu_isa best = sf_cpu_isa_supported();
  for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
    if (sets[i] > best) {
      printf("SKIPPED: kernel set %s: this CPU does not have it\n", sf_cpu_isa_name(sets[i]));
      continue;
    }
    sf_cpu_isa_set_for_testing(sets[i]);
    check_set(sets[i]);
  }
  sf_cpu_isa_set_for_testing(best);
  check_rule();
  return sf_test_end();
}
