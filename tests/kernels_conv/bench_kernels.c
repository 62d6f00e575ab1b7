/* Kernel benchmark (not a test): GFLOP/s of the convolution kernels (forward, dX, dW) at ScaFFold
 * U-Net layer shapes, next to cblas_sgemm on a 2048^3 square product measured in the same run, all
 * on one thread. The 3x3x3 conv is timed side by side as im2col + sgemm and as the direct kernels
 * of every kernel set up to the active one (portable C, AVX2, AVX-512: scaffold/cpu_isa.h), each
 * made active in turn, and the table marks with '*' the one the dispatch (sf_conv3d_direct_wins)
 * picks for that shape; the transposed and 1x1x1 convs show their _blas kernel only.
 * Usage: bench_kernels [--quick] [--reps N]   (--quick: base-8 shapes; default: base-64 shapes)
 * Run it through scripts/bench-kernels. Figures are medians over N repetitions after one warm-up. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"

enum kind { CONV3, UPCONV, CONV1 };

typedef struct {
  const char *name;
  enum kind kind;
  int nd, H, W, Ci, Co; /* slab (input slab for UPCONV); CONV3 slabs with nd < H get both halo planes */
} shape;

/* Slabs of nd planes (the training's slab decomposition), nd chosen so each run takes 1-4 GFLOP;
 * ps = problem scale (volume edge 2^ps), levels down the U-Net halve the edge and double channels */
static const shape base64[] = {
    {"ps6 inc.conv1 64^3", CONV3, 8, 64, 64, 3, 64},
    {"ps6 inc.conv2 64^3", CONV3, 2, 64, 64, 64, 64},
    {"ps5 inc.conv2 32^3", CONV3, 4, 32, 32, 64, 64},
    {"ps5 up3.conv1 32^3", CONV3, 4, 32, 32, 128, 64},
    {"ps6 down1 32^3", CONV3, 2, 32, 32, 128, 128},
    {"ps5 down1 16^3", CONV3, 8, 16, 16, 128, 128},
    {"ps6 down2 16^3", CONV3, 2, 16, 16, 256, 256},
    {"ps5 down2 8^3", CONV3, 8, 8, 8, 256, 256},
    {"ps6 down3 8^3", CONV3, 4, 8, 8, 512, 512},
    {"ps5 down3 4^3", CONV3, 4, 4, 4, 512, 512},
    {"ps4 down3 2^3", CONV3, 2, 2, 2, 512, 512},
    {"ps5 up3.upconv 16->32", UPCONV, 16, 16, 16, 128, 64},
    {"ps5 outc (1x1x1) 32^3", CONV1, 32, 32, 32, 64, 6},
};
static const shape base8[] = {
    {"ps6 b8 inc.conv1 64^3", CONV3, 8, 64, 64, 3, 8},
    {"ps6 b8 inc.conv2 64^3", CONV3, 8, 64, 64, 8, 8},
    {"ps6 b8 up3.conv1 64^3", CONV3, 8, 64, 64, 16, 8},
    {"ps5 b8 inc.conv2 32^3", CONV3, 16, 32, 32, 8, 8},
    {"ps6 b8 down1 32^3", CONV3, 16, 32, 32, 16, 16},
    {"ps5 b8 down1 16^3", CONV3, 16, 16, 16, 16, 16},
    {"ps6 b8 down2 16^3", CONV3, 16, 16, 16, 32, 32},
    {"ps5 b8 down2 8^3", CONV3, 8, 8, 8, 32, 32},
    {"ps6 b8 down3 8^3", CONV3, 8, 8, 8, 64, 64},
    {"ps5 b8 down3 4^3", CONV3, 4, 4, 4, 64, 64},
    {"ps4 b8 down3 2^3", CONV3, 2, 2, 2, 64, 64},
};

static float *rnd(size_t n, uint64_t stream)
{
  float *p = sf_aligned_alloc(sizeof(float) * (n ? n : 1), "bench tensor");
  sf_rng r;
  sf_rng_seed(&r, 7, stream);
  sf_rng_fill_uniform(p, n, -1.0f, 1.0f, &r);
  return p;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n)
{
  qsort(t, n, sizeof(double), cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static double sgemm_gflops(int n, int reps)
{
  float *a = rnd((size_t)n * n, 1), *b = rnd((size_t)n * n, 2), *c = rnd((size_t)n * n, 3);
  double t[32];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  for (int r = 0; r < reps; r++) {
    double t0 = sf_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    t[r] = sf_now() - t0;
  }
  free(a), free(b), free(c);
  return 2.0 * n * n * (double)n / median(t, reps) * 1e-9;
}

/* Median seconds of one direction (0 forward, 1 dX, 2 dW) of shape s: the _blas kernel, or for a
 * 3x3x3 conv with `direct` set the direct kernel of the active set. */
static double time_dir(const shape *s, int dir, int reps, int direct)
{
  size_t pl = (size_t)s->H * s->W, nv = (size_t)s->nd * pl, nout = s->kind == UPCONV ? 8 * nv : nv;
  size_t nw = (size_t)s->Ci * s->Co * (s->kind == CONV3 ? 27 : s->kind == UPCONV ? 8 : 1);
  int halo = s->kind == CONV3 && s->nd < s->H;
  float *x = rnd(nv * s->Ci, 10), *dy = rnd(nout * s->Co, 11), *w = rnd(nw, 12), *b = rnd(s->Co, 13);
  float *xlo = halo ? rnd(pl * s->Ci, 14) : NULL, *xhi = halo ? rnd(pl * s->Ci, 15) : NULL;
  float *glo = halo ? rnd(pl * s->Co, 16) : NULL, *ghi = halo ? rnd(pl * s->Co, 17) : NULL;
  float *y = rnd(nout * s->Co, 18), *dx = rnd(nv * s->Ci, 19), *dw = rnd(nw, 20), *db = rnd(s->Co, 21);
  double t[32];
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up (workspace growth, page faults) */
    double t0 = sf_now();
    if (s->kind == CONV3 && direct) {
      if (dir == 0) sf_conv3d_forward_direct(y, xlo, x, xhi, w, s->nd, s->H, s->W, s->Ci, s->Co);
      if (dir == 1) sf_conv3d_backward_data_direct(dx, glo, dy, ghi, w, s->nd, s->H, s->W, s->Ci, s->Co);
      if (dir == 2) sf_conv3d_backward_weights_direct(dw, xlo, x, xhi, dy, s->nd, s->H, s->W, s->Ci, s->Co);
    } else if (s->kind == CONV3) {
      if (dir == 0) sf_conv3d_forward_blas(y, xlo, x, xhi, w, s->nd, s->H, s->W, s->Ci, s->Co);
      if (dir == 1) sf_conv3d_backward_data_blas(dx, glo, dy, ghi, w, s->nd, s->H, s->W, s->Ci, s->Co);
      if (dir == 2) sf_conv3d_backward_weights_blas(dw, xlo, x, xhi, dy, s->nd, s->H, s->W, s->Ci, s->Co);
    } else if (s->kind == UPCONV) {
      if (dir == 0) sf_upconv3d_forward_blas(y, x, w, b, s->nd, s->H, s->W, s->Ci, s->Co);
      if (dir == 1) sf_upconv3d_backward_data_blas(dx, dy, w, s->nd, s->H, s->W, s->Ci, s->Co);
      if (dir == 2) sf_upconv3d_backward_weights_blas(dw, db, x, dy, s->nd, s->H, s->W, s->Ci, s->Co);
    } else {
      if (dir == 0) sf_conv1_forward_blas(y, x, w, b, nv, s->Ci, s->Co);
      if (dir == 1) sf_conv1_backward_data_blas(dx, dy, w, nv, s->Ci, s->Co);
      if (dir == 2) sf_conv1_backward_weights_blas(dw, db, x, dy, nv, s->Ci, s->Co);
    }
    if (r >= 0) t[r] = sf_now() - t0;
  }
  free(x), free(dy), free(w), free(b), free(xlo), free(xhi), free(glo), free(ghi);
  free(y), free(dx), free(dw), free(db);
  return median(t, reps);
}

static double shape_flop(const shape *s)
{
  return 2.0 * s->nd * s->H * s->W * s->Ci * s->Co * (s->kind == CONV3 ? 27 : s->kind == UPCONV ? 8 : 1);
}

/* Which variant the dispatch runs for direction dir of a 3x3x3 conv under kernel set `active`:
 * 0 = im2col + sgemm, else the active set's column (1 + active - SF_ISA_C) */
static int picked(const shape *s, int dir, sf_cpu_isa active)
{
  sf_cpu_isa_set_for_testing(active);
  int wins = dir == 2 ? sf_conv3d_direct_dw_wins(s->W, s->Co) : sf_conv3d_direct_wins(s->W, dir ? s->Ci : s->Co);
  return wins ? 1 + (int)active - SF_ISA_C : 0;
}

#define MAXV 4 /* im2col + up to three kernel sets */

/* gf[dir][v]: GFLOP/s of variant v (0: im2col + sgemm or the _blas kernel; 1..: the direct kernels
 * of set SF_ISA_C + v - 1) of each direction of shape s */
static void measure_shape(const shape *s, int reps, sf_cpu_isa active, double gf[3][MAXV])
{
  int nsets = s->kind == CONV3 && active != SF_ISA_NONE ? (int)active - SF_ISA_C + 1 : 0;
  for (int dir = 0; dir < 3; dir++) {
    sf_cpu_isa_set_for_testing(s->kind == CONV3 ? SF_ISA_NONE : active);
    gf[dir][0] = shape_flop(s) / time_dir(s, dir, reps, 0) * 1e-9;
    for (int v = 1; v < MAXV; v++) {
      gf[dir][v] = 0;
      if (v > nsets) continue;
      sf_cpu_isa_set_for_testing((sf_cpu_isa)(SF_ISA_C + v - 1));
      gf[dir][v] = shape_flop(s) / time_dir(s, dir, reps, 1) * 1e-9;
    }
  }
  sf_cpu_isa_set_for_testing(active);
}

static void print_row(const shape *s, double gf[3][MAXV], int nsets, sf_cpu_isa active)
{
  char ch[32];
  snprintf(ch, sizeof ch, "%d->%d", s->Ci, s->Co);
  printf("%-22s %8s %6.2f", s->name, ch, shape_flop(s) * 1e-9);
  for (int dir = 0; dir < 3; dir++) {
    int pick = s->kind == CONV3 && active != SF_ISA_NONE ? picked(s, dir, active) : 0;
    printf(" |");
    for (int v = 0; v <= nsets; v++)
      if (s->kind == CONV3 || v == 0)
        printf(" %6.1f%c", gf[dir][v], v == pick ? '*' : ' ');
      else
        printf(" %7s", "");
  }
  printf("\n");
}

int main(int argc, char **argv)
{
  int quick = 0, reps = 5;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else
      sf_die(SF_EXIT_USAGE, "bench_kernels: unknown argument '%s' (expected --quick or --reps N)", argv[i]);
  }
  if (reps < 1 || reps > 31) sf_die(SF_EXIT_USAGE, "bench_kernels: --reps %d out of range (expected 1..31)", reps);
  openblas_set_num_threads(1);
  const shape *list = quick ? base8 : base64;
  int n = quick ? (int)(sizeof base8 / sizeof base8[0]) : (int)(sizeof base64 / sizeof base64[0]);
  sf_cpu_isa active = sf_cpu_isa_active();
  int nsets = active == SF_ISA_NONE ? 0 : (int)active - SF_ISA_C + 1;

  /* The sgemm reference is sampled between the layers too, so a burst of load from other processes
   * shows up in its spread (printed) instead of skewing the figures unnoticed. */
  double samples[64], gf[64][3][MAXV];
  int ns = 0;
  samples[ns++] = sgemm_gflops(2048, 3);
  for (int i = 0; i < n; i++) {
    measure_shape(&list[i], reps, active, gf[i]);
    samples[ns++] = sgemm_gflops(2048, 1);
  }
  double lo = samples[0], hi = samples[0];
  for (int i = 1; i < ns; i++) lo = lo < samples[i] ? lo : samples[i], hi = hi > samples[i] ? hi : samples[i];
  double ref = median(samples, ns);

  const char *ct = getenv("OPENBLAS_CORETYPE");
  printf("OpenBLAS core %s (OPENBLAS_CORETYPE=%s), 1 thread, median of %d\n", openblas_get_corename(),
         ct ? ct : "unset", reps);
  printf("CPU kernel set: %s (supported: %s); 3x3x3 conv columns: im2col + sgemm", sf_cpu_isa_name(active),
         sf_cpu_isa_name(sf_cpu_isa_supported()));
  for (int v = 1; v <= nsets; v++) printf(", direct %s", sf_cpu_isa_name((sf_cpu_isa)(SF_ISA_C + v - 1)));
  printf("; * = the dispatch's pick\n");
  printf("cblas_sgemm 2048^3: %.1f GFLOP/s (median of %d samples between layers, spread %.1f-%.1f)\n\n", ref, ns,
         lo, hi);
  printf("%-22s %8s %6s", "layer (slab)", "Cin->Cout", "GFLOP");
  const char *dirs[3] = {"forward", "dX", "dW"};
  for (int dir = 0; dir < 3; dir++) printf(" | %-*s", 8 * (nsets + 1) - 1, dirs[dir]);
  printf("\n");
  for (int i = 0; i < n; i++) print_row(&list[i], gf[i], nsets, active);
  return 0;
}
