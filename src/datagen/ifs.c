/* IFS point clouds and the class acceptance test (spec §2.1-2.4): map probabilities from the
 * determinants, the chaos-game iteration (origin first, no burn-in, runaway flag at |x| > 1e10)
 * and the per-axis normalised population-variance rule. Pure functions: no StarPU, no I/O.
 * Floating-point contraction is off in this file so that point clouds do not depend on whether
 * the compiler fused multiply-adds (-march differs between machines). */
#pragma GCC optimize("fp-contract=off")
#include <math.h>
#include <string.h>

#include "scaffold/datagen.h"
#include "scaffold/rng.h"

static double det3(const double *m)
{
  return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
}

int sf_ifs_set_probabilities(double params[2][SF_IFS_NCOLS])
{
  double d0 = fabs(det3(params[0])), d1 = fabs(det3(params[1]));
  double s = d0 + d1;
  params[0][12] = d0 / s;
  params[1][12] = d1 / s;
  return s > 0 ? 0 : -1;
}

/* The chaos game into doubles (pd) or float32 (pf, each value rounded from the double iterate). */
static int ifs_iterate(double *pd, float *pf, size_t N, const double params[2][SF_IFS_NCOLS], const double *weights,
                       uint64_t seed, uint64_t stream, int *nonfinite)
{
  if (nonfinite) *nonfinite = 0;
  if (N == 0) return 0;
  double m[2][12];
  for (int t = 0; t < 2; t++)
    for (int k = 0; k < 12; k++) m[t][k] = weights ? params[t][k] * weights[k] : params[t][k];
  const double p0 = params[0][12];
  sf_rng r;
  sf_rng_seed(&r, seed, stream);
  double x = 0, y = 0, z = 0;
  int runaway = 0, bad = 0;
  if (pd) pd[0] = pd[1] = pd[2] = 0;
  if (pf) pf[0] = pf[1] = pf[2] = 0;
  for (size_t n = 1; n < N; n++) {
    const double *a = m[sf_rng_uniform(&r) < p0 ? 0 : 1];
    double nx = a[0] * x + a[1] * y + a[2] * z + a[9];
    double ny = a[3] * x + a[4] * y + a[5] * z + a[10];
    double nz = a[6] * x + a[7] * y + a[8] * z + a[11];
    x = nx, y = ny, z = nz;
    if (pd) pd[3 * n] = x, pd[3 * n + 1] = y, pd[3 * n + 2] = z;
    if (pf) pf[3 * n] = (float)x, pf[3 * n + 1] = (float)y, pf[3 * n + 2] = (float)z;
    if (fabs(x) > SF_IFS_RUNAWAY_LIMIT || fabs(y) > SF_IFS_RUNAWAY_LIMIT || fabs(z) > SF_IFS_RUNAWAY_LIMIT)
      runaway = 1;
    bad |= !isfinite(x + y + z);
  }
  if (nonfinite) *nonfinite = bad;
  return runaway;
}

int sf_ifs_points(double *pts, size_t N, const double params[2][SF_IFS_NCOLS], const double *weights,
                  uint64_t seed, uint64_t stream)
{
  return ifs_iterate(pts, NULL, N, params, weights, seed, stream, NULL);
}

int sf_ifs_points_f32(float *pts, size_t N, const double params[2][SF_IFS_NCOLS], const double *weights,
                      uint64_t seed, uint64_t stream, int *nonfinite)
{
  return ifs_iterate(NULL, pts, N, params, weights, seed, stream, nonfinite);
}

sf_ifs_verdict sf_ifs_check(const double *pts, size_t N, int runaway, double normalize, double threshold,
                            double var_out[3])
{
  double var[3] = {NAN, NAN, NAN};
  sf_ifs_verdict v = SF_IFS_ACCEPT;
  if (N == 0) v = SF_IFS_INVALID;
  for (int ax = 0; ax < 3 && v == SF_IFS_ACCEPT; ax++) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (size_t i = 0; i < N; i++) {
      double p = pts[3 * i + ax];
      if (!isfinite(p)) {
        v = SF_IFS_INVALID;
        break;
      }
      lo = p < lo ? p : lo;
      hi = p > hi ? p : hi;
      sum += p;
    }
    if (v != SF_IFS_ACCEPT) break;
    double range = hi - lo;
    if (!isfinite(range) || !(range > 0)) {
      v = SF_IFS_INVALID;
      break;
    }
    double mean = sum / (double)N, scale = 2.0 * normalize / range, qsum = 0;
    int qbad = 0;
    for (size_t i = 0; i < N; i++) {
      double q = (pts[3 * i + ax] - mean) * scale;
      qbad |= !isfinite(q);
      qsum += q;
    }
    if (qbad || !isfinite(qsum)) {
      v = SF_IFS_INVALID;
      break;
    }
    double qmean = qsum / (double)N, ss = 0;
    for (size_t i = 0; i < N; i++) {
      double d = (pts[3 * i + ax] - mean) * scale - qmean;
      ss += d * d;
    }
    var[ax] = ss / (double)N;
    if (!isfinite(var[ax])) v = SF_IFS_INVALID;
  }
  if (v == SF_IFS_ACCEPT)
    for (int ax = 0; ax < 3; ax++)
      if (!(var[ax] > threshold)) v = SF_IFS_VARIANCE;
  if (v == SF_IFS_ACCEPT && runaway) v = SF_IFS_RUNAWAY;
  if (var_out) memcpy(var_out, var, sizeof var);
  return v;
}
