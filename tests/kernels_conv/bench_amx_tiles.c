/* AMX tile benchmark (not a test): what the tile unit of this core gives, next to what the AMX bf16 3x3x3
 * convolutions (src/kernels/conv3d/conv3d_amx*.c) reach, measured in one run so the host's swings hit all alike.
 * Loops of TDPBF16PS on full tiles (16 x 32 bf16 by 32 x 16 into 16 x 16 fp32), GFLOP/s counted as
 * 2*16*16*32 per product:
 *   - products alone: 4 independent C tiles, nothing loaded (the unit's product rate);
 *   - 2x2 block, L1 / L2: each product with one tile load, as the conv kernels' blocks do (2 A + 2 B tiles
 *     of 1 KiB per 4 products), from an 8 KiB buffer (L1) or streaming through 1 MiB (L2);
 *   - 2 loads / 4 products: the B tiles kept, the A tiles loaded (half the loads of a 2x2 block);
 *   - loads alone (L1): the 4 tile loads of a 2x2 block without products, as GFLOP/s the products would
 *     have made.
 * Then the bf16 convolution's forward, dX and dW (sf_conv3d_*_bf16, the AMX engine) at U-Net layer shapes.
 * Each figure is the median over --reps repetitions in thread CPU time; within a repetition every loop
 * and kernel runs once, in turn. Usage: bench_amx_tiles [--reps N] [--quick] (--quick: fewer shapes,
 * shorter loops; the CTest smoke run). Prints a table and one line "SFBENCH {json}". Exit 77 (skipped,
 * with the reason) where the CPU or OS offers no AMX. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"

#include "amx_internal.h" /* the tile configuration the kernels use (src/kernels/common) */

#define MAX_REPS 64
#define PRODUCT_FLOP (2.0 * 16 * 16 * 32)

enum loop { PRODUCTS, BLOCK_L1, BLOCK_L2, HALF_LOADS, LOADS, NLOOPS };
static const char *const loop_names[NLOOPS] = {"products alone", "2x2 block, loads from L1", "2x2 block, loads from L2",
                                               "2 loads / 4 products (L1)", "loads alone (L1)"};
static const char *const loop_keys[NLOOPS] = {"products", "block_l1", "block_l2", "half_loads", "loads"};

/* iters iterations of 4 products (PRODUCTS, BLOCK_*, HALF_LOADS) or 4 loads (LOADS); loads walk buf in
 * steps of 4 KiB, wrapping at span */
SF_AMX_TARGET static void tile_loop(enum loop l, char *buf, size_t span, long iters)
{
  sf_amx_start_full_tiles();
  _tile_loadd(4, buf, 64);
  _tile_loadd(5, buf, 64);
  _tile_loadd(6, buf, 64);
  _tile_loadd(7, buf, 64);
  size_t off = 0;
  for (long i = 0; i < iters; i++) {
    const char *p = buf + off;
    if (l != PRODUCTS) {
      _tile_loadd(4, p, 64);
      if (l != HALF_LOADS) _tile_loadd(6, p + 1024, 64);
    }
    if (l != LOADS) _tile_dpbf16ps(0, 4, 6);
    if (l != PRODUCTS) _tile_loadd(5, p + 2048, 64);
    if (l != LOADS) _tile_dpbf16ps(2, 5, 6);
    if (l != PRODUCTS && l != HALF_LOADS) _tile_loadd(7, p + 3072, 64);
    if (l != LOADS) {
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
    off = off + 8192 > span ? 0 : off + 4096;
  }
  _tile_stored(0, buf, 64); /* the sums are used: nothing is optimised away */
  _tile_release();
}

typedef struct {
  const char *name;
  int nd, H, W, Ci, Co;
} shape;

static const shape shapes[] = {
    {"ps5 b16 inc.conv2 32^3", 16, 32, 32, 16, 16}, {"ps5 b16 up2.conv1 32^3", 16, 32, 32, 32, 16},
    {"ps5 b64 inc.conv2 32^3", 4, 32, 32, 64, 64},  {"ps5 b64 down1 16^3", 8, 16, 16, 128, 128},
    {"ps5 b64 down2 8^3", 8, 8, 8, 256, 256},
};

static float *rnd(size_t n, uint64_t stream)
{
  float *p = sf_aligned_alloc(sizeof(float) * n, "bench tensor");
  sf_rng r;
  sf_rng_seed(&r, 11, stream);
  sf_rng_fill_uniform(p, n, -1.0f, 1.0f, &r);
  return p;
}

/* The seconds of one forward, dX and dW (all 27 taps) of shape s, into t[0..2] */
static void time_conv(const shape *s, float *const *bufs, double t[3])
{
  const float *x = bufs[0], *lo = bufs[1], *hi = bufs[2], *w = bufs[3];
  float *y = bufs[4], *dx = bufs[5], *dw = bufs[6];
  double t0 = bench_thread_seconds();
  sf_conv3d_forward_bf16(y, lo, x, hi, w, s->nd, s->H, s->W, s->Ci, s->Co);
  double t1 = bench_thread_seconds();
  sf_conv3d_backward_data_bf16(dx, lo, y, hi, w, s->nd, s->H, s->W, s->Ci, s->Co);
  double t2 = bench_thread_seconds();
  sf_conv3d_backward_weights_taps_bf16(dw, 0, 27, lo, x, hi, y, s->nd, s->H, s->W, s->Ci, s->Co);
  t[0] = t1 - t0, t[1] = t2 - t1, t[2] = bench_thread_seconds() - t2;
}

/* Every figure positive and finite (the smoke test's check); else a message and 1 */
static int figures_sane(const double *fig, int n)
{
  for (int i = 0; i < n; i++)
    if (!(fig[i] > 0 && fig[i] < 1e7)) {
      fprintf(stderr, "bench_amx_tiles: figure %d of the SFBENCH line is implausible: %g GFLOP/s\n", i + 1, fig[i]);
      return 1;
    }
  return 0;
}

int main(int argc, char **argv)
{
  int reps = 7, quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else sf_die(SF_EXIT_USAGE, "bench_amx_tiles: unknown argument '%s' (expected --reps N, --quick)", argv[i]);
  }
  if (reps < 1 || reps > MAX_REPS) sf_die(SF_EXIT_USAGE, "bench_amx_tiles: --reps expects 1..%d", MAX_REPS);
  if (!sf_amx_supported()) {
    printf("skip: this CPU (or its OS) offers no AMX-BF16 tiles\n");
    return 77;
  }
  if (sf_bf16_engine_set_for_testing(SF_BF16_AMX) != SF_BF16_AMX) sf_die(SF_EXIT_FAILURE, "AMX engine unavailable");
  const long iters = quick ? 20000 : 500000;
  const size_t l2_span = (size_t)1 << 20;
  uint16_t *tiles = sf_aligned_alloc(l2_span, "tile buffer");
  for (size_t i = 0; i < l2_span / 2; i++) tiles[i] = (uint16_t)(0x3f00 | (i & 0x7f)); /* bf16 in [0.5, 1) */
  char *buf = (char *)tiles;
  const int nshapes = quick ? 2 : (int)(sizeof shapes / sizeof *shapes);
  float *bufs[sizeof shapes / sizeof *shapes][7];
  for (int s = 0; s < nshapes; s++) {
    const shape *sh = &shapes[s];
    size_t pl = (size_t)sh->H * sh->W, c = (size_t)(sh->Ci > sh->Co ? sh->Ci : sh->Co);
    const size_t n[7] = {sh->nd * pl * c, pl * c, pl * c, 27 * c * c, sh->nd * pl * c, sh->nd * pl * c, 27 * c * c};
    for (int b = 0; b < 7; b++) bufs[s][b] = rnd(n[b], (uint64_t)(10 * s + b));
  }
  static double tl[NLOOPS][MAX_REPS], tc[sizeof shapes / sizeof *shapes][3][MAX_REPS];
  for (int r = 0; r < reps; r++) {
    for (int l = 0; l < NLOOPS; l++) {
      double t0 = bench_thread_seconds();
      tile_loop((enum loop)l, buf, l == BLOCK_L2 ? l2_span : 8192, iters);
      tl[l][r] = bench_thread_seconds() - t0;
    }
    for (int s = 0; s < nshapes; s++) {
      double t[3];
      time_conv(&shapes[s], bufs[s], t);
      for (int k = 0; k < 3; k++) tc[s][k][r] = t[k];
    }
  }
  char json[2048];
  double fig[NLOOPS + 3 * (int)(sizeof shapes / sizeof *shapes)];
  int nfig = 0;
  int at = snprintf(json, sizeof json, "SFBENCH {\"tool\": \"bench_amx_tiles\", \"reps\": %d", reps);
  printf("AMX tile loops, 1 thread, GFLOP/s (median of %d):\n", reps);
  for (int l = 0; l < NLOOPS; l++) {
    double g = 4.0 * PRODUCT_FLOP * (double)iters / bench_median(tl[l], reps) / 1e9;
    printf("  %-28s %7.0f\n", loop_names[l], g);
    fig[nfig++] = g;
    at += snprintf(json + at, sizeof json - (size_t)at, ", \"%s_gflops\": %.1f", loop_keys[l], g);
  }
  printf("AMX bf16 3x3x3 convolution, 1 thread, GFLOP/s (median of %d): forward / dX / dW\n", reps);
  for (int s = 0; s < nshapes; s++) {
    const shape *sh = &shapes[s];
    double flop = 2.0 * 27 * sh->nd * sh->H * sh->W * (double)sh->Ci * sh->Co, g[3];
    for (int k = 0; k < 3; k++) fig[nfig++] = g[k] = flop / bench_median(tc[s][k], reps) / 1e9;
    printf("  %-24s %3d->%-3d %7.0f %7.0f %7.0f\n", sh->name, sh->Ci, sh->Co, g[0], g[1], g[2]);
    at += snprintf(json + at, sizeof json - (size_t)at, ", \"conv%d_gflops\": [%.1f, %.1f, %.1f]", s, g[0], g[1], g[2]);
  }
  printf("%s}\n", json);
  for (int s = 0; s < nshapes; s++)
    for (int b = 0; b < 7; b++) free(bufs[s][b]);
  free(tiles);
  return figures_sane(fig, nfig);
}
