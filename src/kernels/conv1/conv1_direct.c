/* 1x1x1 convolution with bias (OutConv) with the direct small-GEMM kernel (gemm_direct.h) instead
 * of cblas_sgemm, so it runs at the CPU's vector width even where OpenBLAS falls back to its
 * generic cores. Same contracts as the references (scaffold/ops.h); the entry, conv1.c, says where it runs. */
#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "../common/bias_grad.h"
#include "../gemm/gemm_direct.h"
#include "conv1_variants.h"

#define CONV1_DIRECT_ROWS 1024 /* voxels per forward/dX block: x and y of a block stay in L2 */
#define CONV1_DIRECT_DW_ROWS 256 /* voxels per dW block: dw is re-read once per block */

void sf_conv1_forward_direct(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout)
{
  for (size_t r0 = 0; r0 < n; r0 += CONV1_DIRECT_ROWS) {
    sf_gd_seg seg = {x + r0 * Cin, w, Cin};
    sf_gd_problem p = {.seg = &seg, .nseg = 1, .M = (int)sf_min_sz(CONV1_DIRECT_ROWS, n - r0), .N = Cout,
                       .init = SF_GD_BIAS, .ars = (size_t)Cin, .aks = 1, .bks = (size_t)Cout,
                       .ldc = (size_t)Cout, .c = y + r0 * Cout, .bias = b};
    sf_gd_run(&p);
  }
}

/* dx = dy . w^T with w^T: (Cout, Cin) copied once (workspace slot 0), so B rows are contiguous */
void sf_conv1_backward_data_direct(float *dx, const float *dy, const float *w, size_t n, int Cin, int Cout)
{
  float *wt = sf_workspace_floats(0, (size_t)Cin * Cout);
  sf_gd_transpose(wt, w, (size_t)Cin, (size_t)Cout);
  for (size_t r0 = 0; r0 < n; r0 += CONV1_DIRECT_ROWS) {
    sf_gd_seg seg = {dy + r0 * Cout, wt, Cout};
    sf_gd_problem p = {.seg = &seg, .nseg = 1, .M = (int)sf_min_sz(CONV1_DIRECT_ROWS, n - r0), .N = Cin,
                       .init = SF_GD_ZERO, .ars = (size_t)Cout, .aks = 1, .bks = (size_t)Cin,
                       .ldc = (size_t)Cin, .c = dx + r0 * Cin};
    sf_gd_run(&p);
  }
}

/* dw: (Cin, Cout) += x^T . dy, rows of dw = input channels, K = voxels; db as the _blas kernel */
void sf_conv1_backward_weights_direct(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin,
                                      int Cout)
{
  for (size_t r0 = 0; r0 < n; r0 += CONV1_DIRECT_DW_ROWS) {
    sf_gd_seg seg = {x + r0 * Cin, dy + r0 * Cout, (int)sf_min_sz(CONV1_DIRECT_DW_ROWS, n - r0)};
    sf_gd_problem p = {.seg = &seg, .nseg = 1, .M = Cin, .N = Cout, .init = SF_GD_ACC, .ars = 1,
                       .aks = (size_t)Cin, .bks = (size_t)Cout, .ldc = (size_t)Cout, .c = dw};
    sf_gd_run(&p);
  }
  sf_bias_grad_rows(db, dy, n, Cout);
}
