/* Transposed convolution, kernel 2, stride 2, with bias, with the direct small-GEMM kernel
 * (gemm_direct.h) instead of cblas_sgemm. Forward and dX stage a chunk of voxels' children as the
 * sgemm kernels do (y8/g8, upconv3d_child.h), so one product spans many input rows and each weight
 * block is reused over the chunk (per-row products, with W = 2..8 at the deep levels, re-read the
 * weights every few voxels and ran at 5-40% of sgemm). dW reads the children in place: per input
 * row (d,h) and child pair (a,p) the children of the row's W voxels are 2*Cout floats apart, so
 *   dW: dw[:, (a,p) block] (Cin, 2Cout) += sum over rows of x_row^T (Cin, W) . dy[children (a,p)] (W, 2Cout)
 * with the rows as the segments of one product (gemm_direct.h).
 * Same contracts as the references (scaffold/ops.h). The _direct_amx variants run the same products with bf16
 * operands and fp32 sums on AMX tiles (torch_amp: 1) through sf_gd_run_amx; the entry (upconv3d.c) takes them
 * where the in-place AMX kernels (upconv3d_amx.c) do not fit. */
#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "../gemm/gemm_direct.h"
#include "../common/bias_grad.h"
#include "upconv3d_variants.h"
#include "upconv3d_child.h"

#define UPCONV_DW_VOXELS 256 /* input voxels per dW block (whole rows): dw is re-read once per block */
#define UPCONV_DW_MAX_ROWS UPCONV_DW_VOXELS

typedef void (*gd_runner)(const sf_gd_problem *); /* sf_gd_run (fp32) or sf_gd_run_amx (bf16 operands) */

static void upconv_forward(gd_runner run, float *y, const float *x, const float *w, const float *b, int nd, int H,
                           int W, int Cin, int Cout)
{
  size_t nvox = (size_t)nd * H * W;
  if (nvox == 0) return;
  int rows = sf_upconv_chunk_rows(Cout, nvox);
  float *y8 = sf_workspace_floats(0, (size_t)rows * 8 * Cout);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    size_t v1 = sf_min_sz(nvox, v0 + rows);
    sf_gd_seg seg = {x + v0 * Cin, w, Cin};
    sf_gd_problem p = {.seg = &seg, .nseg = 1, .M = (int)(v1 - v0), .N = 8 * Cout, .init = SF_GD_ZERO,
                       .ars = (size_t)Cin, .aks = 1, .bks = (size_t)8 * Cout, .ldc = (size_t)8 * Cout, .c = y8};
    run(&p);
    sf_upconv_scatter(y, y8, b, v0, v1, H, W, Cout);
  }
}

/* w^T: (8*Cout, Cin) copied once (workspace slot 1), so its rows are contiguous along Cin */
static void upconv_backward_data(gd_runner run, float *dx, const float *dy, const float *w, int nd, int H, int W,
                                 int Cin, int Cout)
{
  size_t nvox = (size_t)nd * H * W, n8 = (size_t)8 * Cout;
  if (nvox == 0) return;
  int rows = sf_upconv_chunk_rows(Cout, nvox);
  float *g8 = sf_workspace_floats(0, (size_t)rows * n8), *wt = sf_workspace_floats(1, n8 * Cin);
  sf_gd_transpose(wt, w, (size_t)Cin, n8);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    size_t v1 = sf_min_sz(nvox, v0 + rows);
    sf_upconv_gather(g8, dy, v0, v1, H, W, Cout);
    sf_gd_seg seg = {g8, wt, (int)n8};
    sf_gd_problem p = {.seg = &seg, .nseg = 1, .M = (int)(v1 - v0), .N = Cin, .init = SF_GD_ZERO,
                       .ars = n8, .aks = 1, .bks = (size_t)Cin, .ldc = (size_t)Cin, .c = dx + v0 * Cin};
    run(&p);
  }
}

static void upconv_backward_weights(gd_runner run, float *dw, float *db, const float *x, const float *dy, int nd,
                                    int H, int W, int Cin, int Cout)
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
      run(&p);
    }
  }
  sf_bias_grad_rows(db, dy, (size_t)8 * nd * H * W, Cout);
}

void sf_upconv3d_forward_direct(float *y, const float *x, const float *w, const float *b, int nd, int H, int W,
                                int Cin, int Cout)
{
  upconv_forward(sf_gd_run, y, x, w, b, nd, H, W, Cin, Cout);
}

void sf_upconv3d_backward_data_direct(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                      int Cout)
{
  upconv_backward_data(sf_gd_run, dx, dy, w, nd, H, W, Cin, Cout);
}

void sf_upconv3d_backward_weights_direct(float *dw, float *db, const float *x, const float *dy, int nd, int H,
                                         int W, int Cin, int Cout)
{
  upconv_backward_weights(sf_gd_run, dw, db, x, dy, nd, H, W, Cin, Cout);
}

/* The same products with bf16 operands and fp32 sums on AMX tiles through sf_gd_run_amx, for the bf16
 * shapes that the in-place AMX kernels (upconv3d_amx.c) do not fit */
void sf_upconv3d_forward_direct_amx(float *y, const float *x, const float *w, const float *b, int nd, int H, int W,
                                    int Cin, int Cout)
{
  upconv_forward(sf_gd_run_amx, y, x, w, b, nd, H, W, Cin, Cout);
}

void sf_upconv3d_backward_data_direct_amx(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                          int Cout)
{
  upconv_backward_data(sf_gd_run_amx, dx, dy, w, nd, H, W, Cin, Cout);
}

void sf_upconv3d_backward_weights_direct_amx(float *dw, float *db, const float *x, const float *dy, int nd, int H,
                                             int W, int Cin, int Cout)
{
  upconv_backward_weights(sf_gd_run_amx, dw, db, x, dy, nd, H, W, Cin, Cout);
}
