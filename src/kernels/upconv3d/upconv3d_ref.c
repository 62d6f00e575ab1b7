/* Naive transposed convolution, kernel 2, stride 2, with bias (the U-Net's Up path): the oracle.
 * Every output voxel reads exactly one input voxel:
 *   y[2d+a][2h+p][2w+q][co] = b[co] + sum_ci x[d][h][w][ci] * w[ci][a][p][q][co]
 * so slabs need no halo: input slab planes [d0, d0+nd) produce output planes [2d0, 2d0+2nd).
 * H, W are the INPUT sizes. Double accumulators; speed is irrelevant here. */
#include <stdlib.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"

/* Offset of output voxel (2d+a, 2h+p, 2w+q) in a (2nd,2H,2W,C) tensor. */
static size_t up_index(int d, int h, int w, int a, int p, int q, int H, int W, int C)
{
  return ((((size_t)2 * d + a) * 2 * H + 2 * h + p) * 2 * W + 2 * w + q) * C;
}

/* y: (2nd,2H,2W,Cout) written; x: (nd,H,W,Cin); w: (Cin,2,2,2,Cout); b: (Cout) */
void sf_upconv3d_forward_ref(float *y, const float *x, const float *w, const float *b,
                             int nd, int H, int W, int Cin, int Cout)
{
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int x0 = 0; x0 < W; x0++) {
        const float *xi = x + (((size_t)d * H + h) * W + x0) * Cin;
        for (int k = 0; k < 8; k++) {
          float *yo = y + up_index(d, h, x0, k >> 2, (k >> 1) & 1, k & 1, H, W, Cout);
          for (int co = 0; co < Cout; co++) {
            double acc = b[co];
            for (int ci = 0; ci < Cin; ci++) acc += (double)xi[ci] * w[((size_t)ci * 8 + k) * Cout + co];
            yo[co] = (float)acc;
          }
        }
      }
}

/* dx: (nd,H,W,Cin) written: dx[d][h][w][ci] = sum_{a,p,q,co} dy[2d+a][2h+p][2w+q][co] * w[ci][a][p][q][co] */
void sf_upconv3d_backward_data_ref(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin, int Cout)
{
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int x0 = 0; x0 < W; x0++) {
        float *o = dx + (((size_t)d * H + h) * W + x0) * Cin;
        for (int ci = 0; ci < Cin; ci++) {
          double acc = 0.0;
          for (int k = 0; k < 8; k++) {
            const float *g = dy + up_index(d, h, x0, k >> 2, (k >> 1) & 1, k & 1, H, W, Cout);
            for (int co = 0; co < Cout; co++) acc += (double)g[co] * w[((size_t)ci * 8 + k) * Cout + co];
          }
          o[ci] = (float)acc;
        }
      }
}

/* dw: (Cin,2,2,2,Cout) += sum_v x[v][ci] * dy[child k of v][co]; db: (Cout) += sum of dy over all voxels */
void sf_upconv3d_backward_weights_ref(float *dw, float *db, const float *x, const float *dy,
                                      int nd, int H, int W, int Cin, int Cout)
{
  size_t nw = (size_t)Cin * 8 * Cout;
  double *acc = sf_calloc(nw, sizeof(double), "upconv ref weight-gradient accumulators");
  double *bacc = sf_calloc((size_t)Cout, sizeof(double), "upconv ref bias-gradient accumulators");
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int x0 = 0; x0 < W; x0++) {
        const float *xi = x + (((size_t)d * H + h) * W + x0) * Cin;
        for (int k = 0; k < 8; k++) {
          const float *g = dy + up_index(d, h, x0, k >> 2, (k >> 1) & 1, k & 1, H, W, Cout);
          for (int co = 0; co < Cout; co++) bacc[co] += g[co];
          for (int ci = 0; ci < Cin; ci++)
            for (int co = 0; co < Cout; co++) acc[((size_t)ci * 8 + k) * Cout + co] += (double)xi[ci] * g[co];
        }
      }
  for (size_t i = 0; i < nw; i++) dw[i] += (float)acc[i];
  for (int co = 0; co < Cout; co++) db[co] += (float)bacc[co];
  free(acc);
  free(bacc);
}
