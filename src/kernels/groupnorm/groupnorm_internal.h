/* GroupNorm's per-channel coefficients and the finishing of the backward sums, shared by the reference
 * kernels (src/kernels/groupnorm/groupnorm_ref.c) and the vector ones (groupnorm_vec.c), so both fold the statistics
 * the same way. Private to the kernels layer. */
#ifndef SF_GROUPNORM_INTERNAL_H
#define SF_GROUPNORM_INTERNAL_H

#include <stddef.h>

#include "scaffold/workspace.h"

#define SF_GN_WS_SLOT (SF_WORKSPACE_SLOTS - 1) /* the element-wise kernels' workspace slot */

/* Mean and rstd of group g from the global (sum, sumsq): (G,2), population ntotal*cpg values. */
void sf_gn_group_moments(double *mean, double *rstd, const double *stats, int g, size_t ntotal, int cpg,
                         float eps);
/* a, b: (C) written, so that gn(x) = a[c]*x + b[c] */
void sf_gn_forward_coefs(float *a, float *b, const double *stats, const float *gamma, const float *beta,
                         size_t ntotal, int C, int G, float eps);
/* A, B, K: (C) written, so that dx = A[c]*dy' + B[c]*x + K[c] (PyTorch's form; see groupnorm.c) */
void sf_gn_backward_data_coefs(float *A, float *B, float *K, const double *stats, const double *gsums,
                               const float *gamma, size_t ntotal, int C, int G, float eps);
/* Adds a slab's per-channel sums sdy = sum dy', sdyx = sum dy'*x: (C) into gsums: (G,2) and dgb: (C,2). */
void sf_gn_backward_stats_finish(double *gsums, double *dgb, const double *sdy, const double *sdyx,
                                 const double *stats, const float *gamma, size_t ntotal, int C, int G, float eps);

#endif
