/* Fast (_blas) convolution kernels against the naive _ref oracles on random inputs: every op
 * (3x3x3 conv, 1x1x1 conv, transposed conv) and direction (forward, dX, dW/db), odd sizes, slabs
 * with and without halo planes, and sizes that cross the kernels' chunk boundaries. Max relative
 * error (to the largest reference value) <= 1e-5. The shapes cover every dX formulation (gather
 * with a rearranged weight copy; gather with one GEMM per tap for >= 256 output channels; scatter
 * for few input and many output channels) and both dW GEMM orientations. Weight/bias gradients
 * start from a random non-zero accumulator, so the += contract is checked too. Also checks that
 * the workspace stays bounded on a volume whose unchunked im2col would be far larger. The direct
 * kernels, which _blas dispatches to where they win, are checked on their own too, for every kernel
 * set the CPU supports (portable C, AVX2, AVX-512); CTest runs the test a second time with
 * SF_CONV_DIRECT=0 so the im2col path keeps its coverage. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#include "../../src/kernels/conv3d/conv3d_variants.h"
#include "scaffold/workspace.h"
#include "testutil.h"

#define RTOL 1e-5

/* lo/hi: whether the slab has a neighbour plane on that side (else it touches a volume face) */
static void check_conv3(int nd, int H, int W, int Ci, int Co, int lo, int hi, uint64_t s)
{
  char tag[96], nm[160];
  snprintf(tag, sizeof tag, "conv3d %dx%dx%d %d->%d halo %s/%s", nd, H, W, Ci, Co, lo ? "lo" : "-", hi ? "hi" : "-");
  size_t pl_x = (size_t)H * W * Ci, pl_y = (size_t)H * W * Co, nw = (size_t)27 * Ci * Co;
  float *x = ct_rand(nd * pl_x, s), *xlo = lo ? ct_rand(pl_x, s + 1) : NULL, *xhi = hi ? ct_rand(pl_x, s + 2) : NULL;
  float *dy = ct_rand(nd * pl_y, s + 3), *dylo = lo ? ct_rand(pl_y, s + 4) : NULL;
  float *dyhi = hi ? ct_rand(pl_y, s + 5) : NULL, *w = ct_rand(nw, s + 6), *dw0 = ct_rand(nw, s + 7);
  float *yr = ct_zeros(nd * pl_y), *yb = ct_rand(nd * pl_y, 99); /* garbage: the output must be written */

  sf_conv3d_forward_ref(yr, xlo, x, xhi, w, nd, H, W, Ci, Co);
  sf_conv3d_forward(yb, xlo, x, xhi, w, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s forward", tag);
  sf_check_close_f(nm, yb, yr, nd * pl_y, RTOL);

  float *dxr = ct_zeros(nd * pl_x), *dxb = ct_rand(nd * pl_x, 98);
  sf_conv3d_backward_data_ref(dxr, dylo, dy, dyhi, w, nd, H, W, Ci, Co);
  sf_conv3d_backward_data(dxb, dylo, dy, dyhi, w, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s dX", tag);
  sf_check_close_f(nm, dxb, dxr, nd * pl_x, RTOL);

  float *dwr = ct_copy(dw0, nw), *dwb = ct_copy(dw0, nw);
  sf_conv3d_backward_weights_ref(dwr, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  sf_conv3d_backward_weights(dwb, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s dW (accumulated)", tag);
  sf_check_close_f(nm, dwb, dwr, nw, RTOL);
  if (Co >= 17) { /* the same gradient as two tap blocks (two workers sharing a layer) */
    const int cuts[2] = {14, 1};
    for (int c = 0; c < 2; c++) {
      int t = cuts[c];
      float *dws = ct_copy(dw0, nw);
      sf_conv3d_backward_weights_taps(dws, 0, t, xlo, x, xhi, dy, nd, H, W, Ci, Co);
      sf_conv3d_backward_weights_taps(dws + (size_t)t * Ci * Co, t, 27, xlo, x, xhi, dy, nd, H, W, Ci, Co);
      snprintf(nm, sizeof nm, "%s dW taps [0,%d) + [%d,27)", tag, t, t);
      sf_check_close_f(nm, dws, dwr, nw, RTOL);
      free(dws);
    }
  }
  free(x), free(xlo), free(xhi), free(dy), free(dylo), free(dyhi), free(w), free(dw0);
  free(yr), free(yb), free(dxr), free(dxb), free(dwr), free(dwb);
}

static void check_conv1(size_t n, int Ci, int Co, uint64_t s)
{
  char tag[96], nm[160];
  snprintf(tag, sizeof tag, "conv1 n=%zu %d->%d", n, Ci, Co);
  float *x = ct_rand(n * Ci, s), *w = ct_rand((size_t)Ci * Co, s + 1), *b = ct_rand(Co, s + 2);
  float *dy = ct_rand(n * Co, s + 3), *dw0 = ct_rand((size_t)Ci * Co, s + 4), *db0 = ct_rand(Co, s + 5);
  float *yr = ct_zeros(n * Co), *yb = ct_rand(n * Co, 99);
  sf_conv1_forward_ref(yr, x, w, b, n, Ci, Co);
  sf_conv1_forward(yb, x, w, b, n, Ci, Co);
  snprintf(nm, sizeof nm, "%s forward", tag);
  sf_check_close_f(nm, yb, yr, n * Co, RTOL);

  float *dxr = ct_zeros(n * Ci), *dxb = ct_rand(n * Ci, 98);
  sf_conv1_backward_data_ref(dxr, dy, w, n, Ci, Co);
  sf_conv1_backward_data(dxb, dy, w, n, Ci, Co);
  snprintf(nm, sizeof nm, "%s dX", tag);
  sf_check_close_f(nm, dxb, dxr, n * Ci, RTOL);

  float *dwr = ct_copy(dw0, (size_t)Ci * Co), *dwb = ct_copy(dw0, (size_t)Ci * Co);
  float *dbr = ct_copy(db0, Co), *dbb = ct_copy(db0, Co);
  sf_conv1_backward_weights_ref(dwr, dbr, x, dy, n, Ci, Co);
  sf_conv1_backward_weights(dwb, dbb, x, dy, n, Ci, Co);
  snprintf(nm, sizeof nm, "%s dW (accumulated)", tag);
  sf_check_close_f(nm, dwb, dwr, (size_t)Ci * Co, RTOL);
  snprintf(nm, sizeof nm, "%s db (accumulated)", tag);
  sf_check_close_f(nm, dbb, dbr, Co, RTOL);

  free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(yr), free(yb);
  free(dxr), free(dxb), free(dwr), free(dwb), free(dbr), free(dbb);
}

static void check_up(int nd, int H, int W, int Ci, int Co, uint64_t s)
{
  char tag[96], nm[160];
  snprintf(tag, sizeof tag, "upconv3d %dx%dx%d %d->%d", nd, H, W, Ci, Co);
  size_t nx = (size_t)nd * H * W * Ci, ny = (size_t)8 * nd * H * W * Co, nw = (size_t)Ci * 8 * Co;
  float *x = ct_rand(nx, s), *w = ct_rand(nw, s + 1), *b = ct_rand(Co, s + 2), *dy = ct_rand(ny, s + 3);
  float *dw0 = ct_rand(nw, s + 4), *db0 = ct_rand(Co, s + 5);
  float *yr = ct_zeros(ny), *yb = ct_rand(ny, 99);
  sf_upconv3d_forward_ref(yr, x, w, b, nd, H, W, Ci, Co);
  sf_upconv3d_forward(yb, x, w, b, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s forward", tag);
  sf_check_close_f(nm, yb, yr, ny, RTOL);

  float *dxr = ct_zeros(nx), *dxb = ct_rand(nx, 98);
  sf_upconv3d_backward_data_ref(dxr, dy, w, nd, H, W, Ci, Co);
  sf_upconv3d_backward_data(dxb, dy, w, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s dX", tag);
  sf_check_close_f(nm, dxb, dxr, nx, RTOL);

  float *dwr = ct_copy(dw0, nw), *dwb = ct_copy(dw0, nw), *dbr = ct_copy(db0, Co), *dbb = ct_copy(db0, Co);
  sf_upconv3d_backward_weights_ref(dwr, dbr, x, dy, nd, H, W, Ci, Co);
  sf_upconv3d_backward_weights(dwb, dbb, x, dy, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s dW (accumulated)", tag);
  sf_check_close_f(nm, dwb, dwr, nw, RTOL);
  snprintf(nm, sizeof nm, "%s db (accumulated)", tag);
  sf_check_close_f(nm, dbb, dbr, Co, RTOL);

  free(x), free(w), free(b), free(dy), free(dw0), free(db0), free(yr), free(yb);
  free(dxr), free(dxb), free(dwr), free(dwb), free(dbr), free(dbb);
}

/* The direct kernels of the active kernel set called explicitly (whatever the dispatch thresholds),
 * forward, dX and dW (whole and as two tap blocks): row lengths that split into uneven register
 * blocks, channel counts that fill one or two vectors or leave a partial last block, few input
 * channels, and every halo combination. */
static void check_direct(int nd, int H, int W, int Ci, int Co, int lo, int hi, uint64_t s)
{
  char tag[128], nm[192];
  snprintf(tag, sizeof tag, "direct[%s] conv3d %dx%dx%d %d->%d halo %s/%s", sf_cpu_isa_name(sf_cpu_isa_active()),
           nd, H, W, Ci, Co, lo ? "lo" : "-", hi ? "hi" : "-");
  size_t pl_x = (size_t)H * W * Ci, pl_y = (size_t)H * W * Co, nw = (size_t)27 * Ci * Co;
  float *x = ct_rand(nd * pl_x, s), *xlo = lo ? ct_rand(pl_x, s + 1) : NULL, *xhi = hi ? ct_rand(pl_x, s + 2) : NULL;
  float *dy = ct_rand(nd * pl_y, s + 3), *dylo = lo ? ct_rand(pl_y, s + 4) : NULL;
  float *dyhi = hi ? ct_rand(pl_y, s + 5) : NULL, *w = ct_rand(nw, s + 6), *dw0 = ct_rand(nw, s + 7);
  float *dwr = ct_copy(dw0, nw), *dwd = ct_copy(dw0, nw), *dws = ct_copy(dw0, nw);
  sf_conv3d_backward_weights_ref(dwr, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  sf_conv3d_backward_weights_direct(dwd, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s dW (accumulated)", tag);
  sf_check_close_f(nm, dwd, dwr, nw, RTOL);
  sf_conv3d_backward_weights_taps_direct(dws, 0, 14, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  sf_conv3d_backward_weights_taps_direct(dws + (size_t)14 * Ci * Co, 14, 27, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  snprintf(nm, sizeof nm, "%s dW taps [0,14) + [14,27)", tag);
  sf_check_close_f(nm, dws, dwr, nw, RTOL);
  free(dwr), free(dwd), free(dws);
  typedef void (*conv_fn)(float *, const float *, const float *, const float *, const float *, int, int, int, int,
                          int);
  const struct {
    const char *dir;
    conv_fn ref, direct;
    const float *lo, *in, *hi;
    size_t nout;
  } dirs[2] = {
      {"forward", sf_conv3d_forward_ref, sf_conv3d_forward_direct, xlo, x, xhi, nd * pl_y},
      {"dX", sf_conv3d_backward_data_ref, sf_conv3d_backward_data_direct, dylo, dy, dyhi, nd * pl_x},
  };
  for (int i = 0; i < 2; i++) {
    float *ref = ct_zeros(dirs[i].nout), *out = ct_rand(dirs[i].nout, 99); /* garbage: must be written */
    dirs[i].ref(ref, dirs[i].lo, dirs[i].in, dirs[i].hi, w, nd, H, W, Ci, Co);
    dirs[i].direct(out, dirs[i].lo, dirs[i].in, dirs[i].hi, w, nd, H, W, Ci, Co);
    snprintf(nm, sizeof nm, "%s %s", tag, dirs[i].dir);
    sf_check_close_f(nm, out, ref, dirs[i].nout, RTOL);
    free(ref), free(out);
  }
  free(x), free(xlo), free(xhi), free(dy), free(dylo), free(dyhi), free(w), free(dw0);
}

/* Every kernel set this CPU supports (C, AVX2, AVX-512), each made the active one in turn; the
 * set the environment chose is restored afterwards. */
static void check_direct_all(void)
{
  sf_cpu_isa chosen = sf_cpu_isa_active(), best = sf_cpu_isa_supported();
  if (chosen == SF_ISA_NONE) {
    printf("skip direct conv3d kernels: SF_CONV_DIRECT=0 (this run checks the im2col path)\n");
    return;
  }
  for (int isa = SF_ISA_C; isa <= (int)best; isa++) {
    sf_cpu_isa_set_for_testing((sf_cpu_isa)isa);
    check_direct(3, 5, 7, 16, 32, 1, 1, 300);   /* 7 voxels per row: one AVX-512 block, 4 + 3 with AVX2 */
    check_direct(2, 4, 13, 5, 48, 0, 1, 310);   /* 13 = 7 + 6 (3 x 5 - 2); channels 32 + 16, 16 + 16 + 16 */
    check_direct(4, 3, 25, 32, 16, 1, 0, 320);  /* 25 = 9 + 8 + 8 (5 + 5 + 5 + 5 + 5) */
    check_direct(1, 1, 1, 16, 16, 0, 0, 330);   /* a single voxel */
    check_direct(2, 2, 12, 48, 80, 1, 1, 340);  /* exactly full blocks; 80 = 32 + 32 + 16 */
    check_direct(5, 6, 24, 3, 32, 0, 0, 350);   /* few input channels (the network's first conv) */
    check_direct(3, 4, 11, 1, 8, 1, 1, 355);    /* one input channel, 8 output channels; odd W */
    check_direct(3, 5, 9, 8, 8, 0, 1, 365);     /* 8 -> 8 (base-8 U-Net): one ymm, half a zmm */
    check_direct(2, 3, 10, 24, 8, 1, 0, 375);   /* 24 = 16 + 8; dX: 8 -> 24 */
    check_direct(2, 3, 6, 5, 20, 1, 1, 385);    /* 20 = 16 + a partial 4 (only the C set is used so) */
    check_direct(2, 70, 4, 16, 16, 1, 1, 360);  /* dW: 70 rows = row groups of 64 + 6 */
    check_direct(3, 4, 20, 25, 32, 0, 1, 370);  /* dW: 25 input channels = blocks of 9 + 8 + 8 (5 x 5) */
    /* 8-float sets, short rows, many channels: the slab-blocked forward/dX (conv3d_direct_blocked.c) in
     * tap chunks of 4 (k)h rows at 160-168 channels and of 1 at 600; dW groups spanning planes */
    check_direct(3, 4, 5, 160, 168, 1, 0, 390); /* forward K 160, dX K 168; 168 = 10 x 16 + 8 */
    check_direct(2, 3, 8, 600, 16, 0, 1, 395);  /* forward: chunks of one (kd, kh) row */
    check_direct(2, 2, 2, 16, 600, 1, 1, 396);  /* dX: the same, both halos */
    check_direct(10, 10, 6, 8, 16, 1, 1, 398);  /* dW: 100 rows in plane-spanning groups of 85 + 15 */
    /* the packed dW (conv3d_direct_dw_packed.c): >= 64 input channels on short rows, >= 256 on any */
    check_direct(9, 8, 8, 64, 24, 1, 1, 402);   /* 576 voxels: groups of 512 + 64; 24 = 16 + 8 */
    check_direct(2, 16, 17, 256, 16, 0, 0, 404); /* 17-voxel rows, 256 input channels */
  }
  sf_cpu_isa_set_for_testing(chosen);
}

/* A 32x32x32 slab with 16 channels: unchunked im2col would need 32768*432*4 B = 54 MiB. */
static void check_workspace_bound(void)
{
  int nd = 32, H = 32, W = 32, Ci = 16, Co = 16;
  size_t nx = (size_t)nd * H * W * Ci, ny = (size_t)nd * H * W * Co;
  float *x = ct_rand(nx, 500), *w = ct_rand((size_t)27 * Ci * Co, 501), *y = ct_zeros(ny), *dx = ct_zeros(nx);
  float *dw = ct_zeros((size_t)27 * Ci * Co);
  sf_workspace_release();
  sf_conv3d_forward(y, NULL, x, NULL, w, nd, H, W, Ci, Co);
  sf_conv3d_backward_data(dx, NULL, y, NULL, w, nd, H, W, Ci, Co);
  sf_conv3d_backward_weights(dw, NULL, x, NULL, y, nd, H, W, Ci, Co);
  size_t bytes = sf_workspace_bytes(), limit = (size_t)16 << 20;
  SF_CHECK(bytes <= limit, "conv3d workspace after a 32^3x16 slab: %zu bytes > limit %zu", bytes, limit);
  printf("ok   conv3d workspace on a 32^3x16 slab: %.2f MiB (unchunked im2col would be 54 MiB)\n",
         bytes / 1048576.0);
  sf_workspace_release();
  free(x), free(w), free(y), free(dx), free(dw);
}

int main(void)
{
  openblas_set_num_threads(1);
  check_conv3(5, 6, 7, 3, 5, 0, 0, 10);
  check_conv3(9, 3, 4, 4, 6, 0, 0, 20);
  check_conv3(1, 1, 1, 2, 3, 0, 0, 30);
  check_conv3(1, 1, 1, 2, 3, 1, 1, 35);
  check_conv3(1, 4, 1, 3, 2, 1, 0, 40);
  check_conv3(4, 5, 3, 16, 8, 1, 1, 50);  /* interior slab */
  check_conv3(3, 6, 5, 5, 7, 1, 0, 60);   /* last slab */
  check_conv3(2, 6, 5, 7, 5, 0, 1, 70);   /* first slab */
  check_conv3(9, 10, 11, 16, 12, 1, 1, 80); /* 990 voxels: two chunks, boundary inside a row */
  check_conv3(3, 9, 11, 160, 8, 0, 1, 90);  /* 27*160 columns, two chunks */
  check_conv3(3, 5, 7, 8, 160, 1, 0, 95);   /* dX sees 27*160 columns */
  check_conv3(9, 10, 11, 16, 24, 1, 1, 85); /* dW untransposed over two chunks; dX gathers */
  check_conv3(4, 5, 6, 3, 40, 1, 1, 96);    /* few in, many out channels: dX scatters (halos) */
  check_conv3(7, 4, 5, 8, 32, 0, 0, 97);    /* dX scatters over two chunks */
  check_conv3(2, 3, 5, 16, 256, 1, 1, 98);  /* many output channels: dX GEMM per tap */

  check_conv1(1, 2, 3, 100);
  check_conv1(37, 64, 6, 110);
  check_conv1(8192 + 5, 3, 5, 120); /* crosses the GEMM row block */

  check_up(1, 1, 1, 3, 2, 200);
  check_up(2, 3, 5, 7, 4, 210);
  check_up(3, 4, 5, 32, 16, 220);
  check_up(8, 12, 11, 8, 4, 230); /* 1056 voxels: two chunks */

  check_conv3(3, 7, 12, 32, 48, 1, 1, 99);  /* forward and dX dispatched to the direct kernels */
  check_conv3(2, 5, 17, 16, 32, 0, 1, 93);  /* all three directions dispatched to the direct kernels */
  check_conv3(2, 4, 4, 256, 256, 1, 1, 95); /* short rows, many channels: blocked / packed on AVX2 */

  check_direct_all();
  check_workspace_bound();
  return sf_test_end();
}
