/* Double-precision mirrors of GroupNorm, the loss and max pooling (see elem_mirror.h). */
#include "elem_mirror.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DICE_EPS 1e-6

static void gn_moments(double *mean, double *rstd, const double *x, size_t n, int C, int G, double eps)
{
  const int cpg = C / G;
  for (int g = 0; g < G; g++) {
    double s = 0, q = 0;
    for (size_t i = 0; i < n; i++)
      for (int j = 0; j < cpg; j++) s += x[i * C + g * cpg + j];
    double mu = s / ((double)n * cpg);
    for (size_t i = 0; i < n; i++)
      for (int j = 0; j < cpg; j++) q += (x[i * C + g * cpg + j] - mu) * (x[i * C + g * cpg + j] - mu);
    mean[g] = mu;
    rstd[g] = 1.0 / sqrt(q / ((double)n * cpg) + eps);
  }
}

void mir_gn_forward(double *y, double *pre, const double *x, const double *gamma, const double *beta, size_t n,
                    int C, int G, double eps, int relu)
{
  double *mean = malloc(2 * (size_t)G * sizeof(double)), *rstd = mean + G;
  gn_moments(mean, rstd, x, n, C, G, eps);
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < C; c++) {
      int g = c / (C / G);
      double v = gamma[c] * (x[i * C + c] - mean[g]) * rstd[g] + beta[c];
      if (pre) pre[i * C + c] = v;
      y[i * C + c] = (relu && v < 0) ? 0.0 : v;
    }
  free(mean);
}

void mir_gn_backward(double *dx, double *dgamma, double *dbeta, const double *dy, const double *x,
                     const double *gamma, const double *beta, size_t n, int C, int G, double eps, int relu)
{
  const int cpg = C / G;
  const double m = (double)n * cpg;
  double *mean = malloc(2 * (size_t)G * sizeof(double)), *rstd = mean + G;
  double *y = malloc(n * C * sizeof(double)), *dyp = malloc(n * C * sizeof(double));
  gn_moments(mean, rstd, x, n, C, G, eps);
  mir_gn_forward(y, NULL, x, gamma, beta, n, C, G, eps, relu);
  for (size_t i = 0; i < n * C; i++) dyp[i] = (!relu || y[i] > 0) ? dy[i] : 0.0;
  for (int c = 0; c < C; c++) dgamma[c] = dbeta[c] = 0;
  for (int g = 0; g < G; g++) {
    double mdx = 0, mdxx = 0; /* mean over the group of dxhat and dxhat*xhat */
    for (size_t i = 0; i < n; i++)
      for (int j = 0; j < cpg; j++) {
        int c = g * cpg + j;
        double xhat = (x[i * C + c] - mean[g]) * rstd[g], dxhat = dyp[i * C + c] * gamma[c];
        mdx += dxhat / m;
        mdxx += dxhat * xhat / m;
        dgamma[c] += dyp[i * C + c] * xhat;
        dbeta[c] += dyp[i * C + c];
      }
    for (size_t i = 0; i < n; i++)
      for (int j = 0; j < cpg; j++) {
        int c = g * cpg + j;
        double xhat = (x[i * C + c] - mean[g]) * rstd[g], dxhat = dyp[i * C + c] * gamma[c];
        dx[i * C + c] = rstd[g] * (dxhat - mdx - xhat * mdxx);
      }
  }
  free(mean);
  free(y);
  free(dyp);
}

static void softmax(double *p, const double *zi, int K)
{
  double mx = zi[0], s = 0;
  for (int k = 1; k < K; k++) mx = fmax(mx, zi[k]);
  for (int k = 0; k < K; k++) s += (p[k] = exp(zi[k] - mx));
  for (int k = 0; k < K; k++) p[k] /= s;
}

/* sums[k] = {sum P*Y, sum P, sum Y} */
static void loss_sums(double *sums, double *ce_num, double *ce_den, const double *z, const uint16_t *lab,
                      const double *cw, size_t n, int K)
{
  double p[64];
  memset(sums, 0, 3 * (size_t)K * sizeof(double));
  *ce_num = *ce_den = 0;
  for (size_t i = 0; i < n; i++) {
    softmax(p, z + i * K, K);
    int y = lab[i];
    *ce_num += cw[y] * -log(p[y]);
    *ce_den += cw[y];
    for (int k = 0; k < K; k++) {
      sums[3 * k] += p[k] * (k == y);
      sums[3 * k + 1] += p[k];
      sums[3 * k + 2] += (k == y);
    }
  }
}

double mir_loss(double *ce, double *dice_fg, const double *z, const uint16_t *lab, const double *cw, size_t n, int K)
{
  double sums[3 * 64], num, den, d = 0;
  loss_sums(sums, &num, &den, z, lab, cw, n, K);
  for (int k = 1; k < K; k++) {
    double I = 2 * sums[3 * k], S = sums[3 * k + 1] + sums[3 * k + 2];
    if (S == 0) S = I;
    d += (I + DICE_EPS) / (S + DICE_EPS);
  }
  d /= (K - 1);
  if (ce) *ce = num / den;
  if (dice_fg) *dice_fg = d;
  return num / den + (1 - d);
}

void mir_loss_backward(double *dz, const double *z, const uint16_t *lab, const double *cw, size_t n, int K)
{
  double sums[3 * 64], num, den, p[64], dLdP[64];
  loss_sums(sums, &num, &den, z, lab, cw, n, K);
  for (size_t i = 0; i < n; i++) {
    softmax(p, z + i * K, K);
    int y = lab[i];
    /* dL/dP_k: CE gives -w[y]/(den*P_y) on k == y; Dice gives -(1/(K-1)) dD_k/dP_k via the quotient rule */
    for (int k = 0; k < K; k++) {
      dLdP[k] = (k == y) ? -cw[y] / (den * p[y]) : 0.0;
      double S0 = sums[3 * k + 1] + sums[3 * k + 2];
      if (k == 0 || S0 == 0) continue; /* S == 0: Dice == 1 whatever P, zero gradient */
      double I = 2 * sums[3 * k], S = S0, Yk = (k == y);
      double dI = 2 * Yk, dS = 1;
      double dD = (dI * (S + DICE_EPS) - (I + DICE_EPS) * dS) / ((S + DICE_EPS) * (S + DICE_EPS));
      dLdP[k] += -dD / (K - 1);
    }
    /* dP_k/dz_j = P_k (delta_kj - P_j) */
    for (int j = 0; j < K; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += dLdP[k] * p[k] * ((k == j) - p[j]);
      dz[i * K + j] = s;
    }
  }
}

void mir_maxpool(double *y, const double *x, int nd, int H, int W, int C)
{
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++)
        for (int c = 0; c < C; c++) {
          double m = -INFINITY;
          for (int a = 0; a < 2; a++)
            for (int p = 0; p < 2; p++)
              for (int q = 0; q < 2; q++)
                m = fmax(m, x[(((size_t)(2 * d + a) * 2 * H + 2 * h + p) * 2 * W + 2 * w + q) * C + c]);
          y[(((size_t)d * H + h) * W + w) * C + c] = m;
        }
}
