/* Transposed convolution, kernel 2, stride 2, with bias, as plain GEMMs with OpenBLAS (NDHWC).
 * Each input voxel v owns its 2x2x2 output children, so with y8[v][k][co] = y[child k of v][co]
 * (k = a*4+p*2+q):
 *   forward: y8[v][8*Cout] = x[v][Cin] . w[Cin][8*Cout], scattered to the children, plus bias
 *   dX:      dx[v][Cin]    = gather(dy)[v][8*Cout] . w^T
 *   dW:      dw[Cin][8*Cout] += x^T . gather(dy);   db += column sums of dy
 * The entry (upconv3d.c) takes this variant where the direct kernels do not win.
 * Voxels are processed in chunks so the y8 buffer (workspace slot 0) stays under SF_UPCONV_BYTES
 * (upconv3d_child.h). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "../common/bias_grad.h"
#include "upconv3d_child.h"
#include "upconv3d_variants.h"

/* y: (2nd,2H,2W,Cout) written; x: (nd,H,W,Cin); w: (Cin,8*Cout); b: (Cout) */
void sf_upconv3d_forward_blas(float *y, const float *x, const float *w, const float *b,
                              int nd, int H, int W, int Cin, int Cout)
{
  size_t nvox = (size_t)nd * H * W;
  if (nvox == 0) return;
  int rows = sf_upconv_chunk_rows(Cout, nvox);
  float *y8 = sf_workspace_floats(0, (size_t)rows * 8 * Cout);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    size_t v1 = sf_min_sz(nvox, v0 + rows);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(v1 - v0), 8 * Cout, Cin, 1.0f, x + v0 * Cin, Cin,
                w, 8 * Cout, 0.0f, y8, 8 * Cout);
    sf_upconv_scatter(y, y8, b, v0, v1, H, W, Cout);
  }
}

/* dx: (nd,H,W,Cin) written from dy: (2nd,2H,2W,Cout) */
void sf_upconv3d_backward_data_blas(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin, int Cout)
{
  size_t nvox = (size_t)nd * H * W;
  if (nvox == 0) return;
  int rows = sf_upconv_chunk_rows(Cout, nvox);
  float *g8 = sf_workspace_floats(0, (size_t)rows * 8 * Cout);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    size_t v1 = sf_min_sz(nvox, v0 + rows);
    sf_upconv_gather(g8, dy, v0, v1, H, W, Cout);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(v1 - v0), Cin, 8 * Cout, 1.0f, g8, 8 * Cout, w,
                8 * Cout, 0.0f, dx + v0 * Cin, Cin);
  }
}

/* dw: (Cin,8*Cout) += x^T . gather(dy); db: (Cout) += sum of dy: (2nd,2H,2W,Cout) */
void sf_upconv3d_backward_weights_blas(float *dw, float *db, const float *x, const float *dy,
                                       int nd, int H, int W, int Cin, int Cout)
{
  size_t nvox = (size_t)nd * H * W;
  if (nvox == 0) return;
  int rows = sf_upconv_chunk_rows(Cout, nvox);
  float *g8 = sf_workspace_floats(0, (size_t)rows * 8 * Cout);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    size_t v1 = sf_min_sz(nvox, v0 + rows);
    sf_upconv_gather(g8, dy, v0, v1, H, W, Cout);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Cin, 8 * Cout, (int)(v1 - v0), 1.0f, x + v0 * Cin, Cin,
                g8, 8 * Cout, 1.0f, dw, 8 * Cout);
  }
  sf_bias_grad_rows(db, dy, 8 * nvox, Cout);
}
