/* GroupNorm (affine, G groups) in partial-sum form, so a volume split into depth slabs gives exactly
 * the untiled result: forward = stats over every slab (reduced) + normalize each slab; backward =
 * per-slab sums (reduced) + per-slab dx. Statistics are double; mean/var/rstd are formed in double
 * from the global sums (population variance, m = ntotal*C/G values per group). relu != 0 fuses the
 * ReLU that follows every GroupNorm in the U-Net. Per-channel coefficients are folded first so the
 * voxel loops are plain a*x+b loops that GCC vectorises. Layout (n,C) = NDHWC voxels x channels.
 * The backward equals PyTorch's GroupNorm backward (dx = c1*dy + c2*x + c3 per group/channel). These are the
 * reference kernels; the codelets run the vector ones of groupnorm_vec.c, which share the coefficients below. */
#include <math.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "groupnorm_internal.h"

#define GN_WS_SLOT SF_GN_WS_SLOT

void sf_gn_group_moments(double *mean, double *rstd, const double *stats, int g, size_t ntotal, int cpg, float eps)
{
  const double m = (double)ntotal * (double)cpg;
  double mu = stats[2 * g] / m;
  double var = stats[2 * g + 1] / m - mu * mu;
  if (var < 0) var = 0; /* rounding can make a constant group slightly negative */
  *mean = mu;
  *rstd = 1.0 / sqrt(var + (double)eps);
}

void sf_gn_forward_coefs(float *a, float *b, const double *stats, const float *gamma, const float *beta,
                         size_t ntotal, int C, int G, float eps)
{
  const int cpg = C / G;
  for (int g = 0; g < G; g++) {
    double mean, rstd;
    sf_gn_group_moments(&mean, &rstd, stats, g, ntotal, cpg, eps);
    for (int c = g * cpg; c < (g + 1) * cpg; c++) {
      double sc = (double)gamma[c] * rstd;
      a[c] = (float)sc;
      b[c] = (float)((double)beta[c] - mean * sc);
    }
  }
}

/* A = rstd*gamma, B = -rstd^2*S2/m, K = -rstd*S1/m - B*mean, with S1, S2 the group's gsums */
void sf_gn_backward_data_coefs(float *A, float *B, float *K, const double *stats, const double *gsums,
                               const float *gamma, size_t ntotal, int C, int G, float eps)
{
  const int cpg = C / G;
  const double m = (double)ntotal * (double)cpg;
  for (int g = 0; g < G; g++) {
    double mean, r;
    sf_gn_group_moments(&mean, &r, stats, g, ntotal, cpg, eps);
    double bg = -r * r * gsums[2 * g + 1] / m;
    for (int c = g * cpg; c < (g + 1) * cpg; c++) {
      A[c] = (float)(r * (double)gamma[c]);
      B[c] = (float)bg;
      K[c] = (float)(-r * gsums[2 * g] / m - bg * mean);
    }
  }
}

/* xhat = (x-mean)*rstd and dxhat = dy'*gamma are linear in the per-channel sums, so the slab contributions
 * add up exactly as the untiled sums. */
void sf_gn_backward_stats_finish(double *gsums, double *dgb, const double *sdy, const double *sdyx,
                                 const double *stats, const float *gamma, size_t ntotal, int C, int G, float eps)
{
  const int cpg = C / G;
  for (int g = 0; g < G; g++) {
    double mean, rstd;
    sf_gn_group_moments(&mean, &rstd, stats, g, ntotal, cpg, eps);
    for (int c = g * cpg; c < (g + 1) * cpg; c++) {
      double dgamma = rstd * (sdyx[c] - mean * sdy[c]); /* sum dy' * xhat */
      dgb[2 * c] += dgamma;
      dgb[2 * c + 1] += sdy[c];
      gsums[2 * g] += (double)gamma[c] * sdy[c];
      gsums[2 * g + 1] += (double)gamma[c] * dgamma;
    }
  }
}

/* stats: (G,2) += per-group [sum x, sum x^2] over x: (n,C). */
void sf_groupnorm_stats_ref(double *stats, const float *x, size_t n, int C, int G)
{
  SF_ASSERT(G > 0 && C % G == 0);
  const int cpg = C / G;
  double *s = (double *)sf_workspace_floats(GN_WS_SLOT, 4 * (size_t)C); /* s[C], q[C] */
  double *q = s + C;
  memset(s, 0, 2 * (size_t)C * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    const float *restrict xi = x + i * C;
    double *restrict sr = s, *restrict qr = q;
    for (int c = 0; c < C; c++) {
      double v = xi[c];
      sr[c] += v;
      qr[c] += v * v;
    }
  }
  for (int c = 0; c < C; c++) {
    stats[2 * (c / cpg)] += s[c];
    stats[2 * (c / cpg) + 1] += q[c];
  }
}

/* y: (n,C) written = [relu](gamma*(x-mean)*rstd + beta), folded into y = a[c]*x + b[c]. */
void sf_groupnorm_forward_ref(float *y, const float *x, const double *stats, const float *gamma,
                              const float *beta, size_t n, size_t ntotal, int C, int G, float eps, int relu)
{
  SF_ASSERT(G > 0 && C % G == 0);
  float *a = sf_workspace_floats(GN_WS_SLOT, 2 * (size_t)C), *b = a + C;
  sf_gn_forward_coefs(a, b, stats, gamma, beta, ntotal, C, G, eps);
  for (size_t i = 0; i < n; i++) {
    const float *restrict xi = x + i * C;
    float *restrict yi = y + i * C;
    const float *restrict ar = a, *restrict br = b;
    if (relu) {
      for (int c = 0; c < C; c++) {
        float v = xi[c] * ar[c] + br[c];
        yi[c] = v < 0.0f ? 0.0f : v; /* NaN propagates like torch.relu */
      }
    } else {
      for (int c = 0; c < C; c++) yi[c] = xi[c] * ar[c] + br[c];
    }
  }
}

/* m = dy masked by y > 0 (one voxel row) */
static inline void mask_row(float *restrict m, const float *restrict dy, const float *restrict y, int C)
{
  for (int c = 0; c < C; c++) m[c] = y[c] > 0.0f ? dy[c] : 0.0f;
}

/* s1 += d, s2 += d*x in double (one voxel row) */
static inline void accumulate_row(double *restrict s1, double *restrict s2, const float *restrict d,
                                  const float *restrict x, int C)
{
  for (int c = 0; c < C; c++) {
    double v = d[c];
    s1[c] += v;
    s2[c] += v * (double)x[c];
  }
}

/* gsums: (G,2) += [sum dxhat, sum dxhat*xhat]; dgb: (C,2) += [sum dy'*xhat, sum dy'] over the slab.
 * Per channel we sum dy' and dy'*x in double (sf_gn_backward_stats_finish turns them into the above). */
void sf_groupnorm_backward_stats_ref(double *gsums, double *dgb, const float *dy, const float *y,
                                     const float *x, const double *stats, const float *gamma,
                                     size_t n, size_t ntotal, int C, int G, float eps, int relu)
{
  SF_ASSERT(G > 0 && C % G == 0);
  double *sdy = (double *)sf_workspace_floats(GN_WS_SLOT, 5 * (size_t)C);
  double *sdyx = sdy + C;
  float *masked = (float *)(sdyx + C); /* dy' of one voxel when relu (keeps both loops vectorisable) */
  memset(sdy, 0, 2 * (size_t)C * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    const float *d = dy + i * C;
    if (relu) {
      mask_row(masked, d, y + i * C, C);
      d = masked;
    }
    accumulate_row(sdy, sdyx, d, x + i * C, C);
  }
  sf_gn_backward_stats_finish(gsums, dgb, sdy, sdyx, stats, gamma, ntotal, C, G, eps);
}

/* dx: (n,C) written = rstd*(dxhat - (S1 + xhat*S2)/m), folded into dx = A[c]*dy' + B[c]*x + K[c]
 * (sf_gn_backward_data_coefs: the form PyTorch's kernel uses). */
void sf_groupnorm_backward_data_ref(float *dx, const float *dy, const float *y, const float *x,
                                    const double *stats, const double *gsums, const float *gamma,
                                    size_t n, size_t ntotal, int C, int G, float eps, int relu)
{
  SF_ASSERT(G > 0 && C % G == 0);
  float *A = sf_workspace_floats(GN_WS_SLOT, 3 * (size_t)C), *B = A + C, *K = B + C;
  sf_gn_backward_data_coefs(A, B, K, stats, gsums, gamma, ntotal, C, G, eps);
  for (size_t i = 0; i < n; i++) {
    const float *restrict dyi = dy + i * C, *restrict xi = x + i * C;
    const float *restrict Ar = A, *restrict Br = B, *restrict Kr = K;
    float *restrict dxi = dx + i * C;
    if (relu) {
      const float *restrict yi = y + i * C;
      for (int c = 0; c < C; c++) {
        float d = yi[c] > 0.0f ? dyi[c] : 0.0f;
        dxi[c] = Ar[c] * d + Br[c] * xi[c] + Kr[c];
      }
    } else {
      for (int c = 0; c < C; c++) dxi[c] = Ar[c] * dyi[c] + Br[c] * xi[c] + Kr[c];
    }
  }
}

/* dgamma, dbeta: (C) += the reduced dgb: (C,2). */
void sf_groupnorm_param_grads(float *dgamma, float *dbeta, const double *dgb, int C)
{
  for (int c = 0; c < C; c++) {
    dgamma[c] += (float)dgb[2 * c];
    dbeta[c] += (float)dgb[2 * c + 1];
  }
}
