/* OpenCL C: the optimizer part of a step, device twins of src/kernels/elementwise/optim.c: gradient sum of
 * squares (the CPU's 8-lane double pattern, one work-item: exact and order-identical), the
 * clip_grad_norm_ coefficient from the fixed-order sum of the partials (single work-item kernels
 * chained on the in-order queue), and the float updates of torch.optim.Adam, SGD and RMSprop with
 * the CPU's op order and fused multiply-adds. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* acc[0] += (accumulate) or := sum g^2 over g: (n). Launch with one work-item. */
__kernel void sf_sumsq(__global double *acc, ulong acc_off, int accumulate, __global const float *g, ulong g_off,
                       ulong n)
{
  if (get_global_id(0) != 0) return;
  g += g_off;
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  ulong i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) a[j] += (double)g[i + j] * (double)g[i + j];
  for (; i < n; i++) a[0] += (double)g[i] * (double)g[i];
  double base = accumulate ? acc[acc_off] : 0.0;
  acc[acc_off] = base + (((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7])));
}

/* clip: (2) double. step 0: clip[1] = 0; step 1: clip[1] += part[0] (one launch per partial, in
 * order); step 2: clip = [min(1, max_norm / (sqrt(total) + 1e-6)) in float, sqrt(total)]. */
__kernel void sf_clip_step(__global double *clip, ulong clip_off, __global const double *part, ulong part_off,
                           int step, float max_norm)
{
  if (get_global_id(0) != 0) return;
  clip += clip_off;
  if (step == 0) {
    clip[1] = 0.0;
  } else if (step == 1) {
    clip[1] += part[part_off];
  } else {
    double total = clip[1];
    float norm = (float)sqrt(total);
    float coef = (1.0f / (norm + 1e-6f)) * max_norm;
    clip[0] = coef < 1.0f ? coef : 1.0f; /* NaN stays NaN */
    clip[1] = sqrt(total);
  }
}

/* w, m, v: (n) updated in place from g * scale, scale = (float)clip[0] when has_clip else 1;
 * torch.optim.Adam, foreach=False, the host precomputes the float constants like sf_adam_step. */
__kernel void sf_adam(__global float *w, ulong w_off, __global float *m, ulong m_off, __global float *v,
                      ulong v_off, __global const float *g, ulong g_off, __global const double *clip,
                      ulong clip_off, int has_clip, ulong n, float b1, float a1, float b2, float a2,
                      float bc2_sqrt, float neg_step, float epsf)
{
  ulong i = get_global_id(0);
  if (i >= n) return;
  float scale = has_clip ? (float)clip[clip_off] : 1.0f;
  float gi = g[g_off + i] * scale;
  float mi = fma(gi, a1, m[m_off + i] * b1);
  float vi = fma(a2 * gi, gi, v[v_off + i] * b2);
  float denom = sqrt(vi) / bc2_sqrt + epsf;
  w[w_off + i] = w[w_off + i] + (neg_step * mi) / denom;
  m[m_off + i] = mi;
  v[v_off + i] = vi;
}

/* w: (n) += -lr * g * scale (torch.optim.SGD, momentum 0; one fused multiply-add like sf_sgd_step) */
__kernel void sf_sgd(__global float *w, ulong w_off, __global const float *g, ulong g_off, __global const double *clip,
                     ulong clip_off, int has_clip, ulong n, float neg_lr)
{
  ulong i = get_global_id(0);
  if (i >= n) return;
  float scale = has_clip ? (float)clip[clip_off] : 1.0f;
  w[w_off + i] = fma(g[g_off + i] * scale, neg_lr, w[w_off + i]);
}

/* w, sq: (n) updated from g * scale; torch.optim.RMSprop (not centered, momentum 0) like sf_rmsprop_step */
__kernel void sf_rmsprop(__global float *w, ulong w_off, __global float *sq, ulong sq_off, __global const float *g,
                         ulong g_off, __global const double *clip, ulong clip_off, int has_clip, ulong n, float al,
                         float a2, float neg_lr, float epsf)
{
  ulong i = get_global_id(0);
  if (i >= n) return;
  float scale = has_clip ? (float)clip[clip_off] : 1.0f;
  float gi = g[g_off + i] * scale;
  float si = fma(a2 * gi, gi, sq[sq_off + i] * al);
  float avg = sqrt(si) + epsf;
  w[w_off + i] = w[w_off + i] + (neg_lr * gi) / avg;
  sq[sq_off + i] = si;
}
