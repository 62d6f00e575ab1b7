/* Finite-difference gradient checks of the reference convolution kernels (3x3x3 conv, 1x1x1 conv,
 * transposed conv k2 s2) on tiny odd shapes. The test carries its own double-precision forward and
 * analytic backward of each op (the same maths as the _ref kernels) and checks, for the scalar
 * objective L = sum(y * r) with random r:
 *   - float _ref forward          == double forward            (<= 1e-6 relative)
 *   - double analytic dX, dW, db  == central differences of L  (<= 1e-9; L is linear, so FD is exact
 *                                                               up to rounding)
 *   - float _ref dX, dW, db       == central differences       (<= 1e-5)
 *   - float _ref dX, dW, db       == double analytic           (<= 1e-5)
 * The _ref backward gets dy = r and (for dW, db) a zero accumulator. */
#include <math.h>
#include <stdio.h>

#include "convtest.h"
#include "scaffold/ops.h"
#include "testutil.h"

enum op { OP_CONV3, OP_CONV1, OP_UP };

typedef struct {
  enum op op;
  int D, H, W, Ci, Co; /* conv1: n = D*H*W voxels */
  double *x, *w, *b, *r, *y;
} problem;

static size_t nvox(const problem *p) { return (size_t)p->D * p->H * p->W; }
static size_t ny(const problem *p) { return nvox(p) * p->Co * (p->op == OP_UP ? 8 : 1); }
static size_t nwt(const problem *p) { return (size_t)p->Ci * p->Co * (p->op == OP_CONV3 ? 27 : p->op == OP_UP ? 8 : 1); }

/* ---- double-precision maths ---------------------------------------------------------------- */

static int inside(const problem *p, int d, int h, int w) { return d >= 0 && d < p->D && h >= 0 && h < p->H && w >= 0 && w < p->W; }
static size_t vidx(const problem *p, int d, int h, int w) { return ((size_t)d * p->H + h) * p->W + w; }
/* output child (a,p,q) of input voxel (d,h,w) of the transposed conv */
static size_t uidx(const problem *p, int d, int h, int w, int k)
{
  return (((size_t)2 * d + (k >> 2)) * 2 * p->H + 2 * h + ((k >> 1) & 1)) * 2 * p->W + 2 * w + (k & 1);
}

static void forward_d(const problem *p, double *y)
{
  int Ci = p->Ci, Co = p->Co;
  for (size_t i = 0; i < ny(p); i++) y[i] = p->op == OP_CONV3 ? 0.0 : p->b[i % Co];
  for (int d = 0; d < p->D; d++)
    for (int h = 0; h < p->H; h++)
      for (int w = 0; w < p->W; w++) {
        size_t v = vidx(p, d, h, w);
        if (p->op == OP_CONV1) {
          for (int ci = 0; ci < Ci; ci++)
            for (int co = 0; co < Co; co++) y[v * Co + co] += p->x[v * Ci + ci] * p->w[ci * Co + co];
        } else if (p->op == OP_UP) {
          for (int k = 0; k < 8; k++)
            for (int ci = 0; ci < Ci; ci++)
              for (int co = 0; co < Co; co++)
                y[uidx(p, d, h, w, k) * Co + co] += p->x[v * Ci + ci] * p->w[(ci * 8 + k) * Co + co];
        } else {
          for (int k = 0; k < 27; k++) {
            int dd = d + k / 9 - 1, hh = h + k / 3 % 3 - 1, ww = w + k % 3 - 1;
            if (!inside(p, dd, hh, ww)) continue;
            size_t u = vidx(p, dd, hh, ww);
            for (int ci = 0; ci < Ci; ci++)
              for (int co = 0; co < Co; co++) y[v * Co + co] += p->x[u * Ci + ci] * p->w[(k * Ci + ci) * Co + co];
          }
        }
      }
}

/* dx, dw, db (written) of L = sum(y * g) */
static void backward_d(const problem *p, const double *g, double *dx, double *dw, double *db)
{
  int Ci = p->Ci, Co = p->Co;
  memset(dx, 0, sizeof(double) * nvox(p) * Ci);
  memset(dw, 0, sizeof(double) * nwt(p));
  if (db) memset(db, 0, sizeof(double) * Co);
  if (db)
    for (size_t i = 0; i < ny(p); i++) db[i % Co] += g[i];
  for (int d = 0; d < p->D; d++)
    for (int h = 0; h < p->H; h++)
      for (int w = 0; w < p->W; w++) {
        size_t v = vidx(p, d, h, w);
        int nk = p->op == OP_CONV3 ? 27 : p->op == OP_UP ? 8 : 1;
        for (int k = 0; k < nk; k++) {
          size_t xin, yout; /* the (input voxel, output voxel) pair that tap k connects */
          if (p->op == OP_CONV1) {
            xin = v;
            yout = v;
          } else if (p->op == OP_UP) {
            xin = v;
            yout = uidx(p, d, h, w, k);
          } else {
            int dd = d + k / 9 - 1, hh = h + k / 3 % 3 - 1, ww = w + k % 3 - 1;
            if (!inside(p, dd, hh, ww)) continue;
            xin = vidx(p, dd, hh, ww);
            yout = v;
          }
          for (int ci = 0; ci < Ci; ci++)
            for (int co = 0; co < Co; co++) {
              size_t wi = ((size_t)k * Ci + ci) * Co + co;
              if (p->op == OP_UP) wi = ((size_t)ci * 8 + k) * Co + co;
              dx[xin * Ci + ci] += g[yout * Co + co] * p->w[wi];
              dw[wi] += p->x[xin * Ci + ci] * g[yout * Co + co];
            }
        }
      }
}

static double objective(const problem *p)
{
  forward_d(p, p->y);
  double L = 0;
  for (size_t i = 0; i < ny(p); i++) L += p->y[i] * p->r[i];
  return L;
}

/* g[i] = central difference of L along param[i] */
static void fd(problem *p, double *param, size_t n, double *g)
{
  const double h = 1e-3;
  for (size_t i = 0; i < n; i++) {
    double keep = param[i];
    param[i] = keep + h;
    double Lp = objective(p);
    param[i] = keep - h;
    double Lm = objective(p);
    param[i] = keep;
    g[i] = (Lp - Lm) / (2 * h);
  }
}

/* ---- the check ------------------------------------------------------------------------------ */

static void check(enum op op, int D, int H, int W, int Ci, int Co, uint64_t seed)
{
  static const char *names[] = {"conv3d", "conv1", "upconv3d"};
  char tag[96], nm[160];
  snprintf(tag, sizeof tag, "%s %dx%dx%d %d->%d", names[op], D, H, W, Ci, Co);
  problem p = {op, D, H, W, Ci, Co, 0, 0, 0, 0, 0};
  size_t nx = nvox(&p) * Ci, nyv = ny(&p), nw = nwt(&p);
  float *xf = ct_rand(nx, seed), *wf = ct_rand(nw, seed + 1), *bf = ct_rand(Co, seed + 2), *rf = ct_rand(nyv, seed + 3);
  p.x = ct_to_double(xf, nx);
  p.w = ct_to_double(wf, nw);
  p.b = ct_to_double(bf, Co);
  p.r = ct_to_double(rf, nyv);
  p.y = sf_malloc(sizeof(double) * nyv, "y");

  /* forward: float ref vs double */
  float *yf = ct_zeros(nyv);
  if (op == OP_CONV3) sf_conv3d_forward_ref(yf, NULL, xf, NULL, wf, D, H, W, Ci, Co);
  if (op == OP_CONV1) sf_conv1_forward_ref(yf, xf, wf, bf, nvox(&p), Ci, Co);
  if (op == OP_UP) sf_upconv3d_forward_ref(yf, xf, wf, bf, D, H, W, Ci, Co);
  forward_d(&p, p.y);
  double *yd = ct_to_double(yf, nyv);
  snprintf(nm, sizeof nm, "%s forward ref vs double", tag);
  sf_check_close_d(nm, yd, p.y, nyv, 1e-6);

  /* analytic double backward vs finite differences */
  double *dx = sf_malloc(sizeof(double) * nx, "dx"), *dw = sf_malloc(sizeof(double) * nw, "dw");
  double *db = sf_malloc(sizeof(double) * Co, "db");
  backward_d(&p, p.r, dx, dw, op == OP_CONV3 ? NULL : db);
  double *fdx = sf_malloc(sizeof(double) * nx, "fd dx"), *fdw = sf_malloc(sizeof(double) * nw, "fd dw");
  double *fdb = sf_malloc(sizeof(double) * Co, "fd db");
  fd(&p, p.x, nx, fdx);
  fd(&p, p.w, nw, fdw);
  if (op != OP_CONV3) fd(&p, p.b, Co, fdb);
  snprintf(nm, sizeof nm, "%s dX double analytic vs FD", tag);
  sf_check_close_d(nm, dx, fdx, nx, 1e-9);
  snprintf(nm, sizeof nm, "%s dW double analytic vs FD", tag);
  sf_check_close_d(nm, dw, fdw, nw, 1e-9);
  if (op != OP_CONV3) {
    snprintf(nm, sizeof nm, "%s db double analytic vs FD", tag);
    sf_check_close_d(nm, db, fdb, Co, 1e-9);
  }

  /* float ref backward (dy = r) vs FD and vs double analytic */
  float *dxf = ct_zeros(nx), *dwf = ct_zeros(nw), *dbf = ct_zeros(Co);
  if (op == OP_CONV3) {
    sf_conv3d_backward_data_ref(dxf, NULL, rf, NULL, wf, D, H, W, Ci, Co);
    sf_conv3d_backward_weights_ref(dwf, NULL, xf, NULL, rf, D, H, W, Ci, Co);
  } else if (op == OP_CONV1) {
    sf_conv1_backward_data_ref(dxf, rf, wf, nvox(&p), Ci, Co);
    sf_conv1_backward_weights_ref(dwf, dbf, xf, rf, nvox(&p), Ci, Co);
  } else {
    sf_upconv3d_backward_data_ref(dxf, rf, wf, D, H, W, Ci, Co);
    sf_upconv3d_backward_weights_ref(dwf, dbf, xf, rf, D, H, W, Ci, Co);
  }
  double *dxr = ct_to_double(dxf, nx), *dwr = ct_to_double(dwf, nw), *dbr = ct_to_double(dbf, Co);
  snprintf(nm, sizeof nm, "%s dX ref vs FD", tag);
  sf_check_close_d(nm, dxr, fdx, nx, 1e-5);
  snprintf(nm, sizeof nm, "%s dW ref vs FD", tag);
  sf_check_close_d(nm, dwr, fdw, nw, 1e-5);
  snprintf(nm, sizeof nm, "%s dX ref vs double analytic", tag);
  sf_check_close_d(nm, dxr, dx, nx, 1e-5);
  snprintf(nm, sizeof nm, "%s dW ref vs double analytic", tag);
  sf_check_close_d(nm, dwr, dw, nw, 1e-5);
  if (op != OP_CONV3) {
    snprintf(nm, sizeof nm, "%s db ref vs FD", tag);
    sf_check_close_d(nm, dbr, fdb, Co, 1e-5);
    snprintf(nm, sizeof nm, "%s db ref vs double analytic", tag);
    sf_check_close_d(nm, dbr, db, Co, 1e-5);
  }

  free(xf), free(wf), free(bf), free(rf), free(yf), free(yd), free(dxf), free(dwf), free(dbf);
  free(p.x), free(p.w), free(p.b), free(p.r), free(p.y), free(dx), free(dw), free(db);
  free(fdx), free(fdw), free(fdb), free(dxr), free(dwr), free(dbr);
}

int main(void)
{
  check(OP_CONV3, 5, 6, 7, 3, 5, 10);
  check(OP_CONV3, 3, 1, 4, 2, 3, 20);
  check(OP_CONV3, 1, 1, 1, 2, 2, 30);
  check(OP_CONV1, 5, 6, 7, 4, 3, 40);
  check(OP_CONV1, 1, 1, 1, 2, 5, 50);
  check(OP_UP, 3, 2, 3, 3, 4, 60);
  check(OP_UP, 1, 1, 1, 2, 3, 70);
  return sf_test_end();
}
