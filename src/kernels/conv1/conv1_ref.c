/* The 1x1x1 convolution with bias (OutConv), naive references: the oracles of the conv1 family
 * (contracts in scaffold/ops.h). A 1x1x1 conv in NDHWC is a plain matrix product over voxels:
 * y[n][Cout] = x[n][Cin] . w[Cin][Cout] + b. */
#include <stdlib.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"

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
