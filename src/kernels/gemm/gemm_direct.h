/* Direct (no BLAS) small matrix products for the 1x1x1 and the k2s2 transposed convolutions
 * (conv1_direct.c, upconv3d_direct.c): C (M x N) = init + sum over segments s of A_s . B_s, with
 *   A_s(r, k) = seg[s].a[r*ars + k*aks]     (r < M, k < seg[s].len)
 *   B_s(k, j) = seg[s].b[k*bks + j]          (j < N: contiguous along N)
 *   C(r, j)   = c[r*ldc + j]
 * so one call covers a product whose K dimension is split over scattered pieces (the voxel rows of
 * the transposed conv's weight gradient). Register blocks of up to RMAX rows times two vectors of
 * columns stay in registers over the whole K (one segment: passes of 256); any N (partial last
 * vector). Uses workspace slot 2 (scaffold/workspace.h) to pack far-apart B rows. */
#ifndef SF_GEMM_DIRECT_H
#define SF_GEMM_DIRECT_H

#include <stddef.h>

typedef struct {
  const float *a, *b;
  int len;
} sf_gd_seg;

enum { SF_GD_ZERO, SF_GD_BIAS, SF_GD_ACC }; /* C = 0 + AB; C = bias (N values) + AB; C += AB */

typedef struct {
  const sf_gd_seg *seg;
  int nseg, M, N, init;
  size_t ars, aks, bks, ldc;
  float *c;
  const float *bias;
} sf_gd_problem;

/* Runs p with the active CPU kernel set (sf_cpu_isa_active(); SF_ISA_NONE runs the portable one). */
void sf_gd_run(const sf_gd_problem *p);

/* The same problem with bf16 operands (rounded to nearest even) and fp32 sums on AMX tiles (gemm_amx.c), for
 * torch_amp: 1; needs sf_amx_supported(). Uses workspace slots 2 and 3. */
void sf_gd_run_amx(const sf_gd_problem *p);

/* dst: (cols, rows) = src: (rows, cols)^T, in cache-sized blocks */
void sf_gd_transpose(float *dst, const float *src, size_t rows, size_t cols);

#endif
