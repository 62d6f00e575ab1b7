/* Standalone ReLU (GroupNorm fuses the ReLUs of the U-Net; this one is for any other use).
 * Flat arrays of n elements, any layout. Forward may run in place (y == x). NaN propagates like
 * torch.relu (clamp_min); backward masks by the forward OUTPUT, like torch's threshold_backward. */
#include "scaffold/ops.h"

/* y: (n) written = max(0, x); y may equal x, so no restrict here. */
void sf_relu_forward(float *y, const float *x, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

/* dx: (n) written = dy * (y > 0) */
void sf_relu_backward(float *restrict dx, const float *restrict dy, const float *restrict y, size_t n)
{
  for (size_t i = 0; i < n; i++) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}
