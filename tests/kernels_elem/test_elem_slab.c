/* Slab decomposition: GroupNorm (stats, forward, backward; with and without ReLU), the loss
 * (partials, backward) and hard Dice computed slab by slab over depth -- 2, 3, uneven and one-plane
 * splits -- must equal the untiled results (partial sums to 1e-12, tensors to 1e-6, counts exactly). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/ops.h"
#include "scaffold/rng.h"
#include "testutil.h"

enum { D = 7, H = 3, W = 5, C = 12, G = 4, K = 5, MAXS = 8 };
static const size_t PLANE = (size_t)H * W;

typedef struct { const char *name; int ns; int nd[MAXS]; } split;
static const split SPLITS[] = {
  {"2 slabs", 2, {3, 4}}, {"3 slabs", 3, {2, 3, 2}}, {"uneven", 3, {1, 5, 1}}, {"7 planes", 7, {1, 1, 1, 1, 1, 1, 1}},
};

/* GroupNorm over the whole volume once (untiled), then per slab with reductions between passes */
static void gn_run(const split *sp, int relu, const float *x, const float *gamma, const float *beta,
                   const float *dy, float *y, float *dx, float *dgamma, float *dbeta, double *stats, double *gsums)
{
  const size_t N = D * PLANE;
  double dgb[2 * C];
  memset(stats, 0, 2 * G * sizeof(double));
  memset(gsums, 0, 2 * G * sizeof(double));
  memset(dgb, 0, sizeof dgb);
  memset(dgamma, 0, C * sizeof(float));
  memset(dbeta, 0, C * sizeof(float));
  size_t off = 0;
  for (int s = 0; s < sp->ns; off += sp->nd[s++] * PLANE * C)
    sf_groupnorm_stats_ref(stats, x + off, sp->nd[s] * PLANE, C, G);
  off = 0;
  for (int s = 0; s < sp->ns; off += sp->nd[s++] * PLANE * C)
    sf_groupnorm_forward_ref(y + off, x + off, stats, gamma, beta, sp->nd[s] * PLANE, N, C, G, 1e-5f, relu);
  off = 0;
  for (int s = 0; s < sp->ns; off += sp->nd[s++] * PLANE * C)
    sf_groupnorm_backward_stats_ref(gsums, dgb, dy + off, y + off, x + off, stats, gamma, sp->nd[s] * PLANE, N,
                                    C, G, 1e-5f, relu);
  off = 0;
  for (int s = 0; s < sp->ns; off += sp->nd[s++] * PLANE * C)
    sf_groupnorm_backward_data_ref(dx + off, dy + off, y + off, x + off, stats, gsums, gamma, sp->nd[s] * PLANE,
                                   N, C, G, 1e-5f, relu);
  sf_groupnorm_param_grads(dgamma, dbeta, dgb, C);
}

static void test_gn(int relu)
{
  const size_t N = D * PLANE, NC = N * C;
  sf_rng r;
  sf_rng_seed(&r, 5, (uint64_t)relu);
  float *x = malloc(NC * 4), *dy = malloc(NC * 4), gamma[C], beta[C];
  sf_rng_fill_uniform(x, NC, -1.5f, 2.5f, &r);
  sf_rng_fill_uniform(dy, NC, -1, 1, &r);
  sf_rng_fill_uniform(gamma, C, 0.5f, 1.5f, &r);
  sf_rng_fill_uniform(beta, C, -0.5f, 0.5f, &r);
  float *y0 = malloc(NC * 4), *dx0 = malloc(NC * 4), dg0[C], db0[C];
  float *y1 = malloc(NC * 4), *dx1 = malloc(NC * 4), dg1[C], db1[C];
  double st0[2 * G], gs0[2 * G], st1[2 * G], gs1[2 * G];
  split whole = {"untiled", 1, {D}};
  gn_run(&whole, relu, x, gamma, beta, dy, y0, dx0, dg0, db0, st0, gs0);
  for (size_t s = 0; s < sizeof SPLITS / sizeof *SPLITS; s++) {
    char name[128];
    gn_run(&SPLITS[s], relu, x, gamma, beta, dy, y1, dx1, dg1, db1, st1, gs1);
#define CHK(what, got, want, n, tol, fn)                                                       \
    snprintf(name, sizeof name, "gn%s %s: %s", relu ? "+relu" : "", SPLITS[s].name, what); \
    fn(name, got, want, n, tol)
    CHK("stats", st1, st0, 2 * G, 1e-12, sf_check_close_d);
    CHK("y", y1, y0, NC, 1e-6, sf_check_close_f);
    CHK("gsums", gs1, gs0, 2 * G, 1e-12, sf_check_close_d);
    CHK("dx", dx1, dx0, NC, 1e-6, sf_check_close_f);
    CHK("dgamma", dg1, dg0, C, 1e-6, sf_check_close_f);
    CHK("dbeta", db1, db0, C, 1e-6, sf_check_close_f);
  }
  free(x); free(dy); free(y0); free(dx0); free(y1); free(dx1);
}

static void test_loss_dice(void)
{
  const size_t N = D * PLANE, NZ = N * K;
  sf_rng r;
  sf_rng_seed(&r, 6, 0);
  float *z = malloc(NZ * 4), cw[K] = {1.02f, 40, 40, 40, 40}, *dz0 = malloc(NZ * 4), *dz1 = malloc(NZ * 4);
  uint16_t *lab = malloc(N * 2);
  sf_rng_fill_uniform(z, NZ, -3, 3, &r);
  for (size_t i = 0; i < N; i++) lab[i] = sf_rng_uniform(&r) < 0.7 ? 0 : (uint16_t)(1 + sf_rng_below(&r, K - 2));
  double acc0[SF_LOSS_NACC(K)] = {0}, dice0[3 * K] = {0};
  sf_loss_partial_ref(acc0, z, lab, cw, N, K);
  sf_loss_backward_ref(dz0, z, lab, cw, acc0, N, K, 1.0f);
  sf_dice_hard_partial_ref(dice0, z, lab, N, K);
  for (size_t s = 0; s < sizeof SPLITS / sizeof *SPLITS; s++) {
    const split *sp = &SPLITS[s];
    double acc[SF_LOSS_NACC(K)] = {0}, dice[3 * K] = {0};
    size_t off = 0;
    for (int t = 0; t < sp->ns; off += sp->nd[t++] * PLANE) {
      sf_loss_partial_ref(acc, z + off * K, lab + off, cw, sp->nd[t] * PLANE, K);
      sf_dice_hard_partial_ref(dice, z + off * K, lab + off, sp->nd[t] * PLANE, K);
    }
    off = 0;
    for (int t = 0; t < sp->ns; off += sp->nd[t++] * PLANE)
      sf_loss_backward_ref(dz1 + off * K, z + off * K, lab + off, cw, acc, sp->nd[t] * PLANE, K, 1.0f);
    char name[128];
    snprintf(name, sizeof name, "loss %s: partial sums", sp->name);
    sf_check_close_d(name, acc, acc0, SF_LOSS_NACC(K), 1e-12);
    double l0, l1;
    sf_loss_finalize(NULL, NULL, &l0, acc0, K);
    sf_loss_finalize(NULL, NULL, &l1, acc, K);
    snprintf(name, sizeof name, "loss %s: loss value", sp->name);
    sf_check_close_d(name, &l1, &l0, 1, 1e-12);
    snprintf(name, sizeof name, "loss %s: dz", sp->name);
    sf_check_close_f(name, dz1, dz0, NZ, 1e-6);
    snprintf(name, sizeof name, "hard dice %s: counts (exact)", sp->name);
    sf_check_close_d(name, dice, dice0, 3 * K, 0);
    double d0 = sf_dice_hard_finalize(dice0, K), d1 = sf_dice_hard_finalize(dice, K);
    SF_CHECK(d0 == d1, "hard dice %s: %.17g != untiled %.17g", sp->name, d1, d0);
  }
  free(z); free(dz0); free(dz1); free(lab);
}

int main(void)
{
  test_gn(0);
  test_gn(1);
  test_loss_dice();
  return sf_test_end();
}
