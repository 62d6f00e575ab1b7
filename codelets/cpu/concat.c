/* Channel concatenation of the U-Net's Up block: y = cat([skip a, upsampled b], channel dim).
 * Layout NDHWC, so each voxel's output row is a's Ca channels followed by b's Cb channels; backward
 * splits the gradient rows back (both written, never accumulated). */
#include <string.h>

#include "scaffold/ops.h"

/* y: (n, Ca+Cb) written from a: (n,Ca) and b: (n,Cb) */
void sf_concat_forward(float *restrict y, const float *restrict a, const float *restrict b, size_t n, int Ca, int Cb)
{
  const size_t C = (size_t)Ca + (size_t)Cb;
  for (size_t i = 0; i < n; i++) {
    memcpy(y + i * C, a + i * (size_t)Ca, (size_t)Ca * sizeof(float));
    memcpy(y + i * C + Ca, b + i * (size_t)Cb, (size_t)Cb * sizeof(float));
  }
}

/* da: (n,Ca), db: (n,Cb) written from dy: (n, Ca+Cb) */
void sf_concat_backward(float *restrict da, float *restrict db, const float *restrict dy, size_t n, int Ca, int Cb)
{
  const size_t C = (size_t)Ca + (size_t)Cb;
  for (size_t i = 0; i < n; i++) {
    memcpy(da + i * (size_t)Ca, dy + i * C, (size_t)Ca * sizeof(float));
    memcpy(db + i * (size_t)Cb, dy + i * C + Ca, (size_t)Cb * sizeof(float));
  }
}
