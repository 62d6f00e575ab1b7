/* Kernel benchmark (not a test): GFLOP/s of the convolution kernels (forward, dX, dW) at ScaFFold
 * U-Net layer shapes, next to cblas_sgemm on a 2048^3 square product measured in the same run, all
 * on one thread. The 3x3x3 conv is timed side by side as im2col + sgemm and as the direct kernels
 * of every kernel set up to the active one (portable C, AVX2, AVX-512: scaffold/cpu_isa.h), each
 * made active in turn, then as Winograd F(2,3) under the active set (AVX2 or AVX-512; '-' where the
 * shape does not fit it: odd slabs, channel counts that do not fill the vectors); the 1x1x1 and
 * transposed convs as sgemm and as their _blas kernel under the active set (which hands over to the
 * direct kernels where the entry's rule picks them), and the transposed conv also in bf16 where the bf16 engine
 * is AMX (torch_amp: 1). '*' marks the variant the fp32 dispatch picks for that shape.
 * Usage: bench_kernels [--quick | --gemm] [--reps N]
 *   (--quick: base-8 shapes; --gemm: the 1x1x1 and transposed conv layers; default: base-64 shapes)
 * Run it through scripts/bench-kernels. Figures are medians over N repetitions after one warm-up, the
 * variants of a layer taking turns within each repetition, timed in thread CPU time (robust to other
 * jobs on the machine; cache misses they cause still count). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#include "../../src/kernels/conv3d/conv3d_variants.h"
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

/* The 1x1x1 and transposed conv layers of the networks the training steps run (bottleneck 3;
 * upconv at level j: input edge 2^(ps-j), c_j -> c_j/2), plus the 512-channel level of base 64 */
static const shape gemm[] = {
    {"ps4 b8  up1 8^3->16^3", UPCONV, 8, 8, 8, 16, 8},
    {"ps4 b8  outc 16^3", CONV1, 16, 16, 16, 8, 6},
    {"ps5 b8  up1 8^3->16^3", UPCONV, 8, 8, 8, 32, 16},
    {"ps5 b8  up2 16^3->32^3", UPCONV, 16, 16, 16, 16, 8},
    {"ps5 b8  outc 32^3", CONV1, 32, 32, 32, 8, 6},
    {"ps5 b16 up1 8^3->16^3", UPCONV, 8, 8, 8, 64, 32},
    {"ps5 b16 up2 16^3->32^3", UPCONV, 16, 16, 16, 32, 16},
    {"ps5 b16 outc 32^3", CONV1, 32, 32, 32, 16, 6},
    {"ps5 b64 up1 8^3->16^3", UPCONV, 8, 8, 8, 256, 128},
    {"ps5 b64 up2 16^3->32^3", UPCONV, 16, 16, 16, 128, 64},
    {"ps5 b64 outc 32^3", CONV1, 32, 32, 32, 64, 6},
    {"ps7 b64 up1 4^3->8^3", UPCONV, 4, 4, 4, 512, 256},
};

static float *rnd(size_t n, uint64_t stream)
{
  float *p = sf_aligned_alloc(sizeof(float) * (n ? n : 1), "bench tensor");
  sf_rng r;
  sf_rng_seed(&r, 7, stream);
  sf_rng_fill_uniform(p, n, -1.0f, 1.0f, &r);
  return p;
}

static double sgemm_gflops(int n, int reps)
{
  float *a = rnd((size_t)n * n, 1), *b = rnd((size_t)n * n, 2), *c = rnd((size_t)n * n, 3);
  double t[32];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  for (int r = 0; r < reps; r++) {
    double t0 = bench_thread_seconds();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    t[r] = bench_thread_seconds() - t0;
  }
  free(a), free(b), free(c);
  return 2.0 * n * n * (double)n / bench_median(t, reps) * 1e-9;
}

/* The tensors of one shape, all directions */
typedef struct {
  float *x, *dy, *w, *b, *xlo, *xhi, *glo, *ghi, *y, *dx, *dw, *db;
} bufs;

static bufs bufs_alloc(const shape *s)
{
  size_t pl = (size_t)s->H * s->W, nv = (size_t)s->nd * pl, nout = s->kind == UPCONV ? 8 * nv : nv;
  size_t nw = (size_t)s->Ci * s->Co * (s->kind == CONV3 ? 27 : s->kind == UPCONV ? 8 : 1);
  int halo = s->kind == CONV3 && s->nd < s->H;
  bufs b = {rnd(nv * s->Ci, 10), rnd(nout * s->Co, 11), rnd(nw, 12), rnd(s->Co, 13),
            halo ? rnd(pl * s->Ci, 14) : NULL, halo ? rnd(pl * s->Ci, 15) : NULL,
            halo ? rnd(pl * s->Co, 16) : NULL, halo ? rnd(pl * s->Co, 17) : NULL,
            rnd(nout * s->Co, 18), rnd(nv * s->Ci, 19), rnd(nw, 20), rnd(s->Co, 21)};
  return b;
}

static void bufs_free(bufs *b)
{
  free(b->x), free(b->dy), free(b->w), free(b->b), free(b->xlo), free(b->xhi), free(b->glo), free(b->ghi);
  free(b->y), free(b->dx), free(b->dw), free(b->db);
}

/* One call of direction dir (0 forward, 1 dX, 2 dW) of shape s: the _blas kernel, or for a 3x3x3
 * conv with `direct` 1 the direct kernel of the active set, 2 the bf16 one, 3 the Winograd one */
static void run_once(const shape *s, bufs *b, int dir, int direct)
{
  int nd = s->nd, H = s->H, W = s->W, Ci = s->Ci, Co = s->Co;
  size_t nv = (size_t)nd * H * W;
  if (s->kind == CONV3 && direct == 2) { /* bf16 (torch_amp: 1) */
    if (dir == 0) sf_conv3d_forward_bf16(b->y, b->xlo, b->x, b->xhi, b->w, nd, H, W, Ci, Co);
    if (dir == 1) sf_conv3d_backward_data_bf16(b->dx, b->glo, b->dy, b->ghi, b->w, nd, H, W, Ci, Co);
    if (dir == 2) sf_conv3d_backward_weights_taps_bf16(b->dw, 0, 27, b->xlo, b->x, b->xhi, b->dy, nd, H, W, Ci, Co);
  } else if (s->kind == CONV3 && direct == 3) {
    if (dir == 0) sf_conv3d_forward_winograd(b->y, b->xlo, b->x, b->xhi, b->w, nd, H, W, Ci, Co);
    if (dir == 1) sf_conv3d_backward_data_winograd(b->dx, b->glo, b->dy, b->ghi, b->w, nd, H, W, Ci, Co);
    if (dir == 2) sf_conv3d_backward_weights_winograd(b->dw, b->xlo, b->x, b->xhi, b->dy, nd, H, W, Ci, Co);
  } else if (s->kind == CONV3 && direct) {
    if (dir == 0) sf_conv3d_forward_direct(b->y, b->xlo, b->x, b->xhi, b->w, nd, H, W, Ci, Co);
    if (dir == 1) sf_conv3d_backward_data_direct(b->dx, b->glo, b->dy, b->ghi, b->w, nd, H, W, Ci, Co);
    if (dir == 2) sf_conv3d_backward_weights_direct(b->dw, b->xlo, b->x, b->xhi, b->dy, nd, H, W, Ci, Co);
  } else if (s->kind == CONV3) {
    if (dir == 0) sf_conv3d_forward(b->y, b->xlo, b->x, b->xhi, b->w, nd, H, W, Ci, Co);
    if (dir == 1) sf_conv3d_backward_data(b->dx, b->glo, b->dy, b->ghi, b->w, nd, H, W, Ci, Co);
    if (dir == 2) sf_conv3d_backward_weights(b->dw, b->xlo, b->x, b->xhi, b->dy, nd, H, W, Ci, Co);
  } else if (s->kind == UPCONV && direct == 2) { /* bf16 (torch_amp: 1 on AMX) */
    if (dir == 0) sf_upconv3d_forward_bf16(b->y, b->x, b->w, b->b, nd, H, W, Ci, Co);
    if (dir == 1) sf_upconv3d_backward_data_bf16(b->dx, b->dy, b->w, nd, H, W, Ci, Co);
    if (dir == 2) sf_upconv3d_backward_weights_bf16(b->dw, b->db, b->x, b->dy, nd, H, W, Ci, Co);
  } else if (s->kind == UPCONV) {
    if (dir == 0) sf_upconv3d_forward(b->y, b->x, b->w, b->b, nd, H, W, Ci, Co);
    if (dir == 1) sf_upconv3d_backward_data(b->dx, b->dy, b->w, nd, H, W, Ci, Co);
    if (dir == 2) sf_upconv3d_backward_weights(b->dw, b->db, b->x, b->dy, nd, H, W, Ci, Co);
  } else {
    if (dir == 0) sf_conv1_forward(b->y, b->x, b->w, b->b, nv, Ci, Co);
    if (dir == 1) sf_conv1_backward_data(b->dx, b->dy, b->w, nv, Ci, Co);
    if (dir == 2) sf_conv1_backward_weights(b->dw, b->db, b->x, b->dy, nv, Ci, Co);
  }
}

/* Seconds per call of `calls` back-to-back calls */
static double time_calls(const shape *s, bufs *b, int dir, int direct, int calls)
{
  double t0 = bench_thread_seconds();
  for (int c = 0; c < calls; c++) run_once(s, b, dir, direct);
  return (bench_thread_seconds() - t0) / calls;
}

static double shape_flop(const shape *s)
{
  return 2.0 * s->nd * s->H * s->W * s->Ci * s->Co * (s->kind == CONV3 ? 27 : s->kind == UPCONV ? 8 : 1);
}

/* Which variant (use_variant) the dispatch runs for direction dir of shape s under kernel set
 * `active`: 0 = im2col + sgemm / sgemm, else a 3x3x3 conv's active-set column, or 1 for the
 * 1x1x1 / transposed conv handing over to its direct kernels */
static int picked(const shape *s, int dir, sf_cpu_isa active)
{
  if (active == SF_ISA_NONE) return 0;
  sf_cpu_isa_set_for_testing(active);
  if (s->kind == UPCONV) return !strcmp(sf_upconv3d_variant_name(0, s->W, s->Ci, s->Co), "direct");
  if (s->kind != CONV3) return !strcmp(sf_conv1_variant_name(), "direct");
  int sets = (int)active - SF_ISA_C + 1;
  static const sf_conv3d_direction dirs[] = {SF_CONV3D_FORWARD, SF_CONV3D_BACKWARD_DATA, SF_CONV3D_BACKWARD_WEIGHTS};
  sf_conv3d_variant v = sf_conv3d_choose(dirs[dir], 0, s->nd, s->H, s->W, s->Ci, s->Co);
  return v == SF_CONV3D_WINOGRAD ? sets + 1 : v == SF_CONV3D_DIRECT ? sets : 0;
}

#define MAXV 6 /* im2col + up to three kernel sets + Winograd + bf16 */

/* Whether the 3x3x3 columns include Winograd (the active set is AVX2 or AVX-512), and whether shape s
 * fits it in direction dir */
static int wino_column(sf_cpu_isa active) { return active >= SF_ISA_AVX2; }
static int wino_fits(const shape *s, int dir)
{
  return dir == 1 ? sf_conv3d_winograd_fits(s->nd, s->H, s->W, s->Co, s->Ci)
                  : sf_conv3d_winograd_fits(s->nd, s->H, s->W, s->Ci, s->Co);
}

/* Makes variant v active. A 3x3x3 conv: 0 = im2col + sgemm (set none), v >= 1 = the direct kernels
 * of set SF_ISA_C + v - 1, then Winograd under `active` (wino_column), then bf16. A 1x1x1 /
 * transposed conv: 0 = sgemm (set none), 1 = its _blas kernel under `active`. Returns what run_once
 * is to call: 0 the _blas kernel, 1 the 3x3x3 direct, 2 bf16, 3 Winograd entry points. */
static int use_variant(const shape *s, int v, sf_cpu_isa active)
{
  if (s->kind != CONV3) {
    sf_cpu_isa_set_for_testing(v ? active : SF_ISA_NONE);
    return v == 2 ? 2 : 0; /* 2: a transposed conv's bf16 column (AMX) */
  }
  int sets = active == SF_ISA_NONE ? 0 : (int)active - SF_ISA_C + 1;
  if (v == sets + 1 && wino_column(active)) {
    sf_cpu_isa_set_for_testing(active);
    return 3;
  }
  if (v > sets) return 2; /* the bf16 column (conv3d_bf16*.c: no kernel set involved) */
  sf_cpu_isa_set_for_testing(v ? (sf_cpu_isa)(SF_ISA_C + v - 1) : SF_ISA_NONE);
  return v > 0;
}

/* How many variants use_variant has for shape s under `active` */
static int variant_count(const shape *s, sf_cpu_isa active)
{
  if (active == SF_ISA_NONE) return 1;
  if (s->kind == UPCONV) return 2 + (sf_bf16_engine_active() == SF_BF16_AMX);
  return s->kind == CONV3 ? 1 + (int)active - SF_ISA_C + 1 + wino_column(active) + sf_cpu_bf16_supported() : 2;
}

/* gf[dir][v]: GFLOP/s of variant v (use_variant) of each direction of shape s: the median of `reps`
 * samples, the variants taking turns within each repetition so a burst of load from other
 * processes hits them alike; each sample repeats the call to last >= 20 ms (tiny layers) */
static void measure_shape(const shape *s, int reps, sf_cpu_isa active, double gf[3][MAXV])
{
  int nvar = variant_count(s, active), calls[MAXV];
  double t[MAXV][32];
  bufs b = bufs_alloc(s);
  for (int dir = 0; dir < 3; dir++) {
    for (int v = 0; v < nvar; v++) { /* warm-up (workspace growth, page faults), sizes the samples */
      if (use_variant(s, v, active) == 3 && !wino_fits(s, dir)) continue; /* gf 0: printed as '-' */
      double once = time_calls(s, &b, dir, use_variant(s, v, active), 1);
      calls[v] = once >= 0.02 ? 1 : once < 2e-5 ? 1000 : (int)(0.02 / once) + 1;
    }
    for (int r = 0; r < reps; r++)
      for (int v = 0; v < nvar; v++)
        t[v][r] = use_variant(s, v, active) == 3 && !wino_fits(s, dir)
                    ? 0
                    : time_calls(s, &b, dir, use_variant(s, v, active), calls[v]);
    for (int v = 0; v < MAXV; v++) {
      double tm = v < nvar ? bench_median(t[v], reps) : 0;
      gf[dir][v] = tm > 0 ? shape_flop(s) / tm * 1e-9 : 0;
    }
  }
  bufs_free(&b);
  sf_cpu_isa_set_for_testing(active);
}

static void print_row(const shape *s, double gf[3][MAXV], int nsets, sf_cpu_isa active)
{
  char ch[32];
  snprintf(ch, sizeof ch, "%d->%d", s->Ci, s->Co);
  printf("%-22s %8s %6.2f", s->name, ch, shape_flop(s) * 1e-9);
  int nvar = variant_count(s, active);
  for (int dir = 0; dir < 3; dir++) {
    int pick = picked(s, dir, active);
    printf(" |");
    for (int v = 0; v <= nsets + wino_column(active) + sf_cpu_bf16_supported(); v++)
      if (v < nvar && gf[dir][v] == 0)
        printf(" %6s ", "-");
      else if (v < nvar)
        printf(" %6.1f%c", gf[dir][v], v == pick ? '*' : ' ');
      else
        printf(" %7s", "");
  }
  printf("\n");
  sf_cpu_isa_set_for_testing(active);
}

int main(int argc, char **argv)
{
  int quick = 0, reps = 5;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--gemm"))
      quick = 2;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else
      sf_die(SF_EXIT_USAGE, "bench_kernels: unknown argument '%s' (expected --quick, --gemm or --reps N)", argv[i]);
  }
  if (reps < 1 || reps > 31) sf_die(SF_EXIT_USAGE, "bench_kernels: --reps %d out of range (expected 1..31)", reps);
  openblas_set_num_threads(1);
  const shape *list = quick == 2 ? gemm : quick ? base8 : base64;
  int n = quick == 2  ? (int)(sizeof gemm / sizeof gemm[0])
          : quick ? (int)(sizeof base8 / sizeof base8[0])
                  : (int)(sizeof base64 / sizeof base64[0]);
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
  double ref = bench_median(samples, ns);

  const char *ct = getenv("OPENBLAS_CORETYPE");
  printf("OpenBLAS core %s (OPENBLAS_CORETYPE=%s), 1 thread, median of %d, thread CPU time\n", openblas_get_corename(),
         ct ? ct : "unset", reps);
  printf("CPU kernel set: %s (supported: %s); 3x3x3 conv columns: im2col + sgemm", sf_cpu_isa_name(active),
         sf_cpu_isa_name(sf_cpu_isa_supported()));
  for (int v = 1; v <= nsets; v++) printf(", direct %s", sf_cpu_isa_name((sf_cpu_isa)(SF_ISA_C + v - 1)));
  if (wino_column(active)) printf(", Winograd F(2,3) %s", sf_cpu_isa_name(active));
  if (nsets && sf_cpu_bf16_supported()) printf(", bf16 (AVX512_BF16, torch_amp: 1)");
  printf("; 1x1x1 / transposed conv columns: sgemm, then the _blas kernel under %s%s; * = the dispatch's pick "
         "(fp32)\n",
         sf_cpu_isa_name(active),
         sf_bf16_engine_active() == SF_BF16_AMX ? ", then (transposed) bf16 on AMX (torch_amp: 1)" : "");
  printf("cblas_sgemm 2048^3: %.1f GFLOP/s (median of %d samples between layers, spread %.1f-%.1f)\n\n", ref, ns,
         lo, hi);
  printf("%-22s %8s %6s", "layer (slab)", "Cin->Cout", "GFLOP");
  const char *dirs[3] = {"forward", "dX", "dW"};
  int ncols = nsets + 1 + wino_column(active) + (nsets && sf_cpu_bf16_supported());
  for (int dir = 0; dir < 3; dir++) printf(" | %-*s", 8 * ncols - 1, dirs[dir]);
  printf("\n");
  for (int i = 0; i < n; i++) print_row(&list[i], gf[i], nsets, active);
  return 0;
}
