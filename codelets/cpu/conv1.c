/* 1x1x1 convolution with bias (OutConv), naive reference and OpenBLAS variant; the latter hands
 * over to the direct kernels of conv1_direct.c where sf_conv1_direct_wins().
 * A 1x1x1 conv in NDHWC is a plain matrix product over voxels: y[n][Cout] = x[n][Cin] . w[Cin][Cout] + b.
 * The _blas variant runs cblas_sgemm on row blocks (so BLAS's int sizes never overflow and the
 * output block stays in cache while the bias is added); it needs no scratch. */
#include <cblas.h>
#include <stdlib.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"

#define CONV1_ROWS 8192 /* voxels per GEMM block */

/* ---- reference ---------------------------------------------------------------------------- */

/* y: (n,Cout) written; x: (n,Cin); w: (Cin,Cout); b: (Cout) */
void sf_conv1_forward_ref(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout)
{
  for (size_t i = 0; i < n; i++)
    for (int co = 0; co < Cout; co++) {
      double acc = b[co];
      for (int ci = 0; ci < Cin; ci++) acc += (double)x[i * Cin + ci] * w[(size_t)ci * Cout + co];
      y[i * Cout + co] = (float)acc;
    }
}

/* dx: (n,Cin) written = dy: (n,Cout) . w^T */
void sf_conv1_backward_data_ref(float *dx, const float *dy, const float *w, size_t n, int Cin, int Cout)
{
  for (size_t i = 0; i < n; i++)
    for (int ci = 0; ci < Cin; ci++) {
      double acc = 0.0;
      for (int co = 0; co < Cout; co++) acc += (double)dy[i * Cout + co] * w[(size_t)ci * Cout + co];
      dx[i * Cin + ci] = (float)acc;
    }
}

/* dw: (Cin,Cout) += x^T . dy; db: (Cout) += column sums of dy */
void sf_conv1_backward_weights_ref(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin, int Cout)
{
  for (int ci = 0; ci < Cin; ci++)
    for (int co = 0; co < Cout; co++) {
      double acc = 0.0;
      for (size_t i = 0; i < n; i++) acc += (double)x[i * Cin + ci] * dy[i * Cout + co];
      dw[(size_t)ci * Cout + co] += (float)acc;
    }
  for (int co = 0; co < Cout; co++) {
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) acc += dy[i * Cout + co];
    db[co] += (float)acc;
  }
}

/* ---- OpenBLAS ----------------------------------------------------------------------------- */

void sf_conv1_forward_blas(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout)
{
  if (sf_conv1_direct_wins(Cin, Cout)) {
    sf_conv1_forward_direct(y, x, w, b, n, Cin, Cout);
    return;
  }
  for (size_t r0 = 0; r0 < n; r0 += CONV1_ROWS) {
    int m = (int)sf_min_sz(CONV1_ROWS, n - r0);
    float *yb = y + r0 * Cout;
    for (int i = 0; i < m; i++)
      for (int co = 0; co < Cout; co++) yb[(size_t)i * Cout + co] = b[co];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, Cout, Cin, 1.0f, x + r0 * Cin, Cin, w, Cout,
                1.0f, yb, Cout);
  }
}

void sf_conv1_backward_data_blas(float *dx, const float *dy, const float *w, size_t n, int Cin, int Cout)
{
  if (sf_conv1_direct_wins(Cin, Cout)) {
    sf_conv1_backward_data_direct(dx, dy, w, n, Cin, Cout);
    return;
  }
  for (size_t r0 = 0; r0 < n; r0 += CONV1_ROWS) {
    int m = (int)sf_min_sz(CONV1_ROWS, n - r0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, Cin, Cout, 1.0f, dy + r0 * Cout, Cout, w, Cout,
                0.0f, dx + r0 * Cin, Cin);
  }
}

void sf_conv1_backward_weights_blas(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin, int Cout)
{
  if (sf_conv1_direct_wins(Cin, Cout)) {
    sf_conv1_backward_weights_direct(dw, db, x, dy, n, Cin, Cout);
    return;
  }
  for (size_t r0 = 0; r0 < n; r0 += CONV1_ROWS) {
    int m = (int)sf_min_sz(CONV1_ROWS, n - r0);
    const float *g = dy + r0 * Cout;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Cin, Cout, m, 1.0f, x + r0 * Cin, Cin, g, Cout, 1.0f,
                dw, Cout);
  }
  sf_bias_grad_rows(db, dy, n, Cout);
}

/* acc[c] += g[i][c0 + c] over the n rows in order, c < m: a fixed m lets the compiler keep acc in vector registers
 * (the sums in memory were a store-to-load chain per row: 3 GB/s) */
static inline __attribute__((always_inline)) void bias_sums(double *restrict acc, const float *restrict g, size_t n,
                                                           int C, int c0, const int m)
{
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < m; c++) acc[c] += g[i * C + c0 + c];
}

#define BIAS_GROUP 32 /* channels summed per pass over the rows */

/* db: (C) += column sums of g: (n, C), each a running double sum in row order (the same bits on every path) */
void sf_bias_grad_rows(float *db, const float *g, size_t n, int C)
{
  for (int c0 = 0; c0 < C; c0 += BIAS_GROUP) {
    int m = C - c0 < BIAS_GROUP ? C - c0 : BIAS_GROUP;
    double acc[BIAS_GROUP] = {0};
    if (m == 32) bias_sums(acc, g, n, C, c0, 32);
    else if (m == 16) bias_sums(acc, g, n, C, c0, 16);
    else if (m == 8) bias_sums(acc, g, n, C, c0, 8);
    else bias_sums(acc, g, n, C, c0, m);
    for (int c = 0; c < m; c++) db[c0 + c] += (float)acc[c];
  }
}
