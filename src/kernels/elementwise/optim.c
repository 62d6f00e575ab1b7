/* Optimizer kernels of spec §6.1/§6.4: the global gradient norm (double partial sums), the
 * clip_grad_norm_ coefficient and the updates of torch.optim.Adam (single-tensor), SGD and RMSprop (the learning-rate
 * schedule is training logic: src/train/lr_schedule.c). The float arithmetic follows torch 1.13's CPU op order
 * (float32 tensors, python-double scalars rounded to float; the fused multiply-adds where torch's AVX2
 * kernels fuse them), found bitwise-equal to torch's Adam on 1e5 random elements; the golden test
 * tests/kernels_elem/test_elem_golden checks 20 steps of each against torch fixtures. */
#include <math.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"

/* acc += sum g^2 over g: (n); eight independent double accumulators so GCC can vectorise. */
void sf_sumsq_partial(double *acc, const float *restrict g, size_t n)
{
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) a[j] += (double)g[i + j] * (double)g[i + j];
  for (; i < n; i++) a[0] += (double)g[i] * (double)g[i];
  *acc += ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/* torch: total_norm (float32) -> clip_coef = max_norm / (total_norm + 1e-6), which torch evaluates as
 * reciprocal(total_norm + 1e-6) * max_norm in float32; clamped to <= 1 (gradients are always
 * multiplied by the clamped value). */
float sf_clip_coef(double total_sumsq, float max_norm)
{
  float norm = (float)sqrt(total_sumsq);
  float coef = (1.0f / (norm + 1e-6f)) * max_norm;
  return coef < 1.0f ? coef : 1.0f; /* torch.clamp(max=1): NaN stays NaN */
}

/* w, m, v: (n) updated in place from g: (n)*grad_scale; torch.optim.Adam, foreach=False:
 *   m = m*b1 + (1-b1)*g;  v = v*b2 + (1-b2)*g*g;
 *   denom = sqrt(v) / sqrt(1 - b2^step) + eps;  w += -(lr / (1 - b1^step)) * (m / denom). */
void sf_adam_step(float *restrict w, float *restrict m, float *restrict v, const float *restrict g, size_t n,
                  double lr, double beta1, double beta2, double eps, long step, float grad_scale)
{
  const double bc1 = 1.0 - pow(beta1, (double)step);
  const double bc2 = 1.0 - pow(beta2, (double)step);
  const float b1 = (float)beta1, a1 = (float)(1.0 - beta1);
  const float b2 = (float)beta2, a2 = (float)(1.0 - beta2);
  const float bc2_sqrt = (float)sqrt(bc2);
  const float neg_step = (float)(-(lr / bc1));
  const float epsf = (float)eps;
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] * grad_scale;              /* grad.mul_(clip_coef) */
    float mi = fmaf(gi, a1, m[i] * b1);        /* mul_(b1).add_(g, alpha=1-b1) */
    float vi = fmaf(a2 * gi, gi, v[i] * b2);   /* mul_(b2).addcmul_(g, g, value=1-b2) */
    float denom = sqrtf(vi) / bc2_sqrt + epsf; /* (v.sqrt() / bc2_sqrt).add_(eps) */
    w[i] = w[i] + (neg_step * mi) / denom;     /* addcdiv_(m, denom, value=-step_size) */
    m[i] = mi;
    v[i] = vi;
  }
}

/* w: (n) updated in place from g: (n)*grad_scale; torch.optim.SGD, momentum 0, no weight decay:
 *   w.add_(g, alpha=-lr)   (torch's vectorised add with alpha is one fused multiply-add) */
void sf_sgd_step(float *restrict w, const float *restrict g, size_t n, double lr, float grad_scale)
{
  const float neg_lr = (float)(-lr);
  for (size_t i = 0; i < n; i++) w[i] = fmaf(g[i] * grad_scale, neg_lr, w[i]);
}

/* w, sq: (n) updated in place from g: (n)*grad_scale; torch.optim.RMSprop, not centered, momentum 0:
 *   sq = sq*alpha + (1-alpha)*g*g;  avg = sqrt(sq) + eps;  w += -lr * (g / avg)
 * (foreach=True on CPU runs the same per-tensor ops: mul_, addcmul_, sqrt, add_, addcdiv_). */
void sf_rmsprop_step(float *restrict w, float *restrict sq, const float *restrict g, size_t n, double lr,
                     double alpha, double eps, float grad_scale)
{
  const float al = (float)alpha, a2 = (float)(1.0 - alpha);
  const float neg_lr = (float)(-lr), epsf = (float)eps;
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] * grad_scale;           /* grad.mul_(clip_coef) */
    float si = fmaf(a2 * gi, gi, sq[i] * al); /* mul_(alpha).addcmul_(g, g, value=1-alpha) */
    float avg = sqrtf(si) + epsf;           /* sqrt(sq).add_(eps) */
    w[i] = w[i] + (neg_lr * gi) / avg;      /* addcdiv_(g, avg, value=-lr) */
    sq[i] = si;
  }
}
