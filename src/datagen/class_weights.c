/* CE class weights (spec §6.2, upstream losses._sample_ce_weight_indices and
 * _compute_ce_class_weights): which training masks are sampled, and the background / shared
 * foreground inverse-frequency weights from their voxel counts. Pure: no files, no StarPU.
 * The sample indices replicate torch.linspace(0, n-1, count) in float32 on the CPU followed by
 * .long(): ATen's linspace kernel computes start + step*i for the first half and
 * end - step*(count-1-i) for the second, as fused multiply-adds, in pairs of 8-float vectors whose
 * lanes are base + k*step (product rounded first), with a scalar loop for the remainder. This model
 * reproduces torch 1.13's CPU output bit for bit for every n < 900 tested (tests/dataset,
 * dataset_python_parity); a differently compiled torch may round a boundary index differently. */
#include <math.h>
#include <stdlib.h>

#include "scaffold/common.h"

#include "scaffold/dataset.h"

#define SF_TORCH_VEC_FLOATS 8 /* Vectorized<float>::size() of torch's default (AVX2) CPU kernels */

/* a*b rounded to float before any addition (no FMA contraction). */
static float mul_rounded(float a, float b)
{
  volatile float p = a * b;
  return p;
}

/* The kernel's scalar expression, which the compiler contracted into one fused multiply-add. */
static float lin_scalar(float start, float end, float step, int steps, int halfway, int j)
{
  return j < halfway ? fmaf(step, (float)j, start) : fmaf(-step, (float)(steps - j - 1), end);
}

/* torch.linspace(start, end, steps) as float32 (steps >= 2). */
static void torch_linspace_f32(float start, float end, int steps, float *out)
{
  const float step = (end - start) / (float)(steps - 1);
  const int halfway = steps / 2, VS = SF_TORCH_VEC_FLOATS;
  int i = 0;
  /* vectorized_loop: two vectors per iteration while i <= n - 2*VS; a vector is
   * arange(base, step) = base + k*step with k*step rounded first */
  for (; i <= steps - 2 * VS; i += 2 * VS)
    for (int h = 0; h < 2; h++) {
      int j = i + h * VS;
      float base = lin_scalar(start, end, step, steps, halfway, j);
      for (int k = 0; k < VS; k++) out[j + k] = k == 0 ? base : base + mul_rounded((float)k, step);
    }
  for (; i < steps; i++) out[i] = lin_scalar(start, end, step, steps, halfway, i); /* basic_loop remainder */
}

int sf_ce_weight_sample_indices(int n_train, double frac, int *idx)
{
  if (n_train <= 0) return 0;
  double want = ceil((double)n_train * frac);
  int count = want < 1.0 ? 1 : want > (double)n_train ? n_train : (int)want;
  if (count == n_train) {
    for (int i = 0; i < n_train; i++) idx[i] = i;
    return count;
  }
  if (count == 1) { /* torch.linspace with one step returns start */
    idx[0] = 0;
    return 1;
  }
  float *v = sf_malloc((size_t)count * sizeof *v, "linspace");
  torch_linspace_f32(0.0f, (float)(n_train - 1), count, v);
  for (int i = 0; i < count; i++) idx[i] = (int)v[i]; /* .long() truncates toward zero */
  free(v);
  return count;
}

void sf_ce_class_weights_from_counts(const uint64_t *counts, int n_classes, float *w)
{
  uint64_t bg = counts[0], fg = 0;
  for (int k = 1; k < n_classes; k++) fg += counts[k];
  for (int k = 0; k < n_classes; k++) w[k] = 1.0f;
  if (bg == 0 || fg == 0) return;
  double total = (double)(bg + fg);
  w[0] = (float)(total / (double)bg);
  for (int k = 1; k < n_classes; k++) w[k] = (float)(total / (double)fg);
}
