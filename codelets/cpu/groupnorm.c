/* GroupNorm (affine, G groups) in partial-sum form, so a volume split into depth slabs gives exactly
 * the untiled result: forward = stats over every slab (reduced) + normalize each slab; backward =
 * per-slab sums (reduced) + per-slab dx. Statistics are double; mean/var/rstd are formed in double
 * from the global sums (population variance, m = ntotal*C/G values per group). relu != 0 fuses the
 * ReLU that follows every GroupNorm in the U-Net. Per-channel coefficients are folded first so the
 * voxel loops are plain a*x+b loops that GCC vectorises. Layout (n,C) = NDHWC voxels x channels.
 * The backward equals PyTorch's GroupNorm backward (dx = c1*dy + c2*x + c3 per group/channel). */
#include <math.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#define GN_WS_SLOT (SF_WORKSPACE_SLOTS - 1) /* elementwise kernels use the last workspace slot */

/* Per-group mean and rstd from the global (sum, sumsq). */
static void gn_moments(double *mean, double *rstd, const double *stats, size_t ntotal, int C, int G, float eps)
{
  const double m = (double)ntotal * (double)(C / G);
  for (int g = 0; g < G; g++) {
    double mu = stats[2 * g] / m;
    double var = stats[2 * g + 1] / m - mu * mu;
    if (var < 0) var = 0; /* rounding can make a constant group slightly negative */
    mean[g] = mu;
    rstd[g] = 1.0 / sqrt(var + (double)eps);
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
  const int cpg = C / G;
  double *mean = (double *)sf_workspace_floats(GN_WS_SLOT, 4 * (size_t)G + 2 * (size_t)C);
  double *rstd = mean + G;
  float *a = (float *)(rstd + G), *b = a + C;
  gn_moments(mean, rstd, stats, ntotal, C, G, eps);
  for (int c = 0; c < C; c++) {
    double sc = (double)gamma[c] * rstd[c / cpg];
    a[c] = (float)sc;
    b[c] = (float)((double)beta[c] - mean[c / cpg] * sc);
  }
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
 * Per channel we sum dy' and dy'*x in double, then use xhat = (x-mean)*rstd and dxhat = dy'*gamma,
 * which are linear in those sums, so the slab contributions add up exactly as the untiled sums. */
void sf_groupnorm_backward_stats_ref(double *gsums, double *dgb, const float *dy, const float *y,
                                     const float *x, const double *stats, const float *gamma,
                                     size_t n, size_t ntotal, int C, int G, float eps, int relu)
{
  SF_ASSERT(G > 0 && C % G == 0);
  const int cpg = C / G;
  double *sdy = (double *)sf_workspace_floats(GN_WS_SLOT, 5 * (size_t)C + 4 * (size_t)G);
  double *sdyx = sdy + C, *mean = sdyx + C, *rstd = mean + G;
  float *masked = (float *)(rstd + G); /* dy' of one voxel when relu (keeps both loops vectorisable) */
  memset(sdy, 0, 2 * (size_t)C * sizeof(double));
  gn_moments(mean, rstd, stats, ntotal, C, G, eps);
  for (size_t i = 0; i < n; i++) {
    const float *d = dy + i * C;
    if (relu) {
      mask_row(masked, d, y + i * C, C);
      d = masked;
    }
    accumulate_row(sdy, sdyx, d, x + i * C, C);
  }
  for (int c = 0; c < C; c++) {
    int g = c / cpg;
    double dgamma = rstd[g] * (sdyx[c] - mean[g] * sdy[c]); /* sum dy' * xhat */
    dgb[2 * c] += dgamma;
    dgb[2 * c + 1] += sdy[c];
    gsums[2 * g] += (double)gamma[c] * sdy[c];
    gsums[2 * g + 1] += (double)gamma[c] * dgamma;
  }
}

/* dx: (n,C) written = rstd*(dxhat - (S1 + xhat*S2)/m), folded into dx = A[c]*dy' + B[c]*x + K[c] with
 * A = rstd*gamma, B = -rstd^2*S2/m, K = -rstd*S1/m - B*mean (the form PyTorch's kernel uses). */
void sf_groupnorm_backward_data_ref(float *dx, const float *dy, const float *y, const float *x,
                                    const double *stats, const double *gsums, const float *gamma,
                                    size_t n, size_t ntotal, int C, int G, float eps, int relu)
{
  SF_ASSERT(G > 0 && C % G == 0);
  const int cpg = C / G;
  const double m = (double)ntotal * (double)cpg;
  double *mean = (double *)sf_workspace_floats(GN_WS_SLOT, 4 * (size_t)G + 3 * (size_t)C);
  double *rstd = mean + G;
  float *A = (float *)(rstd + G), *B = A + C, *K = B + C;
  gn_moments(mean, rstd, stats, ntotal, C, G, eps);
  for (int c = 0; c < C; c++) {
    int g = c / cpg;
    double r = rstd[g];
    double bg = -r * r * gsums[2 * g + 1] / m;
    A[c] = (float)(r * (double)gamma[c]);
    B[c] = (float)bg;
    K[c] = (float)(-r * gsums[2 * g] / m - bg * mean[g]);
  }
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
