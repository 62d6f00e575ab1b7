/* Sanitizer build only: calls one direct-convolution register block (src/kernels/conv3d/conv3d_direct_tiles.h)
 * of a kernel set with buffers of exactly the size its loops touch, or with one of them a float short,
 * so that test_footprint.sh can check the blocks' footprint checks (src/kernels/common/sanitize_footprint.h):
 * exact sizes must pass without a report, a short buffer must be reported by ASan.
 * The naive reference convolutions (src/kernels/conv3d/conv3d_ref.c) check their whole tensors the same way.
 *   footprint_probe SET CASE   SET: c | avx2 | avx512; CASE: exact | short-x | short-w | short-y (forward
 *   block) | dw-exact | short-dx | short-dy | short-dw (dW block) | ref-exact | ref-short-y | ref-short-dy |
 *   ref-short-dw (the three reference kernels; SET ignored) | wino-exact | wino-short-x | wino-short-y |
 *   wino-short-dy | wino-short-dw (the Winograd forward, dX and dW of src/kernels/conv3d/conv3d_winograd.c under
 *   SET, whose stages check each block's footprint the same way). Exit 0 when the kernels returned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/kernels/conv3d/conv3d_direct_internal.h"
#include "../../src/kernels/conv3d/conv3d_variants.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

/* a buffer of n floats (n - 1 when short), each its own allocation so a redzone follows it */
static float *buf(size_t n, int is_short)
{
  float *p = malloc((n - (is_short ? 1 : 0)) * sizeof(float));
  if (!p) exit(3);
  for (size_t i = 0; i < n - (is_short ? 1 : 0); i++) p[i] = (float)(i % 7) * 0.25f;
  return p;
}

enum { R = 2, K = 3, X0 = 1, W = 4, NROWS = 2, CIN = 3 };

static void forward(const sf_direct_kernels *t, const char *c)
{
  const int vw = t->vw;
  const float *rows[9];
  for (int i = 0; i < 9; i++) rows[i] = buf((size_t)(X0 + R + 2) * K, i == 8 && !strcmp(c, "short-x"));
  float *wb = buf((size_t)27 * K * vw, !strcmp(c, "short-w"));
  float *y = buf((size_t)(R - 1) * 2 * vw + vw, !strcmp(c, "short-y")); /* rows 2*vw apart, NV = 1 */
  t->tile[0][R - 1](y, (size_t)2 * vw, rows, X0, wb, K);
  printf("forward block %dx1 returned, y[0] = %g\n", R, y[0]);
}

static void dweights(const sf_direct_kernels *t, const char *c)
{
  const int vw = t->vw;
  const float *xrows[NROWS];
  for (int i = 0; i < NROWS; i++) xrows[i] = buf((size_t)(W - 1) * CIN + R, i == 1 && !strcmp(c, "short-dx"));
  float *dy = buf((size_t)NROWS * W * vw, !strcmp(c, "short-dy")); /* voxels vw apart */
  float *dw = buf((size_t)(R - 1) * 3 * vw + vw, !strcmp(c, "short-dw"));
  t->dw[0][R - 1](dw, (size_t)3 * vw, xrows, dy, (size_t)vw, NROWS, W, CIN);
  printf("dW block %dx1 returned, dw[0] = %g\n", R, dw[0]);
}

/* forward, dX and dW references on a 2-plane slab with both halo planes */
static void references(const char *c)
{
  enum { ND = 2, H = 2, WW = 3, CI = 2, CO = 3 };
  size_t xs = (size_t)ND * H * WW * CI, ys = (size_t)ND * H * WW * CO, plane_x = H * WW * CI, plane_y = H * WW * CO;
  float *x = buf(xs, 0), *xlo = buf(plane_x, 0), *xhi = buf(plane_x, 0), *w = buf(27 * CI * CO, 0);
  float *y = buf(ys, !strcmp(c, "ref-short-y"));
  sf_conv3d_forward_ref(y, xlo, x, xhi, w, ND, H, WW, CI, CO);
  float *dy = buf(ys, !strcmp(c, "ref-short-dy")), *dylo = buf(plane_y, 0), *dyhi = buf(plane_y, 0);
  float *dx = buf(xs, 0);
  sf_conv3d_backward_data_ref(dx, dylo, dy, dyhi, w, ND, H, WW, CI, CO);
  float *dw = buf(27 * CI * CO, !strcmp(c, "ref-short-dw"));
  sf_conv3d_backward_weights_ref(dw, xlo, x, xhi, dy, ND, H, WW, CI, CO);
  printf("reference kernels returned, y[0] = %g, dx[0] = %g, dw[0] = %g\n", y[0], dx[0], dw[0]);
}

/* Winograd forward, dX and dW on a 2-plane slab of 4x4 voxels, vw channels, halo planes on both sides */
static void winograd(int vw, const char *c)
{
  enum { ND = 2, H = 4, WW = 4 };
  size_t plane = (size_t)H * WW * vw, vol = ND * plane, nw = (size_t)27 * vw * vw;
  float *x = buf(vol, !strcmp(c, "wino-short-x")), *lo = buf(plane, 0), *hi = buf(plane, 0), *w = buf(nw, 0);
  float *y = buf(vol, !strcmp(c, "wino-short-y"));
  sf_conv3d_forward_winograd(y, lo, x, hi, w, ND, H, WW, vw, vw);
  float *dy = buf(vol, !strcmp(c, "wino-short-dy")), *dx = buf(vol, 0);
  sf_conv3d_backward_data_winograd(dx, lo, dy, hi, w, ND, H, WW, vw, vw);
  float *dw = buf(nw, !strcmp(c, "wino-short-dw"));
  sf_conv3d_backward_weights_winograd(dw, lo, x, hi, dy, ND, H, WW, vw, vw);
  printf("Winograd kernels returned, y[0] = %g, dx[0] = %g, dw[0] = %g\n", y[0], dx[0], dw[0]);
}

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: footprint_probe c|avx2|avx512 CASE\n");
    return 2;
  }
  const sf_direct_kernels *t = &sf_direct_kernels_c;
  int want = sf_cpu_isa_parse(argv[1]);
  if (want < 0) return 2;
#if SF_HAVE_X86_DIRECT
  if (want > (int)sf_cpu_isa_supported()) {
    printf("SKIP: this CPU has no %s\n", argv[1]);
    return 77;
  }
  if (want == SF_ISA_AVX2) t = &sf_direct_kernels_avx2;
  if (want == SF_ISA_AVX512) t = &sf_direct_kernels_avx512;
#endif
  if (!strncmp(argv[2], "ref-", 4)) {
    references(argv[2]);
    return 0;
  }
  if (!strncmp(argv[2], "wino-", 5)) {
    sf_cpu_isa_set_for_testing((sf_cpu_isa)want);
    winograd(t->vw, argv[2]);
    return 0;
  }
  if (!strncmp(argv[2], "dw", 2) || !strcmp(argv[2], "short-dx") || !strcmp(argv[2], "short-dy") ||
      !strcmp(argv[2], "short-dw"))
    dweights(t, argv[2]);
  else
    forward(t, argv[2]);
  return 0;
}
