/* OpenCL C: GroupNorm (affine, + fused ReLU) in partial-sum form, the device twin of
 * src/kernels/groupnorm/groupnorm_ref.c: per-slab statistics, normalize, backward per-slab sums, backward dx and
 * the parameter gradients. Statistics are double; mean/rstd are formed in double from the global
 * sums (population variance over m = ntotal*C/G values per group). The partial-sum kernels use one
 * work-item per group that loops over the slab (exact and simple; G work-items only), the
 * elementwise kernels one work-item per element. Layout (n,C) = NDHWC voxels x channels. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* mean and rstd of group g from the global (sum, sumsq) stats */
static void sf_gn_moments(__global const double *stats, int g, ulong ntotal, int C, int G, float eps, double *mean,
                          double *rstd)
{
  double m = (double)ntotal * (double)(C / G);
  double mu = stats[2 * g] / m;
  double var = stats[2 * g + 1] / m - mu * mu;
  if (var < 0) var = 0;
  *mean = mu;
  *rstd = 1.0 / sqrt(var + (double)eps);
}

/* stats: (G,2) += (accumulate) or := per-group [sum x, sum x^2] over x: (n,C); channel sums first,
 * added to the group in channel order. One work-item per group. */
__kernel void sf_gn_stats(__global double *stats, ulong stats_off, int accumulate, __global const float *x,
                          ulong x_off, ulong n, int C, int G)
{
  int g = (int)get_global_id(0);
  if (g >= G) return;
  stats += stats_off;
  x += x_off;
  int cpg = C / G;
  double t0 = accumulate ? stats[2 * g] : 0.0, t1 = accumulate ? stats[2 * g + 1] : 0.0;
  for (int c = g * cpg; c < (g + 1) * cpg; c++) {
    double s = 0.0, q = 0.0;
    for (ulong i = 0; i < n; i++) {
      double v = x[i * C + c];
      s += v;
      q += v * v;
    }
    t0 += s;
    t1 += q;
  }
  stats[2 * g] = t0;
  stats[2 * g + 1] = t1;
}

/* y: (n,C) written = [relu](x*a[c] + b[c]) with a = gamma*rstd, b = beta - mean*a (rounded to float
 * like the CPU kernel). One work-item per element. */
__kernel void sf_gn_fwd(__global float *y, ulong y_off, __global const float *x, ulong x_off,
                        __global const double *stats, ulong stats_off, __global const float *gamma, ulong gamma_off,
                        __global const float *beta, ulong beta_off, ulong n, ulong ntotal, int C, int G, float eps,
                        int relu)
{
  ulong gid = get_global_id(0);
  if (gid >= n * C) return;
  int c = (int)(gid % C);
  double mean, rstd;
  sf_gn_moments(stats + stats_off, c / (C / G), ntotal, C, G, eps, &mean, &rstd);
  double sc = (double)gamma[gamma_off + c] * rstd;
  float a = (float)sc;
  float b = (float)((double)beta[beta_off + c] - mean * sc);
  float v = x[x_off + gid] * a + b;
  if (relu) v = v < 0.0f ? 0.0f : v; /* NaN propagates like torch.relu */
  y[y_off + gid] = v;
}

/* part = [gsums (G,2), dgb (C,2)] += (accumulate) or := the slab's backward sums:
 *   gsums[g] = [sum dxhat, sum dxhat*xhat], dgb[c] = [sum dy'*xhat, sum dy'], dxhat = dy'*gamma,
 * dy' = dy masked by y > 0 when relu. One work-item per group (it owns its channels' dgb rows). */
__kernel void sf_gn_bwd_stats(__global double *part, ulong part_off, int accumulate, __global const float *dy,
                              ulong dy_off, __global const float *y, ulong y_off, __global const float *x,
                              ulong x_off, __global const double *stats, ulong stats_off,
                              __global const float *gamma, ulong gamma_off, ulong n, ulong ntotal, int C, int G,
                              float eps, int relu)
{
  int g = (int)get_global_id(0);
  if (g >= G) return;
  part += part_off;
  dy += dy_off;
  y += y_off;
  x += x_off;
  gamma += gamma_off;
  __global double *gsums = part, *dgb = part + 2 * G;
  int cpg = C / G;
  double mean, rstd;
  sf_gn_moments(stats + stats_off, g, ntotal, C, G, eps, &mean, &rstd);
  double gs0 = accumulate ? gsums[2 * g] : 0.0, gs1 = accumulate ? gsums[2 * g + 1] : 0.0;
  for (int c = g * cpg; c < (g + 1) * cpg; c++) {
    double sdy = 0.0, sdyx = 0.0;
    for (ulong i = 0; i < n; i++) {
      float d = dy[i * C + c];
      if (relu) d = y[i * C + c] > 0.0f ? d : 0.0f;
      double v = d;
      sdy += v;
      sdyx += v * (double)x[i * C + c];
    }
    double dgamma = rstd * (sdyx - mean * sdy);
    double b0 = accumulate ? dgb[2 * c] : 0.0, b1 = accumulate ? dgb[2 * c + 1] : 0.0;
    dgb[2 * c] = b0 + dgamma;
    dgb[2 * c + 1] = b1 + sdy;
    gs0 += (double)gamma[c] * sdy;
    gs1 += (double)gamma[c] * dgamma;
  }
  gsums[2 * g] = gs0;
  gsums[2 * g + 1] = gs1;
}

/* dx: (n,C) written = A[c]*dy' + B[c]*x + K[c] with A = rstd*gamma, B = -rstd^2*S2/m,
 * K = -rstd*S1/m - B*mean (S1, S2 = the reduced gsums of the group). One work-item per element. */
__kernel void sf_gn_bwd_data(__global float *dx, ulong dx_off, __global const float *dy, ulong dy_off,
                             __global const float *y, ulong y_off, __global const float *x, ulong x_off,
                             __global const double *stats, ulong stats_off, __global const double *gsums,
                             ulong gsums_off, __global const float *gamma, ulong gamma_off, ulong n, ulong ntotal,
                             int C, int G, float eps, int relu)
{
  ulong gid = get_global_id(0);
  if (gid >= n * C) return;
  int c = (int)(gid % C);
  int g = c / (C / G);
  double m = (double)ntotal * (double)(C / G);
  double mean, r;
  sf_gn_moments(stats + stats_off, g, ntotal, C, G, eps, &mean, &r);
  gsums += gsums_off;
  double bg = -r * r * gsums[2 * g + 1] / m;
  float A = (float)(r * (double)gamma[gamma_off + c]);
  float B = (float)bg;
  float K = (float)(-r * gsums[2 * g] / m - bg * mean);
  float d = dy[dy_off + gid];
  if (relu) d = y[y_off + gid] > 0.0f ? d : 0.0f;
  dx[dx_off + gid] = A * d + B * x[x_off + gid] + K;
}

/* dgamma, dbeta: (C) += (accumulate) or := the reduced dgb: (C,2), rounded to float */
__kernel void sf_gn_param_grads(__global float *dgamma, ulong dgamma_off, __global float *dbeta, ulong dbeta_off,
                                int accumulate, __global const double *dgb, ulong dgb_off, int C)
{
  int c = (int)get_global_id(0);
  if (c >= C) return;
  float g0 = accumulate ? dgamma[dgamma_off + c] : 0.0f, b0 = accumulate ? dbeta[dbeta_off + c] : 0.0f;
  dgamma[dgamma_off + c] = g0 + (float)dgb[dgb_off + 2 * c];
  dbeta[dbeta_off + c] = b0 + (float)dgb[dgb_off + 2 * c + 1];
}
