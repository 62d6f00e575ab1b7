/* Benchmark (not a test): the bf16 3x3x3 convolution's forward and dX as the direct VDPBF16PS kernel
 * (conv3d_bf16.c) and as Winograd F(2,3) with its GEMMs on VDPBF16PS (conv3d_winograd_bf16_tiles.h), next to
 * the fp32 conv the entry picks for the shape (Winograd F(2,3) where it fits, else direct), one thread, at
 * U-Net slab shapes of ps5 and ps6, base 64. The three take turns within each repetition (A/B/C, so a
 * noisy neighbour hits all of them alike); per variant it prints the min and the median over the
 * repetitions of the thread CPU time, and GFLOP/s as the direct conv's 2*27*Cin*Cout flops per voxel.
 * With --dw, the weight gradient instead: direct VDPBF16PS (conv3d_bf16_dw.c), Winograd with VDPBF16PS GEMMs
 * (conv3d_winograd_bf16_dw_tiles.h), the fp32 dW the entry picks, and both bf16 kernels again as the graph's
 * two tap blocks [0,14) + [14,27) (two calls; CPU-only runs of several workers split the large gradients so).
 * Usage: bench_wino_bf16 [--reps N] [--only TEXT] [--dw] (default 7 reps; --only: the shapes whose name holds
 * TEXT). Exit 77 without AVX512_BF16. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchutil.h"
#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"

#include "../../src/kernels/conv3d/conv3d_bf16_internal.h"
#include "../../src/kernels/conv3d/conv3d_variants.h"

typedef struct {
  const char *name;
  int nd, H, W, Ci, Co;
} shape;

static const shape shapes[] = {
    {"ps5 inc/up3 8x32^2", 8, 32, 32, 64, 64},   {"ps5 up3.conv1 4x32^2", 4, 32, 32, 128, 64},
    {"ps5 down1 4x16^2", 4, 16, 16, 128, 128},   {"ps5 down1 8x16^2", 8, 16, 16, 128, 128},
    {"ps5 up2.conv1 4x16^2", 4, 16, 16, 256, 128}, {"ps5 down2 2x8^2", 2, 8, 8, 256, 256},
    {"ps5 down2 8x8^2", 8, 8, 8, 256, 256},      {"few tiles 4x8^2 (32)", 4, 8, 8, 256, 256},
    {"few tiles 2x16^2 (64)", 2, 16, 16, 128, 128}, {"few tiles 4x8^2 (32) ", 4, 8, 8, 128, 128},
    {"ps6 inc 16x64^2", 16, 64, 64, 64, 64},
    {"ps6 down1 8x32^2", 8, 32, 32, 128, 128},   {"ps6 down2 4x16^2", 4, 16, 16, 256, 256},
    {"ps5 down1.conv1 4x16^2", 4, 16, 16, 64, 128}, {"ps5 down2.conv1 2x8^2", 2, 8, 8, 128, 256},
    {"ps5 up1.conv1 2x8^2", 2, 8, 8, 512, 256}, /* past the size cap: direct only */
};

static float *rnd(size_t n, uint64_t stream)
{
  float *p = sf_aligned_alloc(sizeof(float) * (n ? n : 1), "bench tensor");
  sf_rng r;
  sf_rng_seed(&r, 7, stream);
  sf_rng_fill_uniform(p, n, -1.0f, 1.0f, &r);
  return p;
}

enum { DIRECT_BF16, WINO_BF16, FP32, NVAR };
static const char *const var_names[NVAR] = {"direct-vdpbf16ps", "winograd-vdpbf16ps", "fp32"};

static void run(int v, int flip, const shape *s, float *out, const float *lo, const float *in, const float *hi,
                const float *w)
{
  int K = flip ? s->Co : s->Ci, N = flip ? s->Ci : s->Co;
  switch (v) {
  case DIRECT_BF16: sf_conv3d_vdpbf16(out, lo, in, hi, w, s->nd, s->H, s->W, s->Ci, s->Co, flip); return;
  case WINO_BF16:
    if (!sf_conv3d_winograd_bf16_fits(s->nd, s->H, s->W, K, N)) return;
    if (flip)
      sf_conv3d_backward_data_winograd_bf16(out, lo, in, hi, w, s->nd, s->H, s->W, s->Ci, s->Co);
    else
      sf_conv3d_forward_winograd_bf16(out, lo, in, hi, w, s->nd, s->H, s->W, s->Ci, s->Co);
    return;
  default:
    if (flip)
      sf_conv3d_backward_data(out, lo, in, hi, w, s->nd, s->H, s->W, s->Ci, s->Co);
    else
      sf_conv3d_forward(out, lo, in, hi, w, s->nd, s->H, s->W, s->Ci, s->Co);
  }
}

/* ---- dW ---- */
enum { DW_DIRECT, DW_WINO, DW_FP32, DW_DIRECT_SPLIT, DW_WINO_SPLIT, NDW };
static const char *const dw_names[NDW] = {"direct-vdpbf16ps", "winograd-vdpbf16ps", "fp32", "direct 2 blocks",
                                          "winograd 2 blocks"};

typedef void (*dw_taps_fn)(float *, int, int, const float *, const float *, const float *, const float *, int, int,
                           int, int, int);

static void run_dw(int v, const shape *s, float *dw, const float *lo, const float *x, const float *hi,
                   const float *dy)
{
  int split = v == DW_DIRECT_SPLIT || v == DW_WINO_SPLIT, wino = v == DW_WINO || v == DW_WINO_SPLIT;
  size_t half = (size_t)14 * s->Ci * s->Co;
  dw_taps_fn f = wino ? sf_conv3d_backward_weights_winograd_bf16 : sf_conv3d_weights_vdpbf16;
  if (v == DW_FP32) {
    sf_conv3d_backward_weights(dw, lo, x, hi, dy, s->nd, s->H, s->W, s->Ci, s->Co);
  } else if (wino && !sf_conv3d_winograd_bf16_fits(s->nd, s->H, s->W, s->Ci, s->Co)) {
    return;
  } else if (split) {
    f(dw, 0, 14, lo, x, hi, dy, s->nd, s->H, s->W, s->Ci, s->Co);
    f(dw + half, 14, 27, lo, x, hi, dy, s->nd, s->H, s->W, s->Ci, s->Co);
  } else {
    f(dw, 0, 27, lo, x, hi, dy, s->nd, s->H, s->W, s->Ci, s->Co);
  }
}

static void bench_dw(const shape *s, int reps)
{
  size_t pl = (size_t)s->H * s->W, nv = (size_t)s->nd * pl;
  float *x = rnd(nv * s->Ci, 1), *dy = rnd(nv * s->Co, 2), *dw = rnd((size_t)27 * s->Ci * s->Co, 3);
  float *lo = rnd(pl * s->Ci, 4), *hi = rnd(pl * s->Ci, 5);
  double gf = 2.0 * 27 * s->Ci * s->Co * (double)nv * 1e-9, t[NDW][64], med[NDW];
  int fits = sf_conv3d_winograd_bf16_fits(s->nd, s->H, s->W, s->Ci, s->Co);
  for (int v = 0; v < NDW; v++) run_dw(v, s, dw, lo, x, hi, dy); /* warm-up */
  for (int r = 0; r < reps; r++)
    for (int v = 0; v < NDW; v++) {
      double t0 = bench_thread_seconds();
      run_dw(v, s, dw, lo, x, hi, dy);
      t[v][r] = bench_thread_seconds() - t0;
    }
  sf_conv3d_variant fv = sf_conv3d_choose(SF_CONV3D_BACKWARD_WEIGHTS, 0, s->nd, s->H, s->W, s->Ci, s->Co);
  printf("%-22s dW  %3d->%-3d %4d tiles", s->name, s->Ci, s->Co, s->nd / 2 * (s->H / 2) * (s->W / 2));
  for (int v = 0; v < NDW; v++) {
    med[v] = bench_median(t[v], reps);
    if (!fits && (v == DW_WINO || v == DW_WINO_SPLIT)) {
      printf(" | %s -", dw_names[v]);
      continue;
    }
    const char *fp32 = v == DW_FP32 ? sf_conv3d_variant_name(fv) : "";
    printf(" | %s%s%s %.2f ms %.0f", dw_names[v], *fp32 ? "=" : "", fp32, med[v] * 1e3, gf / med[v]);
  }
  if (fits)
    printf(" | wino-bf16 vs direct-bf16 %.2fx (2 blocks %.2fx), vs fp32 %.2fx", med[DW_DIRECT] / med[DW_WINO],
           med[DW_DIRECT_SPLIT] / med[DW_WINO_SPLIT], med[DW_FP32] / med[DW_WINO]);
  printf("\n");
  fflush(stdout);
  free(x), free(dy), free(dw), free(lo), free(hi);
}

int main(int argc, char **argv)
{
  int reps = 7, dw = 0;
  const char *only = NULL;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--dw"))
      dw = 1;
  if (reps < 1 || reps > 64) reps = 7;
  if (!sf_cpu_bf16_supported()) {
    printf("skip: this CPU has no AVX512_BF16\n");
    return 77;
  }
  printf("bf16 3x3x3 conv, 1 thread, kernel set %s, %d reps (min / median ms; GFLOP/s of the median, direct-conv "
         "flops)\n",
         sf_cpu_isa_name(sf_cpu_isa_active()), reps);
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
    const shape *s = &shapes[si];
    if (only && !strstr(s->name, only)) continue;
    if (dw) {
      bench_dw(s, reps);
      continue;
    }
    size_t pl = (size_t)s->H * s->W, nv = (size_t)s->nd * pl, nmax = nv * (s->Ci > s->Co ? s->Ci : s->Co);
    float *x = rnd(nv * s->Ci, 1), *dy = rnd(nv * s->Co, 2), *w = rnd((size_t)27 * s->Ci * s->Co, 3);
    float *xlo = rnd(pl * s->Ci, 4), *xhi = rnd(pl * s->Ci, 5), *glo = rnd(pl * s->Co, 6), *ghi = rnd(pl * s->Co, 7);
    float *out = rnd(nmax, 8);
    double gf = 2.0 * 27 * s->Ci * s->Co * (double)nv * 1e-9;
    for (int flip = 0; flip < 2; flip++) {
      int K = flip ? s->Co : s->Ci, N = flip ? s->Ci : s->Co;
      const float *lo = flip ? glo : xlo, *in = flip ? dy : x, *hi = flip ? ghi : xhi;
      double t[NVAR][64];
      for (int v = 0; v < NVAR; v++) run(v, flip, s, out, lo, in, hi, w); /* warm-up */
      for (int r = 0; r < reps; r++)
        for (int v = 0; v < NVAR; v++) {
          double t0 = bench_thread_seconds();
          run(v, flip, s, out, lo, in, hi, w);
          t[v][r] = bench_thread_seconds() - t0;
        }
      sf_conv3d_variant fv = sf_conv3d_choose(flip ? SF_CONV3D_BACKWARD_DATA : SF_CONV3D_FORWARD, 0, s->nd, s->H,
                                              s->W, s->Ci, s->Co);
      printf("%-22s %-3s %3d->%-3d", s->name, flip ? "dX" : "fwd", K, N);
      double med[NVAR];
      for (int v = 0; v < NVAR; v++) {
        if (v == WINO_BF16 && !sf_conv3d_winograd_bf16_fits(s->nd, s->H, s->W, K, N)) {
          printf(" | %s -", var_names[v]);
          med[v] = 0;
          continue;
        }
        double mn = t[v][0];
        for (int r = 1; r < reps; r++) mn = t[v][r] < mn ? t[v][r] : mn;
        med[v] = bench_median(t[v], reps);
        printf(" | %s%s%s %.2f/%.2f ms %.0f", var_names[v], v == FP32 ? "=" : "",
               v == FP32 ? sf_conv3d_variant_name(fv) : "", mn * 1e3, med[v] * 1e3, gf / med[v]);
      }
      if (med[WINO_BF16] > 0)
        printf(" | wino-bf16 vs direct-bf16 %.2fx, vs fp32 %.2fx", med[DIRECT_BF16] / med[WINO_BF16],
               med[FP32] / med[WINO_BF16]);
      printf("\n");
      fflush(stdout);
    }
    free(x), free(dy), free(w), free(xlo), free(xhi), free(glo), free(ghi), free(out);
  }
  return 0;
}
