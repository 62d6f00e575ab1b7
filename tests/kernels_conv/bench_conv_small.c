/* Kernel benchmark (not a test): nanoseconds per call of the 3x3x3 convolution's fp32 variants on the small
 * blocks and few channels of the granularity sweep's finest shapes (docs/runtimes.md), forward, dX and dW:
 * im2col + sgemm, the direct kernels of the active CPU kernel set and of the portable C set, the plain-loop
 * small-channel kernel, and the naive reference. Measures the crossover behind the entry's small-channel rule
 * (src/kernels/conv3d/conv3d.c). Each figure is the fastest call of up to 2000 in 20 ms
 * (sf_conv3d_time_variant); '*' marks the variant the built-in rules pick.
 * Usage: bench_conv_small [--budget-ms N] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/kernel_tuning.h"
#include "scaffold/ops.h"

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *filled(size_t n)
{
  float *p = sf_aligned_alloc((n ? n : 1) * sizeof *p, "bench buffer");
  for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  return p;
}

/* The reference's fastest call, as sf_conv3d_time_variant times the variants */
static double time_ref(const sf_conv3d_shape *s, double budget)
{
  size_t plane = (size_t)s->H * s->W, n = plane * s->nd, taps = (size_t)27 * s->Cin * s->Cout;
  int kin = s->dir == SF_CONV3D_BACKWARD_DATA ? s->Cout : s->Cin;
  float *lo = filled(plane * kin), *mid = filled(n * kin), *hi = filled(plane * kin);
  float *other = filled(s->dir == SF_CONV3D_BACKWARD_WEIGHTS ? n * s->Cout : taps);
  float *out = filled(s->dir == SF_CONV3D_BACKWARD_WEIGHTS ? taps : n * (s->dir ? s->Cin : s->Cout));
  double best = 1e30, start = now_s();
  for (int c = 0; c < 2000 && (c < 2 || now_s() - start < budget); c++) {
    double t0 = now_s();
    if (s->dir == SF_CONV3D_FORWARD) sf_conv3d_forward_ref(out, lo, mid, hi, other, s->nd, s->H, s->W, s->Cin, s->Cout);
    if (s->dir == SF_CONV3D_BACKWARD_DATA)
      sf_conv3d_backward_data_ref(out, lo, mid, hi, other, s->nd, s->H, s->W, s->Cin, s->Cout);
    if (s->dir == SF_CONV3D_BACKWARD_WEIGHTS)
      sf_conv3d_backward_weights_ref(out, lo, mid, hi, other, s->nd, s->H, s->W, s->Cin, s->Cout);
    double dt = now_s() - t0;
    if (c > 0 && dt < best) best = dt;
  }
  free(lo), free(mid), free(hi), free(other), free(out);
  return best;
}

static const int blocks[][3] = {{1, 3, 3}, {2, 3, 3}, {2, 4, 4}, {2, 6, 6}, {4, 10, 10}};
static const int chans[][2] = {{1, 1}, {3, 1}, {1, 2}, {2, 1}, {2, 2}, {3, 3}, {1, 8},  {8, 1},   {2, 8},  {8, 2},
                               {4, 4}, {3, 8}, {6, 6}, {8, 8}, {12, 12}, {16, 16}, {16, 1}, {1, 16}};

int main(int argc, char **argv)
{
  double budget = 0.02;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--budget-ms") && i + 1 < argc)
      budget = atof(argv[++i]) * 1e-3;
    else
      sf_die(SF_EXIT_USAGE, "bench_conv_small: unknown argument '%s' (expected --budget-ms N)", argv[i]);
  openblas_set_num_threads(1);
  sf_cpu_isa active = sf_cpu_isa_active();
  const char *dn[] = {"fwd", "dX", "dW"};
  printf("CPU kernel set %s; ns per call (fastest of up to 2000 in %.0f ms); * = built-in rule's pick\n",
         sf_cpu_isa_name(active), budget * 1e3);
  printf("%-3s %-9s %-7s %9s %9s %9s %9s %9s\n", "dir", "block", "Cin->Co", "im2col", "direct", "direct-c", "small",
         "ref");
  for (int dir = 0; dir < 3; dir++)
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
      for (size_t c = 0; c < sizeof chans / sizeof chans[0]; c++) {
        sf_conv3d_shape s = {(sf_conv3d_direction)dir, 0, blocks[b][0], blocks[b][1], blocks[b][2], chans[c][0],
                             chans[c][1]};
        sf_conv3d_variant vs[] = {SF_CONV3D_IM2COL, SF_CONV3D_DIRECT, SF_CONV3D_DIRECT, SF_CONV3D_SMALL};
        sf_conv3d_variant pick = sf_conv3d_choose(s.dir, 0, s.nd, s.H, s.W, s.Cin, s.Cout);
        char blk[16], ch[16];
        snprintf(blk, sizeof blk, "%dx%dx%d", s.nd, s.H, s.W);
        snprintf(ch, sizeof ch, "%d->%d", s.Cin, s.Cout);
        printf("%-3s %-9s %-7s", dn[dir], blk, ch);
        for (int v = 0; v < 4; v++) {
          if (v == 2) sf_cpu_isa_set_for_testing(SF_ISA_C);
          int mark = v != 2 && vs[v] == pick;
          if (sf_conv3d_variant_runs(vs[v], &s))
            printf(" %8.0f%c", sf_conv3d_time_variant(vs[v], &s, budget) * 1e9, mark ? '*' : ' ');
          else
            printf(" %9s", "-");
          if (v == 2) sf_cpu_isa_set_for_testing(active);
        }
        printf(" %9.0f\n", time_ref(&s, budget) * 1e9);
        fflush(stdout);
      }
  return 0;
}
