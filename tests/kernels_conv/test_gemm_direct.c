/* The direct (no BLAS) 1x1x1 and k2s2 transposed convolution kernels (conv1_direct.c,
 * upconv3d_direct.c) against the naive _ref oracles, forward, dX and dW/db, with the CPU kernel set
 * that SF_CPU_ISA names: CTest runs this once per set (c, avx2, avx512); a set this CPU lacks is
 * skipped (exit 77). Shapes cover channel counts that are not whole vectors (both the output
 * channels and, for dX, the input channels), tiny Cout (the final conv to n_classes), row counts
 * that split into partial register blocks, and the kernels' voxel blocks. Outputs start as
 * garbage (must be written), gradients as random accumulators (the += contract), and a guard
 * after every output must stay untouched. Max relative error (to the largest reference value) <= 1e-5. */
#include <stdio.h>
#include <string.h>

#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#include "../../src/kernels/conv1/conv1_variants.h"
#include "../../src/kernels/upconv3d/upconv3d_variants.h"
#include "testutil.h"

#define RTOL 1e-5
#define GUARD 32 /* floats after each output that no kernel may write */

/* garbage output of n floats plus the guard */
static float *out_buf(size_t n, uint64_t s) { return ct_rand(n + GUARD, s); }

static void check_guard(const char *name, const float *got, size_t n, uint64_t s)
{
  float *fresh = ct_rand(n + GUARD, s);
  SF_CHECK(!memcmp(got + n, fresh + n, GUARD * sizeof(float)), "%s: wrote past the end of its output (n=%zu)",
           name, n);
  free(fresh);
}

static void compare(const char *tag, const char *dir, const float *got, const float *want, size_t n, uint64_t s)
{
  char nm[192];
  snprintf(nm, sizeof nm, "%s %s", tag, dir);
  sf_check_close_f(nm, got, want, n, RTOL);
  check_guard(nm, got, n, s);
}

static void check_conv1(size_t n, int Ci, int Co, uint64_t s)
{
  char tag[96];
  snprintf(tag, sizeof tag, "direct conv1 n=%zu %d->%d", n, Ci, Co);
  size_t nw = (size_t)Ci * Co;
  float *x = ct_rand(n * Ci, s), *w = ct_rand(nw, s + 1), *b = ct_rand(Co, s + 2), *dy = ct_rand(n * Co, s + 3);
  float *yr = ct_zeros(n * Co), *yd = out_buf(n * Co, 90);
  sf_conv1_forward_ref(yr, x, w, b, n, Ci, Co);
  sf_conv1_forward_direct(yd, x, w, b, n, Ci, Co);
  compare(tag, "forward", yd, yr, n * Co, 90);

  float *dxr = ct_zeros(n * Ci), *dxd = out_buf(n * Ci, 91);
  sf_conv1_backward_data_ref(dxr, dy, w, n, Ci, Co);
  sf_conv1_backward_data_direct(dxd, dy, w, n, Ci, Co);
  compare(tag, "dX", dxd, dxr, n * Ci, 91);

  float *dwr = ct_rand(nw, 92), *dwd = out_buf(nw, 92), *dbr = ct_rand(Co, 93), *dbd = out_buf(Co, 93);
  sf_conv1_backward_weights_ref(dwr, dbr, x, dy, n, Ci, Co);
  sf_conv1_backward_weights_direct(dwd, dbd, x, dy, n, Ci, Co);
  compare(tag, "dW (accumulated)", dwd, dwr, nw, 92);
  compare(tag, "db (accumulated)", dbd, dbr, Co, 93);
  free(x), free(w), free(b), free(dy), free(yr), free(yd), free(dxr), free(dxd);
  free(dwr), free(dwd), free(dbr), free(dbd);
}

static void check_up(int nd, int H, int W, int Ci, int Co, uint64_t s)
{
  char tag[96];
  snprintf(tag, sizeof tag, "direct upconv3d %dx%dx%d %d->%d", nd, H, W, Ci, Co);
  size_t nx = (size_t)nd * H * W * Ci, ny = (size_t)8 * nd * H * W * Co, nw = (size_t)Ci * 8 * Co;
  float *x = ct_rand(nx, s), *w = ct_rand(nw, s + 1), *b = ct_rand(Co, s + 2), *dy = ct_rand(ny, s + 3);
  float *yr = ct_zeros(ny), *yd = out_buf(ny, 94);
  sf_upconv3d_forward_ref(yr, x, w, b, nd, H, W, Ci, Co);
  sf_upconv3d_forward_direct(yd, x, w, b, nd, H, W, Ci, Co);
  compare(tag, "forward", yd, yr, ny, 94);

  float *dxr = ct_zeros(nx), *dxd = out_buf(nx, 95);
  sf_upconv3d_backward_data_ref(dxr, dy, w, nd, H, W, Ci, Co);
  sf_upconv3d_backward_data_direct(dxd, dy, w, nd, H, W, Ci, Co);
  compare(tag, "dX", dxd, dxr, nx, 95);

  float *dwr = ct_rand(nw, 96), *dwd = out_buf(nw, 96), *dbr = ct_rand(Co, 97), *dbd = out_buf(Co, 97);
  sf_upconv3d_backward_weights_ref(dwr, dbr, x, dy, nd, H, W, Ci, Co);
  sf_upconv3d_backward_weights_direct(dwd, dbd, x, dy, nd, H, W, Ci, Co);
  compare(tag, "dW (accumulated)", dwd, dwr, nw, 96);
  compare(tag, "db (accumulated)", dbd, dbr, Co, 97);
  free(x), free(w), free(b), free(dy), free(yr), free(yd), free(dxr), free(dxd);
  free(dwr), free(dwd), free(dbr), free(dbd);
}

int main(void)
{
  const char *want = getenv("SF_CPU_ISA");
  sf_cpu_isa isa = sf_cpu_isa_active();
  if (want && *want && sf_cpu_isa_parse(want) != (int)isa) {
    printf("skip: SF_CPU_ISA=%s asked, but this CPU runs %s (supports up to %s)\n", want, sf_cpu_isa_name(isa),
           sf_cpu_isa_name(sf_cpu_isa_supported()));
    return 77;
  }
  printf("CPU kernel set: %s\n", sf_cpu_isa_name(isa));

  check_conv1(1, 2, 3, 100);
  check_conv1(37, 64, 6, 110);    /* the final conv: base 64 -> n_classes 6 */
  check_conv1(1029, 8, 6, 120);   /* base 8; crosses the forward/dX voxel block of 1024 */
  check_conv1(13, 5, 1, 130);     /* a single output channel */
  check_conv1(300, 16, 2, 140);   /* dW over two voxel blocks of 256 */
  check_conv1(257, 19, 33, 150);  /* tails on both channel counts; 33 = 2 vectors + 1 */
  check_conv1(50, 40, 48, 160);   /* several column blocks, none partial with AVX2/C */
  check_conv1(20, 300, 5, 170);   /* forward K = 300: two passes over K (256 + 44) */

  check_up(1, 1, 1, 3, 2, 200);
  check_up(2, 3, 5, 7, 4, 210);
  check_up(3, 4, 5, 32, 16, 220);
  check_up(2, 3, 13, 24, 12, 230); /* 2*Cout = 24: partial last vector with AVX-512 */
  check_up(1, 2, 70, 16, 8, 240);  /* rows of 70 voxels: several register blocks per row */
  check_up(8, 12, 11, 8, 4, 250);  /* 96 input rows: dW over several blocks of rows */
  check_up(2, 2, 2, 64, 32, 260);  /* the deepest level shape, scaled down */
  check_up(1, 3, 3, 5, 3, 270);    /* odd channels everywhere: 2*Cout = 6 */
  check_up(1, 2, 3, 16, 40, 280);  /* dX K = 8*Cout = 320: two passes over K (256 + 64) */
  return sf_test_end();
}
