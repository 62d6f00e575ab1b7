/* Kernel benchmark (not a test): GFLOP/s of the _blas convolution kernels (forward, dX, dW; the 3x3x3
 * ones dispatch to the direct AVX-512 kernels where those win, SF_CONV_DIRECT=0 forces im2col) at
 * ScaFFold U-Net layer shapes, next to cblas_sgemm on a 2048^3 square product measured in the same
 * run, all on one thread. Prints a table with each figure as a percentage of that sgemm.
 * The 1x1x1 and transposed conv _blas kernels likewise hand over to the direct kernels of the
 * active CPU kernel set (SF_CPU_ISA caps it) unless SF_CONV_DIRECT=0.
 * Usage: bench_kernels [--quick | --gemm] [--reps N]
 *   (--quick: base-8 shapes; --gemm: the 1x1x1 and transposed conv layers; default: base-64 shapes)
 * Run it through scripts/bench-kernels. Figures are medians over N repetitions after one warm-up,
 * timed in thread CPU time (robust to other jobs on the machine; cache misses they cause still count). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static const shape base64[] = {
    {"ps5 inc.conv1     32^3", CONV3, 32, 32, 32, 3, 64},
    {"ps5 inc.conv2     32^3", CONV3, 32, 32, 32, 64, 64},
    {"ps5 down1         16^3", CONV3, 16, 16, 16, 128, 128},
    {"ps5 down2          8^3", CONV3, 8, 8, 8, 256, 256},
    {"ps5 up3.conv1     32^3", CONV3, 32, 32, 32, 128, 64},
    {"ps6 inc.conv2 64^3 slab 8", CONV3, 8, 64, 64, 64, 64},
    {"ps6 down1         32^3", CONV3, 32, 32, 32, 128, 128},
    {"ps6 down3 8^3 (W 8)", CONV3, 8, 8, 8, 512, 512},
    {"ps5 up3.upconv 16^3->32^3", UPCONV, 16, 16, 16, 128, 64},
    {"ps5 outc (1x1x1)  32^3", CONV1, 32, 32, 32, 64, 6},
};
static const shape base8[] = {
    {"ps5 b8 inc.conv1  32^3", CONV3, 32, 32, 32, 3, 8},
    {"ps5 b8 inc.conv2  32^3", CONV3, 32, 32, 32, 8, 8},
    {"ps5 b8 up3.conv1  32^3", CONV3, 32, 32, 32, 16, 8},
    {"ps5 b8 down1      16^3", CONV3, 16, 16, 16, 16, 16},
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

/* This thread's CPU time: the kernels and sgemm run on the calling thread (1 OpenBLAS thread), so
 * time spent descheduled on a machine shared with other jobs does not count against them. */
static double cpu_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
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
    double t0 = cpu_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    t[r] = cpu_now() - t0;
  }
  free(a), free(b), free(c);
  return 2.0 * n * n * (double)n / median(t, reps) * 1e-9;
}

/* Median seconds of one direction (0 forward, 1 dX, 2 dW) of shape s. */
static double time_dir(const shape *s, int dir, int reps)
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
    double t0 = cpu_now();
    if (s->kind == CONV3) {
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
    if (r >= 0) t[r] = cpu_now() - t0;
  }
  free(x), free(dy), free(w), free(b), free(xlo), free(xhi), free(glo), free(ghi);
  free(y), free(dx), free(dw), free(db);
  return median(t, reps);
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

  /* The sgemm reference is sampled between the layers too, so a burst of load from other processes
   * shows up in its spread (printed) instead of skewing every percentage. */
  double samples[64], gf[64][3];
  int ns = 0;
  samples[ns++] = sgemm_gflops(2048, 3);
  for (int i = 0; i < n; i++) {
    const shape *s = &list[i];
    double flop = 2.0 * s->nd * s->H * s->W * s->Ci * s->Co * (s->kind == CONV3 ? 27 : s->kind == UPCONV ? 8 : 1);
    for (int dir = 0; dir < 3; dir++) gf[i][dir] = flop / time_dir(s, dir, reps) * 1e-9;
    samples[ns++] = sgemm_gflops(2048, 1);
  }
  double lo = samples[0], hi = samples[0];
  for (int i = 1; i < ns; i++) lo = lo < samples[i] ? lo : samples[i], hi = hi > samples[i] ? hi : samples[i];
  double ref = median(samples, ns);

  const char *ct = getenv("OPENBLAS_CORETYPE");
  printf("OpenBLAS core %s (OPENBLAS_CORETYPE=%s), 1 thread, median of %d, thread CPU time\n", openblas_get_corename(),
         ct ? ct : "unset", reps);
  printf("3x3x3 conv: %s\n", sf_conv3d_direct_available()
                                 ? "direct AVX-512 kernels where they win (rows >= 8 voxels; dW: >= 16), else im2col + sgemm"
                                 : "im2col + sgemm everywhere (no AVX-512, or SF_CONV_DIRECT=0)");
  printf("1x1x1 and transposed conv: %s\n", sf_conv1_direct_wins(64, 6) ? "direct kernels" : "cblas_sgemm");
  printf("CPU kernel set: %s (SF_CPU_ISA=%s, SF_CONV_DIRECT=%s)\n", sf_cpu_isa_name(sf_cpu_isa_active()),
         getenv("SF_CPU_ISA") ? getenv("SF_CPU_ISA") : "unset",
         getenv("SF_CONV_DIRECT") ? getenv("SF_CONV_DIRECT") : "unset");
  printf("cblas_sgemm 2048^3: %.1f GFLOP/s (= 100%%; median of %d samples between layers, spread %.1f-%.1f)\n\n",
         ref, ns, lo, hi);
  printf("%-27s %9s %10s | %15s | %15s | %15s\n", "layer (nd x H x W)", "Cin->Cout", "GFLOP/dir", "forward",
         "dX", "dW");
  for (int i = 0; i < n; i++) {
    const shape *s = &list[i];
    double flop = 2.0 * s->nd * s->H * s->W * s->Ci * s->Co * (s->kind == CONV3 ? 27 : s->kind == UPCONV ? 8 : 1);
    char ch[32];
    snprintf(ch, sizeof ch, "%d->%d", s->Ci, s->Co);
    printf("%-27s %9s %10.2f", s->name, ch, flop * 1e-9);
    for (int dir = 0; dir < 3; dir++) printf(" | %6.1f (%4.0f%%)", gf[i][dir], 100.0 * gf[i][dir] / ref);
    printf("\n");
  }
  return 0;
}
