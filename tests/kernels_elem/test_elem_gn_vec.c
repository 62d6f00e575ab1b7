/* The vector GroupNorm kernels (sf_groupnorm_stats, _forward, _backward_stats, _backward_data:
 * src/kernels/groupnorm/groupnorm.c) against the reference ones (the _ref kernels), on every CPU kernel set this
 * CPU has (c, avx2, avx512): the sums must be bitwise the reference's (groupnorm_stats's OpenCL variant is
 * declared bitwise equal to the CPU one), the outputs within 2e-6. Channel counts that divide 16 (8, 4),
 * multiples of 16 (16..256) and neither (6, 24, 48: periods of 48 floats, sums with a scalar channel tail),
 * voxel counts that leave a partial last period, none at all, a slab with and without the fused ReLU, and a
 * NaN input (propagates as in the reference). 16384 x 16 is 1 MiB: its outputs take the streaming stores
 * (stream_store.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"
#include "testutil.h"

#define OUT_RTOL 2e-6  /* float outputs from the same coefficients, relative to the largest output */

typedef struct {
  size_t n;
  int C, G;
} gn_case;

typedef struct {
  float *x, *y, *dy, *dx, *gamma, *beta;
  double stats[2 * 256], gsums[2 * 256], dgb[2 * 256];
} gn_bufs;

/* The double sums bit for bit; prints the first difference */
static void check_equal_d(const char *name, const double *got, const double *want, size_t n)
{
  size_t i = 0;
  while (i < n && memcmp(got + i, want + i, sizeof *got) == 0) i++;
  SF_CHECK(i == n, "%s: [%zu] is %.17g, the reference %.17g (difference %.3g; want bitwise equal, n=%zu)", name, i,
           i < n ? got[i] : 0.0, i < n ? want[i] : 0.0, i < n ? got[i] - want[i] : 0.0, n);
}

static void alloc_bufs(gn_bufs *b, size_t nel, int C)
{
  memset(b, 0, sizeof *b);
  b->x = malloc((nel + 1) * sizeof(float));
  b->y = malloc((nel + 1) * sizeof(float));
  b->dy = malloc((nel + 1) * sizeof(float));
  b->dx = malloc((nel + 1) * sizeof(float));
  b->gamma = malloc(C * sizeof(float));
  b->beta = malloc(C * sizeof(float));
}

static void free_bufs(gn_bufs *b)
{
  free(b->x), free(b->y), free(b->dy), free(b->dx), free(b->gamma), free(b->beta);
}

/* One pass of all four kernels (reference or fast), forward output y and backward output dx */
static void run(gn_bufs *b, const gn_case *c, size_t ntotal, int relu, int fast)
{
  size_t n = c->n;
  int C = c->C, G = c->G;
  memset(b->stats, 0, sizeof b->stats), memset(b->gsums, 0, sizeof b->gsums), memset(b->dgb, 0, sizeof b->dgb);
  if (fast) {
    sf_groupnorm_stats(b->stats, b->x, n, C, G);
  } else {
    sf_groupnorm_stats_ref(b->stats, b->x, n, C, G);
  }
  if (fast) {
    sf_groupnorm_forward(b->y, b->x, b->stats, b->gamma, b->beta, n, ntotal, C, G, 1e-5f, relu);
    sf_groupnorm_backward_stats(b->gsums, b->dgb, b->dy, b->y, b->x, b->stats, b->gamma, n, ntotal, C, G, 1e-5f,
                                relu);
    sf_groupnorm_backward_data(b->dx, b->dy, b->y, b->x, b->stats, b->gsums, b->gamma, n, ntotal, C, G, 1e-5f, relu);
  } else {
    sf_groupnorm_forward_ref(b->y, b->x, b->stats, b->gamma, b->beta, n, ntotal, C, G, 1e-5f, relu);
    sf_groupnorm_backward_stats_ref(b->gsums, b->dgb, b->dy, b->y, b->x, b->stats, b->gamma, n, ntotal, C, G, 1e-5f,
                                    relu);
    sf_groupnorm_backward_data_ref(b->dx, b->dy, b->y, b->x, b->stats, b->gsums, b->gamma, n, ntotal, C, G, 1e-5f,
                                   relu);
  }
}

static void check_case(const gn_case *c, int relu, const char *isa, uint64_t seed)
{
  const size_t nel = c->n * (size_t)c->C, ntotal = c->n ? 2 * c->n : 64; /* this slab is half the volume */
  gn_bufs want, got;
  alloc_bufs(&want, nel, c->C);
  alloc_bufs(&got, nel, c->C);
  sf_rng r;
  sf_rng_seed(&r, seed, 11);
  sf_rng_fill_uniform(want.x, nel, -1.5f, 2.5f, &r); /* mean away from 0: the sums of squares matter */
  sf_rng_fill_uniform(want.dy, nel, -1.0f, 1.0f, &r);
  sf_rng_fill_uniform(want.gamma, c->C, 0.5f, 1.5f, &r);
  sf_rng_fill_uniform(want.beta, c->C, -0.3f, 0.3f, &r);
  memcpy(got.x, want.x, nel * sizeof(float)), memcpy(got.dy, want.dy, nel * sizeof(float));
  memcpy(got.gamma, want.gamma, c->C * sizeof(float)), memcpy(got.beta, want.beta, c->C * sizeof(float));
  run(&want, c, ntotal, relu, 0);
  run(&got, c, ntotal, relu, 1);
  char name[160];
  snprintf(name, sizeof name, "%s n %zu C %d G %d relu %d: stats", isa, c->n, c->C, c->G, relu);
  check_equal_d(name, got.stats, want.stats, 2 * (size_t)c->G);
  snprintf(name, sizeof name, "%s n %zu C %d G %d relu %d: forward y", isa, c->n, c->C, c->G, relu);
  sf_check_close_f(name, got.y, want.y, nel, OUT_RTOL);
  snprintf(name, sizeof name, "%s n %zu C %d G %d relu %d: backward gsums", isa, c->n, c->C, c->G, relu);
  check_equal_d(name, got.gsums, want.gsums, 2 * (size_t)c->G);
  snprintf(name, sizeof name, "%s n %zu C %d G %d relu %d: backward dgamma/dbeta", isa, c->n, c->C, c->G, relu);
  check_equal_d(name, got.dgb, want.dgb, 2 * (size_t)c->C);
  snprintf(name, sizeof name, "%s n %zu C %d G %d relu %d: backward dx", isa, c->n, c->C, c->G, relu);
  sf_check_close_f(name, got.dx, want.dx, nel, OUT_RTOL);
  free_bufs(&want);
  free_bufs(&got);
}

/* A NaN input: its group's statistics are NaN, and so is its forward output, with or without the ReLU */
static void check_nan(const char *isa)
{
  const gn_case c = {64, 16, 8};
  const size_t nel = c.n * c.C;
  gn_bufs b;
  alloc_bufs(&b, nel, c.C);
  for (size_t i = 0; i < nel; i++) b.x[i] = (float)(i % 7) - 3.0f, b.dy[i] = 0.5f;
  for (int k = 0; k < c.C; k++) b.gamma[k] = 1.0f, b.beta[k] = 0.0f;
  b.x[5 * c.C + 3] = NAN; /* voxel 5, channel 3: group 1 */
  for (int relu = 0; relu <= 1; relu++) {
    run(&b, &c, c.n, relu, 1);
    SF_CHECK(isnan(b.stats[2]) && isnan(b.stats[3]), "%s relu %d: group 1 stats %g %g with a NaN input, want NaN",
             isa, relu, b.stats[2], b.stats[3]);
    SF_CHECK(!isnan(b.stats[0]), "%s relu %d: group 0 stats %g, want finite (the NaN is in group 1)", isa, relu,
             b.stats[0]);
    SF_CHECK(isnan(b.y[5 * c.C + 3]), "%s relu %d: y at the NaN input is %g, want NaN", isa, relu, b.y[5 * c.C + 3]);
  }
  free_bufs(&b);
}

int main(void)
{
  static const gn_case cases[] = {
      {16384, 16, 8}, {2048, 32, 8}, {256, 64, 8}, {32, 128, 8}, {4, 256, 8}, {4097, 8, 8}, {4096, 8, 4},
      {1, 8, 4},      {3, 4, 2},     {333, 24, 8}, {100, 6, 3},  {513, 48, 8}, {0, 16, 8},   {1000, 16, 16},
  };
  const sf_cpu_isa best = sf_cpu_isa_supported();
  int sets = 0;
  for (sf_cpu_isa isa = SF_ISA_C; isa <= best; isa++) {
    sf_cpu_isa got = sf_cpu_isa_set_for_testing(isa);
    SF_CHECK(got == isa, "kernel set %s could not be made active (got %s)", sf_cpu_isa_name(isa), sf_cpu_isa_name(got));
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
      for (int relu = 0; relu <= 1; relu++) check_case(&cases[k], relu, sf_cpu_isa_name(isa), 300 + 2 * k + relu);
    check_nan(sf_cpu_isa_name(isa));
    sets++;
  }
  printf("GroupNorm fast vs reference: %d kernel sets (best here: %s), %zu cases x relu 0/1 each\n", sets,
         sf_cpu_isa_name(best), sizeof cases / sizeof *cases);
  if (best < SF_ISA_AVX512)
    printf("note: this CPU has no AVX-512, so the avx512 variant was not run (skipped: needs avx512f)\n");
  return sf_test_end();
}
