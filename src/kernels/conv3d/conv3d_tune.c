/* The timer behind `scaffold tune` (scaffold/kernel_tuning.h): runs one variant of the 3x3x3 convolution on
 * one call shape, on synthetic data, in the calling thread, and returns its fastest call. The data is an
 * interior slab (both halo planes present), the case of most calls in a multi-slab step. A shape of the
 * tap-block direction times the two calls the graph makes (taps [0, SF_CONV3D_TAPS_SPLIT) and the rest): a
 * variant that wins on all 27 taps can lose on the blocks, where each call repeats its per-call work. */
#include <stdlib.h>
#include <time.h>

#include "scaffold/common.h"
#include "scaffold/kernel_tuning.h"

#include "conv3d_variants.h"

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* n floats in [-0.5, 0.5), the same every time */
static float *filled(size_t n, unsigned seed)
{
  float *p = sf_aligned_alloc((n ? n : 1) * sizeof *p, "conv3d tuning buffer");
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
  }
  return p;
}

#define MAX_CALLS 2000

/* one timed unit: the whole gradient, or the graph's two tap blocks */
static void run_once(sf_conv3d_variant v, const sf_conv3d_shape *s, float *out, const float *lo, const float *mid,
                     const float *hi, const float *other)
{
  if (s->dir != SF_CONV3D_BACKWARD_WEIGHTS_TAPS) {
    sf_conv3d_run(v, s, out, lo, mid, hi, other, 0, 27);
    return;
  }
  sf_conv3d_run(v, s, out, lo, mid, hi, other, 0, SF_CONV3D_TAPS_SPLIT);
  sf_conv3d_run(v, s, out, lo, mid, hi, other, SF_CONV3D_TAPS_SPLIT, 27);
}

double sf_conv3d_time_variant(sf_conv3d_variant v, const sf_conv3d_shape *s, double budget_s)
{
  SF_ASSERT(sf_conv3d_variant_runs(v, s));
  size_t plane = (size_t)s->H * s->W, taps = (size_t)27 * s->Cin * s->Cout;
  int weights = s->dir == SF_CONV3D_BACKWARD_WEIGHTS || s->dir == SF_CONV3D_BACKWARD_WEIGHTS_TAPS;
  /* the halo'd input has the channels of x (forward, dW) or of dy (dX) */
  int cin = s->dir == SF_CONV3D_BACKWARD_DATA ? s->Cout : s->Cin;
  int cout_act = s->dir == SF_CONV3D_BACKWARD_DATA ? s->Cin : s->Cout;
  float *lo = filled(plane * cin, 1), *mid = filled(plane * s->nd * cin, 2), *hi = filled(plane * cin, 3);
  float *other = filled(weights ? plane * s->nd * s->Cout : taps, 4);
  float *out = filled(weights ? taps : plane * s->nd * cout_act, 5);
  run_once(v, s, out, lo, mid, hi, other); /* untimed: first touch, workspaces */
  double best = 1e30, start = now_s();
  for (int calls = 0; calls < MAX_CALLS && (calls == 0 || now_s() - start < budget_s); calls++) {
    double t0 = now_s();
    run_once(v, s, out, lo, mid, hi, other);
    double dt = now_s() - t0;
    if (dt < best) best = dt;
  }
  free(lo);
  free(mid);
  free(hi);
  free(other);
  free(out);
  return best;
}
