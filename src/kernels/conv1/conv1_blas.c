/* The OpenBLAS variant of the 1x1x1 convolution with bias: cblas_sgemm on row blocks (so BLAS's int
 * sizes never overflow and the output block stays in cache while the bias is added); no scratch.
 * The entry (conv1.c) takes it where the direct kernels do not win. */
#include <cblas.h>
#include <stdlib.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"

#include "../common/bias_grad.h"
#include "conv1_variants.h"

#define CONV1_ROWS 8192 /* voxels per GEMM block */

void sf_conv1_forward_blas(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout)
{
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
  for (size_t r0 = 0; r0 < n; r0 += CONV1_ROWS) {
    int m = (int)sf_min_sz(CONV1_ROWS, n - r0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, Cin, Cout, 1.0f, dy + r0 * Cout, Cout, w, Cout,
                0.0f, dx + r0 * Cin, Cin);
  }
}

void sf_conv1_backward_weights_blas(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin, int Cout)
{
  for (size_t r0 = 0; r0 < n; r0 += CONV1_ROWS) {
    int m = (int)sf_min_sz(CONV1_ROWS, n - r0);
    const float *g = dy + r0 * Cout;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Cin, Cout, m, 1.0f, x + r0 * Cin, Cin, g, Cout, 1.0f,
                dw, Cout);
  }
  sf_bias_grad_rows(db, dy, n, Cout);
}
