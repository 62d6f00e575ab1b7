/* MaxPool3d(kernel 2, stride 2) of the U-Net's Down block, NDHWC. Follows PyTorch's CPU kernel:
 * the window is scanned in (a,p,q) order from -inf and a value replaces the running maximum when
 * `val > max || isnan(val)`, so the first maximum wins on ties and NaN propagates. The argmax is
 * saved as a*4+p*2+q (uint8) for the backward, which writes every input element (the 2x2x2
 * windows tile the input exactly). The channel loop is innermost and branch-free, so both loops
 * vectorise. */
#include <math.h>

#include "scaffold/ops.h"

/* x: (2nd,2H,2W,C); y, idx: (nd,H,W,C) written. H, W are OUTPUT sizes. */
void sf_maxpool3d_forward_ref(float *restrict y, uint8_t *restrict idx, const float *restrict x, int nd, int H,
                              int W, int C)
{
  const size_t sw = (size_t)C, sh = 2 * (size_t)W * sw, sd = 2 * (size_t)H * sh;
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++) {
        const size_t o = (((size_t)d * H + h) * W + w) * C;
        const float *base = x + 2 * (size_t)d * sd + 2 * (size_t)h * sh + 2 * (size_t)w * sw;
        float *restrict yo = y + o;
        uint8_t *restrict io = idx + o;
        for (int c = 0; c < C; c++) { /* branch-free, so the channel loop vectorises */
          float m = -INFINITY;
          int at = 0;
          for (int k = 0; k < 8; k++) {
            float v = base[(size_t)(k >> 2) * sd + (size_t)((k >> 1) & 1) * sh + (size_t)(k & 1) * sw + c];
            int take = (v > m) | (v != v);
            m = take ? v : m;
            at = take ? k : at;
          }
          yo[c] = m;
          io[c] = (uint8_t)at;
        }
      }
}

/* dx: (2nd,2H,2W,C) written: dy at each window's argmax, 0 elsewhere. dy, idx: (nd,H,W,C). */
void sf_maxpool3d_backward_ref(float *restrict dx, const float *restrict dy, const uint8_t *restrict idx, int nd,
                               int H, int W, int C)
{
  const size_t sw = (size_t)C, sh = 2 * (size_t)W * sw, sd = 2 * (size_t)H * sh;
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++) {
        const size_t o = (((size_t)d * H + h) * W + w) * C;
        float *base = dx + 2 * (size_t)d * sd + 2 * (size_t)h * sh + 2 * (size_t)w * sw;
        const float *restrict dyo = dy + o;
        const uint8_t *restrict io = idx + o;
        for (int k = 0; k < 8; k++) {
          float *restrict dk = base + (size_t)(k >> 2) * sd + (size_t)((k >> 1) & 1) * sh + (size_t)(k & 1) * sw;
          for (int c = 0; c < C; c++) dk[c] = io[c] == k ? dyo[c] : 0.0f;
        }
      }
}
