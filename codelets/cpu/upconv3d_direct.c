/* Transposed convolution, kernel 2, stride 2, with bias, with the direct small-GEMM kernel
 * (gemm_direct.h) instead of cblas_sgemm: no y8/g8 staging buffer, the products read and write the
 * children in place. Per input row (d,h) and child pair (a,p) the children of the row's W voxels
 * are 2*Cout floats apart (upconv3d_child.h), so each is a strided product:
 *   forward: y[children (a,p)] (W, 2Cout) = b + x_row (W, Cin) . w[:, (a,p) block] (Cin, 2Cout)
 *   dX:      dx_row (W, Cin) = sum over (a,p) of dy[children (a,p)] (W, 2Cout) . w^T block (2Cout, Cin)
 *   dW:      dw[:, (a,p) block] (Cin, 2Cout) += sum over rows of x_row^T . dy[children (a,p)]
 * Same contracts as upconv3d_ref.c / upconv3d_blas.c (scaffold/ops.h). */
#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "gemm_direct.h"
#include "upconv3d_child.h"

#define UPCONV_DW_VOXELS 256 /* input voxels per dW block (whole rows): dw is re-read once per block */
#define UPCONV_DW_MAX_ROWS UPCONV_DW_VOXELS

int sf_upconv3d_direct_wins(int Cin, int Cout)
{
  (void)Cin, (void)Cout;
  return sf_cpu_isa_active() != SF_ISA_NONE;
}

void sf_upconv3d_forward_direct(float *y, const float *x, const float *w, const float *b, int nd, int H, int W,
                                int Cin, int Cout)
{
  float *b2 = sf_workspace_floats(0, (size_t)2 * Cout); /* the bias of a child pair (q = 0, 1) */
  for (int c = 0; c < 2 * Cout; c++) b2[c] = b[c % Cout];
  for (size_t v0 = 0; v0 < (size_t)nd * H * W; v0 += W) {
    for (int ap = 0; ap < 4; ap++) {
      sf_gd_seg seg = {x + v0 * Cin, w + (size_t)ap * 2 * Cout, Cin};
      sf_gd_problem p = {.seg = &seg, .nseg = 1, .M = W, .N = 2 * Cout, .init = SF_GD_BIAS,
                         .ars = (size_t)Cin, .aks = 1, .bks = (size_t)8 * Cout, .ldc = (size_t)2 * Cout,
                         .c = y + sf_upconv_child_pair(v0, ap >> 1, ap & 1, H, W, Cout), .bias = b2};
      sf_gd_run(&p);
    }
  }
}

/* w^T: (8*Cout, Cin) copied once (workspace slot 0), so its rows are contiguous along Cin */
void sf_upconv3d_backward_data_direct(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                      int Cout)
{
  size_t n8 = (size_t)8 * Cout;
  float *wt = sf_workspace_floats(0, n8 * Cin);
  for (int ci = 0; ci < Cin; ci++)
    for (size_t k = 0; k < n8; k++) wt[k * Cin + ci] = w[ci * n8 + k];
  for (size_t v0 = 0; v0 < (size_t)nd * H * W; v0 += W) {
    sf_gd_seg seg[4];
    for (int ap = 0; ap < 4; ap++)
      seg[ap] = (sf_gd_seg){dy + sf_upconv_child_pair(v0, ap >> 1, ap & 1, H, W, Cout),
                            wt + (size_t)ap * 2 * Cout * Cin, 2 * Cout};
    sf_gd_problem p = {.seg = seg, .nseg = 4, .M = W, .N = Cin, .init = SF_GD_ZERO, .ars = (size_t)2 * Cout,
                       .aks = 1, .bks = (size_t)Cin, .ldc = (size_t)Cin, .c = dx + v0 * Cin};
    sf_gd_run(&p);
  }
}

void sf_upconv3d_backward_weights_direct(float *dw, float *db, const float *x, const float *dy, int nd, int H,
                                         int W, int Cin, int Cout)
{
  if ((size_t)nd * H * W == 0) return;
  size_t rows = (size_t)nd * H, per = sf_min_sz(rows, (size_t)(UPCONV_DW_VOXELS + W - 1) / W);
  sf_gd_seg seg[UPCONV_DW_MAX_ROWS];
  for (size_t r0 = 0; r0 < rows; r0 += per) {
    int nr = (int)sf_min_sz(per, rows - r0);
    for (int ap = 0; ap < 4; ap++) {
      for (int r = 0; r < nr; r++) {
        size_t v = (r0 + r) * W;
        seg[r] = (sf_gd_seg){x + v * Cin, dy + sf_upconv_child_pair(v, ap >> 1, ap & 1, H, W, Cout), W};
      }
      sf_gd_problem p = {.seg = seg, .nseg = nr, .M = Cin, .N = 2 * Cout, .init = SF_GD_ACC, .ars = 1,
                         .aks = (size_t)Cin, .bks = (size_t)2 * Cout, .ldc = (size_t)8 * Cout,
                         .c = dw + (size_t)ap * 2 * Cout};
      sf_gd_run(&p);
    }
  }
  sf_bias_grad_rows(db, dy, (size_t)8 * nd * H * W, Cout);
}
