/* The fast loss kernels (sf_loss_partial, sf_loss_backward_batch: src/kernels/loss/loss.c) against the
 * double-precision reference (sf_loss_partial_ref, sf_loss_backward_batch_ref), on every CPU kernel set
 * this CPU has (c, avx2, avx512): class counts 2..32 and past the block path's limit, voxel counts
 * around the 16-voxel block and the float-lane flush, logits from confident to flat, batches, and
 * the edge cases (NaN logits propagate, very negative logits, a class with no voxels). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"
#include "testutil.h"

#define ACC_RTOL 2e-6 /* per acc entry, relative to max(|ref|, 1) */
#define DZ_RTOL 2e-6  /* dz, relative to max |dz_ref| */

typedef struct {
  size_t n;
  int K, batch;
  float spread; /* logits uniform in [-spread, spread] */
} loss_case;

static void fill_case(float *z, uint16_t *lab, float *cw, const loss_case *c, uint64_t seed)
{
  sf_rng r;
  sf_rng_seed(&r, seed, 7);
  sf_rng_fill_uniform(z, c->n * c->K, -c->spread, c->spread, &r);
  for (size_t i = 0; i < c->n; i++) lab[i] = (uint16_t)sf_rng_below(&r, c->K > 3 ? c->K - 1 : c->K); /* last class empty */
  for (int k = 0; k < c->K; k++) cw[k] = (float)sf_rng_uniform_range(&r, 0.2, 3.0);
}

/* Worst |got - want| / max(|want|, 1) over the acc entries */
static double acc_err(const double *got, const double *want, int nacc, int *worst)
{
  double e = 0;
  for (int a = 0; a < nacc; a++) {
    double d = fabs(got[a] - want[a]) / fmax(fabs(want[a]), 1.0);
    if (!(d <= e)) e = d, *worst = a;
  }
  return e;
}

static void check_case(const loss_case *c, const char *isa, uint64_t seed)
{
  const int nacc = SF_LOSS_NACC(c->K);
  float *z = malloc(c->n * c->K * sizeof(float)), *cw = malloc(c->K * sizeof(float));
  float *dz = malloc(c->n * c->K * sizeof(float)), *dz_ref = malloc(c->n * c->K * sizeof(float));
  uint16_t *lab = malloc(c->n * sizeof(uint16_t));
  double *acc = calloc(nacc, sizeof(double)), *acc_ref = calloc(nacc, sizeof(double));
  fill_case(z, lab, cw, c, seed);
  acc[0] = acc_ref[0] = 0.5; /* the kernels accumulate into acc */
  sf_loss_partial(acc, z, lab, cw, c->n, c->K);
  sf_loss_partial_ref(acc_ref, z, lab, cw, c->n, c->K);
  int worst = 0;
  double e = acc_err(acc, acc_ref, nacc, &worst);
  SF_CHECK(e <= ACC_RTOL, "%s n %zu K %d spread %g: partial acc[%d] %.12g, reference %.12g (rel err %.3g > %g)", isa,
           c->n, c->K, c->spread, worst, acc[worst], acc_ref[worst], e, ACC_RTOL);
  double wsum = acc_ref[1] * c->batch * 1.25; /* a pooled batch weight sum other than this sample's */
  sf_loss_backward_batch(dz, z, lab, cw, acc_ref, wsum, c->batch, c->n, c->K, 0.75f);
  sf_loss_backward_batch_ref(dz_ref, z, lab, cw, acc_ref, wsum, c->batch, c->n, c->K, 0.75f);
  size_t wi = 0;
  double ed = sf_max_rel_err_f(dz, dz_ref, c->n * c->K, &wi);
  SF_CHECK(ed <= DZ_RTOL, "%s n %zu K %d batch %d spread %g: dz[%zu] %.9g, reference %.9g (rel err %.3g > %g)", isa,
           c->n, c->K, c->batch, c->spread, wi, dz[wi], dz_ref[wi], ed, DZ_RTOL);
  free(z), free(cw), free(dz), free(dz_ref), free(lab), free(acc), free(acc_ref);
}

/* A NaN logit makes the CE sum and that voxel's gradient NaN, as in the reference; very negative
 * logits (down to -1e30) stay finite and match. */
static void check_edges(const char *isa)
{
  enum { N = 40, K = 4 };
  float z[N * K], cw[K] = {1, 2, 0.5f, 1}, dz[N * K], dz_ref[N * K];
  uint16_t lab[N];
  for (int i = 0; i < N; i++) {
    lab[i] = (uint16_t)(i % K);
    for (int k = 0; k < K; k++) z[i * K + k] = (k == lab[i]) ? 3.0f : (i % 3 ? -1e30f : -120.0f);
  }
  double acc[SF_LOSS_NACC(K)] = {0}, acc_ref[SF_LOSS_NACC(K)] = {0};
  sf_loss_partial(acc, z, lab, cw, N, K);
  sf_loss_partial_ref(acc_ref, z, lab, cw, N, K);
  int worst = 0;
  double e = acc_err(acc, acc_ref, SF_LOSS_NACC(K), &worst);
  SF_CHECK(e <= ACC_RTOL, "%s very negative logits: acc[%d] %.12g, reference %.12g (rel err %.3g)", isa, worst,
           acc[worst], acc_ref[worst], e);
  sf_loss_backward_batch(dz, z, lab, cw, acc_ref, acc_ref[1], 1, N, K, 1.0f);
  sf_loss_backward_batch_ref(dz_ref, z, lab, cw, acc_ref, acc_ref[1], 1, N, K, 1.0f);
  size_t wi = 0;
  double ed = sf_max_rel_err_f(dz, dz_ref, N * K, &wi);
  SF_CHECK(ed <= DZ_RTOL, "%s very negative logits: dz[%zu] %.9g, reference %.9g (rel err %.3g)", isa, wi, dz[wi],
           dz_ref[wi], ed);
  z[17 * K + 2] = NAN;
  memset(acc, 0, sizeof acc);
  sf_loss_partial(acc, z, lab, cw, N, K);
  SF_CHECK(isnan(acc[0]), "%s NaN logit: the CE sum is %g, want NaN", isa, acc[0]);
  sf_loss_backward_batch(dz, z, lab, cw, acc_ref, acc_ref[1], 1, N, K, 1.0f);
  int nan_row = 1, nan_other = 0;
  for (int i = 0; i < N; i++)
    for (int k = 0; k < K; k++) {
      if (i == 17) nan_row &= isnan(dz[i * K + k]);
      else nan_other |= isnan(dz[i * K + k]);
    }
  SF_CHECK(nan_row && !nan_other, "%s NaN logit: dz of its voxel all NaN %d (want 1), NaN elsewhere %d (want 0)",
           isa, nan_row, nan_other);
}

int main(void)
{
  static const loss_case cases[] = {
      {1, 2, 1, 4.0f},     {15, 3, 1, 4.0f},   {16, 6, 1, 4.0f},   {17, 6, 2, 8.0f},    {1000, 6, 4, 2.0f},
      {1037, 17, 1, 6.0f}, {777, 32, 3, 3.0f}, {300, 40, 1, 3.0f}, {32768, 6, 8, 5.0f}, {5000, 5, 1, 0.01f},
  };
  const sf_cpu_isa best = sf_cpu_isa_supported();
  int sets = 0;
  for (sf_cpu_isa isa = SF_ISA_C; isa <= best; isa++) {
    sf_cpu_isa got = sf_cpu_isa_set_for_testing(isa);
    SF_CHECK(got == isa, "kernel set %s could not be made active (got %s)", sf_cpu_isa_name(isa), sf_cpu_isa_name(got));
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) check_case(&cases[c], sf_cpu_isa_name(isa), 100 + c);
    check_edges(sf_cpu_isa_name(isa));
    sets++;
  }
  printf("loss fast vs reference: %d kernel sets (best here: %s), %zu cases each\n", sets, sf_cpu_isa_name(best),
         sizeof cases / sizeof *cases);
  if (best < SF_ISA_AVX512)
    printf("note: this CPU has no AVX-512, so the avx512 variant was not run (skipped: needs avx512f)\n");
  return sf_test_end();
}
