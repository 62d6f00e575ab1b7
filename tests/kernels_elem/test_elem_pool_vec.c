/* The vector MaxPool kernels (sf_maxpool3d_forward, sf_maxpool3d_backward: src/kernels/maxpool3d/maxpool3d.c) against
 * the reference ones (the _ref kernels), on every CPU kernel set this CPU has (c, avx2, avx512): the pooled values,
 * the argmax bytes and the input gradient must be bitwise the reference's, the gradient with and without the
 * skip-connection add (the reference adds it in a second pass). Channel counts that take 16-wide vectors only
 * (16, 32, 64), 8-wide ones (8), both (24), both and a scalar tail (27), the tail only (1, 3); inputs drawn from 5
 * values so windows hold ties (the first maximum must win), with NaNs in some windows (they must win too), -0.0
 * next to +0.0, and a -inf window. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"
#include "testutil.h"

typedef struct {
  int nd, H, W, C; /* output sizes */
} pool_case;

/* Index of the first element whose bits differ, or n */
static size_t first_diff(const void *a, const void *b, size_t n, size_t size)
{
  size_t i = 0;
  while (i < n && memcmp((const char *)a + i * size, (const char *)b + i * size, size) == 0) i++;
  return i;
}

static void check_floats(const char *what, const float *got, const float *want, size_t n)
{
  size_t i = first_diff(got, want, n, sizeof(float));
  SF_CHECK(i == n, "%s: [%zu] is %.9g, the reference %.9g (want bitwise equal, n=%zu)", what, i, i < n ? got[i] : 0.0,
           i < n ? want[i] : 0.0, n);
}

/* x from {-1, -0, +0, 0.5, 1}, a NaN every 97th element, one window all -inf */
static void fill_input(float *x, size_t n, uint64_t seed)
{
  static const float vals[5] = {-1.0f, -0.0f, 0.0f, 0.5f, 1.0f};
  sf_rng r;
  sf_rng_seed(&r, seed, 3);
  for (size_t i = 0; i < n; i++) x[i] = vals[sf_rng_next(&r) % 5];
  for (size_t i = 41; i < n; i += 97) x[i] = NAN;
}

static void check_case(const pool_case *c, const char *isa, uint64_t seed)
{
  const size_t nout = (size_t)c->nd * c->H * c->W * c->C, nin = 8 * nout;
  float *x = malloc(nin * sizeof *x), *add = malloc(nin * sizeof *add), *dy = malloc(nout * sizeof *dy);
  float *y0 = malloc(nout * sizeof *y0), *y1 = malloc(nout * sizeof *y1);
  float *dx0 = malloc(nin * sizeof *dx0), *dx1 = malloc(nin * sizeof *dx1);
  uint8_t *i0 = malloc(nout), *i1 = malloc(nout);
  fill_input(x, nin, seed);
  if (c->C >= 1) /* the first window of channel 0 all -inf: the argmax stays at tap 0 */
    for (int k = 0; k < 8; k++)
      x[(size_t)(k >> 2) * 4 * c->H * c->W * c->C + (size_t)((k >> 1) & 1) * 2 * c->W * c->C +
        (size_t)(k & 1) * c->C] = -INFINITY;
  sf_rng r;
  sf_rng_seed(&r, seed, 5);
  sf_rng_fill_uniform(dy, nout, -1.0f, 1.0f, &r);
  sf_rng_fill_uniform(add, nin, -1.0f, 1.0f, &r);
  for (size_t i = 7; i < nin; i += 53) add[i] = -0.0f;
  char what[160];
  sf_maxpool3d_forward_ref(y0, i0, x, c->nd, c->H, c->W, c->C);
  sf_maxpool3d_forward(y1, i1, x, c->nd, c->H, c->W, c->C);
  snprintf(what, sizeof what, "%s forward %dx%dx%d C %d: y", isa, c->nd, c->H, c->W, c->C);
  check_floats(what, y1, y0, nout);
  size_t k = first_diff(i1, i0, nout, 1);
  SF_CHECK(k == nout, "%s forward %dx%dx%d C %d: argmax [%zu] is %d, the reference %d", isa, c->nd, c->H, c->W, c->C, k,
           k < nout ? i1[k] : 0, k < nout ? i0[k] : 0);
  for (int with_add = 0; with_add <= 1; with_add++) {
    sf_maxpool3d_backward_ref(dx0, dy, i0, c->nd, c->H, c->W, c->C);
    if (with_add)
      for (size_t i = 0; i < nin; i++) dx0[i] += add[i]; /* what the codelet's second pass did */
    memset(dx1, 0xff, nin * sizeof *dx1);                /* NaN bits: every element must be written */
    sf_maxpool3d_backward(dx1, dy, i0, with_add ? add : NULL, c->nd, c->H, c->W, c->C);
    snprintf(what, sizeof what, "%s backward %dx%dx%d C %d add %d: dx", isa, c->nd, c->H, c->W, c->C, with_add);
    check_floats(what, dx1, dx0, nin);
  }
  free(x), free(add), free(dy), free(y0), free(y1), free(dx0), free(dx1), free(i0), free(i1);
}

int main(void)
{
  static const pool_case cases[] = {{2, 3, 4, 8},  {1, 2, 2, 16}, {2, 4, 4, 32}, {1, 2, 3, 64}, {2, 3, 2, 24},
                                    {1, 3, 3, 27}, {2, 2, 5, 1},  {1, 4, 2, 3},  {4, 8, 8, 8}};
  const sf_cpu_isa best = sf_cpu_isa_supported();
  int sets = 0;
  for (sf_cpu_isa isa = SF_ISA_C; isa <= best; isa++) {
    sf_cpu_isa got = sf_cpu_isa_set_for_testing(isa);
    SF_CHECK(got == isa, "kernel set %s could not be made active (got %s)", sf_cpu_isa_name(isa), sf_cpu_isa_name(got));
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) check_case(&cases[k], sf_cpu_isa_name(isa), 700 + k);
    sets++;
  }
  printf("MaxPool fast vs reference: %d kernel sets (best here: %s), %zu cases, backward with and without the add\n",
         sets, sf_cpu_isa_name(best), sizeof cases / sizeof *cases);
  if (best < SF_ISA_AVX512)
    printf("note: this CPU has no AVX-512, so the avx512 variant was not run (skipped: needs avx512f)\n");
  return sf_test_end();
}
