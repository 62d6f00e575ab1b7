/* Channel concatenation of the U-Net's Up block: y = cat([skip a, upsampled b], channel dim).
 * Layout NDHWC, so each voxel's output row is a's Ca channels followed by b's Cb channels; backward
 * splits the gradient rows back (both written, never accumulated). Outputs past SF_STREAM_MIN_BYTES are
 * written with streaming stores (stream_store.h): pure copies, memory-bound. */
#include <string.h>

#include "scaffold/ops.h"

#include "../common/stream_store.h"

/* Row i: dst1 (stride s1) = the m1 floats of src1 row i (stride t1), dst2 likewise; a row's two parts one after
 * the other, so streamed lines fill in order */
static void copy_rows2(float *restrict dst1, size_t s1, const float *restrict src1, size_t t1, int m1,
                       float *restrict dst2, size_t s2, const float *restrict src2, size_t t2, int m2, size_t n,
                       int stream)
{
  for (size_t i = 0; i < n; i++)
    if (stream) {
      sf_stream_floats(dst1 + i * s1, src1 + i * t1, (size_t)m1);
      sf_stream_floats(dst2 + i * s2, src2 + i * t2, (size_t)m2);
    } else {
      memcpy(dst1 + i * s1, src1 + i * t1, (size_t)m1 * sizeof(float));
      memcpy(dst2 + i * s2, src2 + i * t2, (size_t)m2 * sizeof(float));
    }
}

/* y: (n, Ca+Cb) written from a: (n,Ca) and b: (n,Cb) */
void sf_concat_forward(float *restrict y, const float *restrict a, const float *restrict b, size_t n, int Ca, int Cb)
{
  const size_t C = (size_t)Ca + (size_t)Cb;
  const int stream = Ca % 4 == 0 && Cb % 4 == 0 && sf_stream_worth(y, n * C * sizeof(float), 16);
  copy_rows2(y, C, a, (size_t)Ca, Ca, y + Ca, C, b, (size_t)Cb, Cb, n, stream);
  if (stream) sf_stream_fence();
}

/* da: (n,Ca), db: (n,Cb) written from dy: (n, Ca+Cb) */
void sf_concat_backward(float *restrict da, float *restrict db, const float *restrict dy, size_t n, int Ca, int Cb)
{
  const size_t C = (size_t)Ca + (size_t)Cb;
  const int stream = Ca % 4 == 0 && Cb % 4 == 0 && sf_stream_worth(da, n * C * sizeof(float), 16) &&
                     sf_stream_worth(db, SF_STREAM_MIN_BYTES, 16);
  copy_rows2(da, (size_t)Ca, dy, C, Ca, db, (size_t)Cb, dy + Ca, C, Cb, n, stream);
  if (stream) sf_stream_fence();
}
