/* The 3x3x3 convolution's tuning table (scaffold/kernel_tuning.h, src/kernels/conv3d/conv3d_tuning.c):
 *  - for every variant that can run a shape, an entry naming it makes the entry run exactly that variant:
 *    the output is bitwise the variant's own (sf_conv3d_run), twice in a row (a record fixes the bits), and
 *    close to the naive reference; the call is counted as tuned and named in the kernel choices;
 *  - the built-in rules run again once the table is cleared, and a shape the table lacks uses them;
 *  - an entry whose variant cannot run its shape here (bf16 engine for fp32, Winograd on an odd plane) is
 *    not installed; variant names round-trip;
 *  - recording lists each shape once; the timer returns a positive time;
 *  - the bf16 weight gradient (taps) on the VDPBF16PS engine, where the CPU has one: each candidate (direct and
 *    Winograd VDPBF16PS) forced by the table runs bitwise as itself, twice alike, within bf16 tolerance of the
 *    reference, for all taps and for a block of taps. */
#include <stdio.h>
#include <string.h>

#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/kernel_tuning.h"
#include "scaffold/ops.h"

#include "../../src/kernels/conv3d/conv3d_variants.h"
#include "testutil.h"

#define RTOL 2e-5

typedef struct {
  sf_conv3d_shape s;
  float *lo, *x, *hi, *w, *ref;
  size_t ny;
} problem;

static problem make(sf_conv3d_direction dir, int nd, int H, int W, int Ci, int Co)
{
  problem p = {.s = {dir, 0, nd, H, W, Ci, Co}};
  int cin = dir == SF_CONV3D_BACKWARD_DATA ? Co : Ci, cout = dir == SF_CONV3D_BACKWARD_DATA ? Ci : Co;
  size_t plane = (size_t)H * W;
  p.lo = ct_rand(plane * cin, 1), p.x = ct_rand(plane * nd * cin, 2), p.hi = ct_rand(plane * cin, 3);
  p.w = ct_rand((size_t)27 * Ci * Co, 4);
  p.ny = plane * nd * cout;
  p.ref = ct_zeros(p.ny);
  if (dir == SF_CONV3D_FORWARD) sf_conv3d_forward_ref(p.ref, p.lo, p.x, p.hi, p.w, nd, H, W, Ci, Co);
  else sf_conv3d_backward_data_ref(p.ref, p.lo, p.x, p.hi, p.w, nd, H, W, Ci, Co);
  return p;
}

static void entry(const problem *p, float *y)
{
  memset(y, 0, p->ny * sizeof *y);
  const sf_conv3d_shape *s = &p->s;
  if (s->dir == SF_CONV3D_FORWARD) sf_conv3d_forward(y, p->lo, p->x, p->hi, p->w, s->nd, s->H, s->W, s->Cin, s->Cout);
  else sf_conv3d_backward_data(y, p->lo, p->x, p->hi, p->w, s->nd, s->H, s->W, s->Cin, s->Cout);
}

static void check_forced(const problem *p)
{
  sf_conv3d_variant cand[8];
  int nc = sf_conv3d_candidates(&p->s, cand, 8);
  SF_CHECK(nc >= 2, "%dx%dx%d %d->%d: want at least im2col and one more candidate, got %d", p->s.nd, p->s.H, p->s.W,
           p->s.Cin, p->s.Cout, nc);
  float *y = ct_zeros(p->ny), *again = ct_zeros(p->ny), *own = ct_zeros(p->ny);
  for (int i = 0; i < nc; i++) {
    const char *name = sf_conv3d_variant_name(cand[i]);
    sf_conv3d_tuned e = {p->s, cand[i]};
    SF_CHECK(sf_conv3d_tuning_install(&e, 1) == 1, "%s: an entry it can run was not installed", name);
    sf_kernel_choices_reset();
    sf_conv3d_tuning_counts_reset();
    entry(p, y);
    entry(p, again);
    sf_conv3d_run(cand[i], &p->s, own, p->lo, p->x, p->hi, p->w, 0, 27);
    SF_CHECK(!memcmp(y, own, p->ny * sizeof *y), "%s forced by the table: the entry's output is not bitwise the variant's",
             name);
    SF_CHECK(!memcmp(y, again, p->ny * sizeof *y), "%s forced by the table: two calls differ", name);
    char nm[96];
    snprintf(nm, sizeof nm, "%s (tuned) against the reference", name);
    sf_check_close_f(nm, y, p->ref, p->ny, RTOL);
    unsigned long tuned, builtin;
    sf_conv3d_tuning_counts(&tuned, &builtin);
    SF_CHECK(tuned == 2 && builtin == 0, "%s: want 2 tuned calls and 0 by the rules, got %lu and %lu", name, tuned, builtin);
    char desc[512];
    SF_CHECK(strstr(sf_kernel_choices_describe(desc, sizeof desc), name) != NULL, "%s not in the kernel choices: %s", name,
             desc);
    SF_CHECK(sf_conv3d_variant_from_name(name) == (int)cand[i], "variant name %s does not round-trip", name);
  }
  sf_conv3d_tuning_clear();
  sf_conv3d_tuning_counts_reset();
  entry(p, y);
  unsigned long tuned, builtin;
  sf_conv3d_tuning_counts(&tuned, &builtin);
  SF_CHECK(tuned == 0 && builtin == 1, "cleared table: want 0 tuned and 1 by the rules, got %lu and %lu", tuned, builtin);
  free(y), free(again), free(own);
}

static void check_refused(void)
{
  sf_conv3d_tuned bad[] = {
    {{SF_CONV3D_FORWARD, 0, 4, 8, 8, 32, 32}, SF_CONV3D_VDPBF16},   /* a bf16 variant for an fp32 call */
    {{SF_CONV3D_FORWARD, 0, 3, 7, 7, 32, 32}, SF_CONV3D_WINOGRAD},  /* Winograd needs even extents */
    {{SF_CONV3D_FORWARD, 1, 4, 8, 8, 32, 32}, SF_CONV3D_IM2COL},    /* an fp32 variant for a bf16 call */
  };
  int n = sf_conv3d_tuning_install(bad, 3);
  SF_CHECK(n == 0 && sf_conv3d_tuning_size() == 0, "entries whose variant cannot run their shape: %d installed", n);
  SF_CHECK(sf_conv3d_variant_from_name("no-such-variant") == -1, "an unknown variant name was accepted");
}

static void check_recording(const problem *a, const problem *b)
{
  float *y = ct_zeros(a->ny > b->ny ? a->ny : b->ny);
  sf_conv3d_shape seen[8];
  sf_conv3d_shapes_seen(seen, 0, 1);
  sf_conv3d_shapes_record(1);
  entry(a, y), entry(b, y), entry(a, y);
  sf_conv3d_shapes_record(0);
  entry(b, y);
  int n = sf_conv3d_shapes_seen(seen, 8, 1);
  SF_CHECK(n == 2 && !memcmp(&seen[0], &a->s, sizeof a->s) && !memcmp(&seen[1], &b->s, sizeof b->s),
           "recorded %d shapes, want the 2 called while recording, in order", n);
  double t = sf_conv3d_time_variant(SF_CONV3D_IM2COL, &a->s, 0.002);
  SF_CHECK(t > 0 && t < 10, "timer: %g s", t);
  free(y);
}

/* dw: (t1 - t0, Ci, Co) = the bf16 dW entry's rows of taps [t0, t1), from zero */
static void entry_dw_bf16(const sf_conv3d_shape *s, float *dw, int t0, int t1, const float *lo, const float *x,
                          const float *hi, const float *dy)
{
  memset(dw, 0, sizeof(float) * (size_t)(t1 - t0) * s->Cin * s->Cout);
  sf_conv3d_backward_weights_taps_bf16(dw, t0, t1, lo, x, hi, dy, s->nd, s->H, s->W, s->Cin, s->Cout);
}

static void check_forced_bf16_dw(void)
{
  if (sf_bf16_engine_set_for_testing(SF_BF16_VDPBF16PS) != SF_BF16_VDPBF16PS) {
    printf("skip the bf16 dW checks: no VDPBF16PS engine on this CPU\n");
    return;
  }
  sf_conv3d_shape s = {SF_CONV3D_BACKWARD_WEIGHTS_TAPS, 1, 4, 8, 8, 32, 64};
  size_t plane = (size_t)s.H * s.W, nw = (size_t)27 * s.Cin * s.Cout;
  float *lo = ct_rand(plane * s.Cin, 11), *x = ct_rand(plane * s.nd * s.Cin, 12), *hi = ct_rand(plane * s.Cin, 13);
  float *dy = ct_rand(plane * s.nd * s.Cout, 14), *ref = ct_zeros(nw);
  sf_conv3d_backward_weights_ref(ref, lo, x, hi, dy, s.nd, s.H, s.W, s.Cin, s.Cout);
  float *dw = ct_zeros(nw), *again = ct_zeros(nw), *own = ct_zeros(nw);
  sf_conv3d_variant cand[8];
  int nc = sf_conv3d_candidates(&s, cand, 8);
  SF_CHECK(nc == 2, "bf16 dW taps 4x8x8 32->64: want 2 candidates (vdpbf16ps, winograd-vdpbf16ps), got %d", nc);
  const int ranges[2][2] = {{0, 27}, {14, 27}};
  for (int i = 0; i < nc; i++)
    for (int r = 0; r < 2; r++) {
      const char *name = sf_conv3d_variant_name(cand[i]);
      int t0 = ranges[r][0], t1 = ranges[r][1];
      size_t n = (size_t)(t1 - t0) * s.Cin * s.Cout;
      sf_conv3d_tuned e = {s, cand[i]};
      SF_CHECK(sf_conv3d_tuning_install(&e, 1) == 1, "bf16 dW %s: an entry it can run was not installed", name);
      sf_conv3d_tuning_counts_reset();
      entry_dw_bf16(&s, dw, t0, t1, lo, x, hi, dy);
      entry_dw_bf16(&s, again, t0, t1, lo, x, hi, dy);
      memset(own, 0, sizeof(float) * n);
      sf_conv3d_run(cand[i], &s, own, lo, x, hi, dy, t0, t1);
      SF_CHECK(!memcmp(dw, own, n * sizeof *dw), "bf16 dW taps %d-%d %s forced by the table: not bitwise the variant's",
               t0, t1 - 1, name);
      SF_CHECK(!memcmp(dw, again, n * sizeof *dw), "bf16 dW taps %d-%d %s forced by the table: two calls differ", t0,
               t1 - 1, name);
      char nm[96];
      snprintf(nm, sizeof nm, "bf16 dW taps %d-%d %s (tuned) against the reference", t0, t1 - 1, name);
      sf_check_close_f(nm, dw, ref + (size_t)t0 * s.Cin * s.Cout, n, 2e-2);
      unsigned long tuned, builtin;
      sf_conv3d_tuning_counts(&tuned, &builtin);
      SF_CHECK(tuned == 2 && builtin == 0, "bf16 dW %s: want 2 tuned calls and 0 by the rules, got %lu and %lu", name,
               tuned, builtin);
    }
  sf_conv3d_tuning_clear();
  free(lo), free(x), free(hi), free(dy), free(ref), free(dw), free(again), free(own);
}

int main(void)
{
  problem fwd = make(SF_CONV3D_FORWARD, 4, 8, 8, 32, 64), dx = make(SF_CONV3D_BACKWARD_DATA, 4, 8, 8, 32, 64);
  check_forced(&fwd);
  check_forced(&dx);
  check_refused();
  check_recording(&fwd, &dx);
  check_forced_bf16_dw();
  problem *ps[] = {&fwd, &dx};
  for (int i = 0; i < 2; i++) free(ps[i]->lo), free(ps[i]->x), free(ps[i]->hi), free(ps[i]->w), free(ps[i]->ref);
  return sf_test_end();
}
