/* Finite-difference gradient checks of every element-wise op with a backward (GroupNorm with and
 * without the fused ReLU, MaxPool 2x2x2, the loss), on tiny odd shapes. Central differences run on
 * the double mirrors (elem_mirror.c), which check the mirrors' analytic gradients to 1e-6; the float
 * kernels' forward and analytic gradients are then checked against the mirrors to 1e-5 or so.
 * Points whose ReLU mask changes within +-h (kinks) are skipped and counted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elem_mirror.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"
#include "testutil.h"

static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }
static float *falloc(size_t n) { return calloc(n ? n : 1, sizeof(float)); }
static void to_f(float *f, const double *d, size_t n) { for (size_t i = 0; i < n; i++) f[i] = (float)d[i]; }
static void to_d(double *d, const float *f, size_t n) { for (size_t i = 0; i < n; i++) d[i] = f[i]; }

/* ---- GroupNorm -------------------------------------------------------------------------------- */
typedef struct { const double *x, *gamma, *beta, *R; size_t n; int C, G, relu; double *y, *pre; } gn_prob;

/* f = sum R*y; *mask_sig counts non-negative pre-activations (changes when a ReLU kink is crossed) */
static double gn_obj(gn_prob *p, const double *x, const double *gamma, const double *beta, long *mask_sig)
{
  mir_gn_forward(p->y, p->pre, x, gamma, beta, p->n, p->C, p->G, 1e-5, p->relu);
  double f = 0;
  long sig = 0;
  for (size_t i = 0; i < p->n * p->C; i++) {
    f += p->R[i] * p->y[i];
    sig += (p->pre[i] > 0) * (long)(i + 1);
  }
  *mask_sig = sig;
  return f;
}

/* central difference of gn_obj in v[k] (v is one of x, gamma, beta, aliased into the call) */
static int gn_fd(gn_prob *p, double *v, size_t k, double *x, double *gamma, double *beta, double h, double *out)
{
  double s = v[k];
  long m0, m1, m2;
  gn_obj(p, x, gamma, beta, &m0);
  v[k] = s + h;
  double fp = gn_obj(p, x, gamma, beta, &m1);
  v[k] = s - h;
  double fm = gn_obj(p, x, gamma, beta, &m2);
  v[k] = s;
  *out = (fp - fm) / (2 * h);
  return !(p->relu && (m1 != m0 || m2 != m0)); /* 0: a kink was crossed, skip the point */
}

static void test_groupnorm(int D, int H, int W, int C, int G, int relu, uint64_t seed)
{
  const size_t n = (size_t)D * H * W, nc = n * C;
  sf_rng r;
  sf_rng_seed(&r, seed, 1);
  double *x = dalloc(nc), *gamma = dalloc(C), *beta = dalloc(C), *R = dalloc(nc);
  for (size_t i = 0; i < nc; i++) x[i] = (float)(sf_rng_uniform_range(&r, -2, 2) + 0.3 * (double)(i % C));
  for (int c = 0; c < C; c++) gamma[c] = (float)sf_rng_uniform_range(&r, 0.5, 1.5) * (c % 3 == 2 ? -1 : 1);
  for (int c = 0; c < C; c++) beta[c] = (float)sf_rng_uniform_range(&r, -0.5, 0.5);
  for (size_t i = 0; i < nc; i++) R[i] = (float)sf_rng_uniform_range(&r, -1, 1);
  gn_prob p = {x, gamma, beta, R, n, C, G, relu, dalloc(nc), dalloc(nc)};

  /* analytic (double mirror) vs central differences */
  double *dx = dalloc(nc), *dg = dalloc(C), *db = dalloc(C);
  double *fx = dalloc(nc), *fg = dalloc(C), *fb = dalloc(C);
  mir_gn_backward(dx, dg, db, R, x, gamma, beta, n, C, G, 1e-5, relu);
  int skipped = 0;
  for (size_t k = 0; k < nc; k++)
    if (!gn_fd(&p, x, k, x, gamma, beta, 1e-5, &fx[k])) { fx[k] = dx[k]; skipped++; }
  for (int c = 0; c < C; c++) {
    if (!gn_fd(&p, gamma, c, x, gamma, beta, 1e-5, &fg[c])) { fg[c] = dg[c]; skipped++; }
    if (!gn_fd(&p, beta, c, x, gamma, beta, 1e-5, &fb[c])) { fb[c] = db[c]; skipped++; }
  }
  char name[128];
  snprintf(name, sizeof name, "gn%s %dx%dx%d C%d G%d mirror dx vs FD", relu ? "+relu" : "", D, H, W, C, G);
  sf_check_close_d(name, dx, fx, nc, 1e-6);
  snprintf(name, sizeof name, "gn%s C%d G%d mirror dgamma vs FD", relu ? "+relu" : "", C, G);
  sf_check_close_d(name, dg, fg, C, 1e-6);
  snprintf(name, sizeof name, "gn%s C%d G%d mirror dbeta vs FD", relu ? "+relu" : "", C, G);
  sf_check_close_d(name, db, fb, C, 1e-6);
  printf("     (%d of %zu FD points skipped at ReLU kinks)\n", skipped, nc + 2 * (size_t)C);
  SF_CHECK(skipped <= (int)(nc / 50), "too many kink points skipped: %d", skipped);

  /* float kernels vs the mirror */
  float *xf = falloc(nc), *gf = falloc(C), *bf = falloc(C), *Rf = falloc(nc), *yf = falloc(nc), *dxf = falloc(nc);
  float *dgf = falloc(C), *dbf = falloc(C);
  to_f(xf, x, nc); to_f(gf, gamma, C); to_f(bf, beta, C); to_f(Rf, R, nc);
  double stats[2 * 64] = {0}, gsums[2 * 64] = {0}, *dgb = dalloc(2 * (size_t)C);
  sf_groupnorm_stats_ref(stats, xf, n, C, G);
  sf_groupnorm_forward_ref(yf, xf, stats, gf, bf, n, n, C, G, 1e-5f, relu);
  sf_groupnorm_backward_stats_ref(gsums, dgb, Rf, yf, xf, stats, gf, n, n, C, G, 1e-5f, relu);
  sf_groupnorm_backward_data_ref(dxf, Rf, yf, xf, stats, gsums, gf, n, n, C, G, 1e-5f, relu);
  sf_groupnorm_param_grads(dgf, dbf, dgb, C);
  double *t = dalloc(nc);
  mir_gn_forward(p.y, NULL, x, gamma, beta, n, C, G, 1e-5, relu);
  to_d(t, yf, nc);
  snprintf(name, sizeof name, "gn%s C%d G%d float forward vs mirror", relu ? "+relu" : "", C, G);
  sf_check_close_d(name, t, p.y, nc, 1e-6);
  to_d(t, dxf, nc);
  snprintf(name, sizeof name, "gn%s C%d G%d float dx vs mirror", relu ? "+relu" : "", C, G);
  sf_check_close_d(name, t, dx, nc, 1e-5);
  to_d(t, dgf, C);
  snprintf(name, sizeof name, "gn%s C%d G%d float dgamma vs mirror", relu ? "+relu" : "", C, G);
  sf_check_close_d(name, t, dg, C, 1e-5);
  to_d(t, dbf, C);
  snprintf(name, sizeof name, "gn%s C%d G%d float dbeta vs mirror", relu ? "+relu" : "", C, G);
  sf_check_close_d(name, t, db, C, 1e-5);

  free(x); free(gamma); free(beta); free(R); free(p.y); free(p.pre); free(dx); free(dg); free(db);
  free(fx); free(fg); free(fb); free(xf); free(gf); free(bf); free(Rf); free(yf); free(dxf); free(dgf);
  free(dbf); free(dgb); free(t);
}

/* ---- MaxPool ---------------------------------------------------------------------------------- */
static void test_maxpool(int nd, int H, int W, int C)
{
  const size_t ny = (size_t)nd * H * W * C, nx = 8 * ny;
  sf_rng r;
  sf_rng_seed(&r, 7, 2);
  double *x = dalloc(nx), *R = dalloc(ny), *y = dalloc(ny), *fd = dalloc(nx);
  /* distinct values: a shuffled ramp */
  for (size_t i = 0; i < nx; i++) x[i] = 0.25 * (double)i - 30.0;
  for (size_t i = nx - 1; i > 0; i--) {
    size_t j = sf_rng_below(&r, i + 1);
    double s = x[i]; x[i] = x[j]; x[j] = s;
  }
  for (size_t i = 0; i < ny; i++) R[i] = (float)sf_rng_uniform_range(&r, -1, 1);
  for (size_t k = 0; k < nx; k++) {
    double s = x[k], fp = 0, fm = 0;
    x[k] = s + 1e-3;
    mir_maxpool(y, x, nd, H, W, C);
    for (size_t i = 0; i < ny; i++) fp += R[i] * y[i];
    x[k] = s - 1e-3;
    mir_maxpool(y, x, nd, H, W, C);
    for (size_t i = 0; i < ny; i++) fm += R[i] * y[i];
    x[k] = s;
    fd[k] = (fp - fm) / 2e-3;
  }
  float *xf = falloc(nx), *yf = falloc(ny), *Rf = falloc(ny), *dxf = falloc(nx);
  uint8_t *idx = calloc(ny, 1);
  to_f(xf, x, nx); to_f(Rf, R, ny);
  for (size_t i = 0; i < nx; i++) dxf[i] = NAN; /* the backward must write every element */
  sf_maxpool3d_forward_ref(yf, idx, xf, nd, H, W, C);
  sf_maxpool3d_backward_ref(dxf, Rf, idx, nd, H, W, C);
  mir_maxpool(y, x, nd, H, W, C);
  double *t = dalloc(nx);
  to_d(t, yf, ny);
  sf_check_close_d("maxpool float forward vs mirror", t, y, ny, 0);
  to_d(t, dxf, nx);
  sf_check_close_d("maxpool float dx vs FD", t, fd, nx, 1e-9);
  free(x); free(R); free(y); free(fd); free(xf); free(yf); free(Rf); free(dxf); free(idx); free(t);
}

/* ---- loss ------------------------------------------------------------------------------------- */
static void test_loss(size_t n, int K, int absent_class, uint64_t seed)
{
  const size_t nz = n * K;
  sf_rng r;
  sf_rng_seed(&r, seed, 3);
  double *z = dalloc(nz), *cw = dalloc(K), *dz = dalloc(nz), *fd = dalloc(nz), *t = dalloc(nz);
  uint16_t *lab = calloc(n, sizeof *lab);
  for (size_t i = 0; i < nz; i++) z[i] = (float)sf_rng_uniform_range(&r, -3, 3);
  for (int k = 0; k < K; k++) cw[k] = (float)sf_rng_uniform_range(&r, 0.5, 5);
  for (size_t i = 0; i < n; i++) {
    do lab[i] = (uint16_t)sf_rng_below(&r, K);
    while (lab[i] == absent_class);
  }
  mir_loss_backward(dz, z, lab, cw, n, K);
  for (size_t k = 0; k < nz; k++) {
    double s = z[k];
    z[k] = s + 1e-5;
    double fp = mir_loss(NULL, NULL, z, lab, cw, n, K);
    z[k] = s - 1e-5;
    double fm = mir_loss(NULL, NULL, z, lab, cw, n, K);
    z[k] = s;
    fd[k] = (fp - fm) / 2e-5;
  }
  char name[128];
  snprintf(name, sizeof name, "loss n%zu K%d absent %d: mirror dz vs FD", n, K, absent_class);
  sf_check_close_d(name, dz, fd, nz, 1e-6);

  float *zf = falloc(nz), *cwf = falloc(K), *dzf = falloc(nz), *dzh = falloc(nz);
  to_f(zf, z, nz); to_f(cwf, cw, K);
  double acc[SF_LOSS_NACC(64)] = {0}, ce, dice, loss, mce, mdice;
  sf_loss_partial_ref(acc, zf, lab, cwf, n, K);
  sf_loss_finalize(&ce, &dice, &loss, acc, K);
  double mloss = mir_loss(&mce, &mdice, z, lab, cw, n, K);
  snprintf(name, sizeof name, "loss n%zu K%d: float loss vs mirror", n, K);
  sf_check_close_d(name, &loss, &mloss, 1, 1e-6);
  snprintf(name, sizeof name, "loss n%zu K%d: float ce vs mirror", n, K);
  sf_check_close_d(name, &ce, &mce, 1, 1e-6);
  snprintf(name, sizeof name, "loss n%zu K%d: float dice_fg vs mirror", n, K);
  sf_check_close_d(name, &dice, &mdice, 1, 1e-6);
  sf_loss_backward_ref(dzf, zf, lab, cwf, acc, n, K, 1.0f);
  to_d(t, dzf, nz);
  snprintf(name, sizeof name, "loss n%zu K%d: float dz vs mirror", n, K);
  sf_check_close_d(name, t, dz, nz, 1e-5);
  sf_loss_backward_ref(dzh, zf, lab, cwf, acc, n, K, 0.5f);
  for (size_t i = 0; i < nz; i++) dzf[i] *= 0.5f;
  snprintf(name, sizeof name, "loss n%zu K%d: scale 0.5 == 0.5 * dz", n, K);
  sf_check_close_f(name, dzh, dzf, nz, 1e-7);
  free(z); free(cw); free(dz); free(fd); free(t); free(lab); free(zf); free(cwf); free(dzf); free(dzh);
}

int main(void)
{
  test_groupnorm(5, 6, 7, 8, 2, 0, 11);
  test_groupnorm(5, 6, 7, 8, 4, 0, 12);
  test_groupnorm(5, 6, 7, 8, 2, 1, 13);
  test_groupnorm(5, 6, 7, 8, 4, 1, 14);
  test_groupnorm(3, 1, 5, 6, 3, 1, 15);
  test_maxpool(3, 2, 3, 2);
  test_loss(60, 4, -1, 21);
  test_loss(63, 4, 2, 22); /* class 2 absent from the labels */
  test_loss(35, 2, -1, 23);
  return sf_test_end();
}
