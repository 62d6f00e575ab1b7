/* MaxPool 2/2's only entry, with its vector variants (scaffold/ops.h: sf_maxpool3d_forward, sf_maxpool3d_backward), bitwise equal
 * to the _ref kernels of src/kernels/maxpool3d/maxpool3d_ref.c: the same window scan in (a,p,q) order from -inf, the same
 * "val > max || isnan(val)" rule (first maximum wins, NaN propagates), the same argmax bytes. The reference's
 * channel loop stays scalar (GCC does not vectorise its mixed float / uint8 selects): 0.63 ms per 512 KiB slab
 * at 8 channels, 4 % of a ps 5 b8 bf16 step. Here the channels go 16, then 8 at a time in vectors, the rest
 * one by one. The backward also adds the skip-connection gradient in the same pass (the codelet's second pass
 * over dx before), as the reference's "dx = unpool(dy); dx += add" does, to the bit.
 * One body in plain C, compiled three times (AVX-512, AVX2 + FMA, the build's target) and chosen by
 * sf_cpu_isa_active(), as src/kernels/groupnorm/groupnorm.c. */
#include <math.h>
#include <string.h>

#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#define INLINE static inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline)) /* keeps each variant's target options (vector width) */

/* One chunk of WIDTH channels, for WIDTH 16 and 8: vector types and the forward and backward bodies */
#define POOL_CHUNK(WIDTH)                                                                                         \
  typedef float vf##WIDTH __attribute__((vector_size(WIDTH * sizeof(float))));                                   \
  typedef int vi##WIDTH __attribute__((vector_size(WIDTH * sizeof(int))));                                        \
  typedef unsigned char vb##WIDTH __attribute__((vector_size(WIDTH)));                                            \
  /* y[c..c+WIDTH), idx[..] of one output voxel from its 8 window taps at base + off[k] */                       \
  INLINE void fwd_chunk##WIDTH(float *y, uint8_t *idx, const float *base, const size_t off[8])                   \
  {                                                                                                              \
    vf##WIDTH m, v;                                                                                              \
    vi##WIDTH at = {0};                                                                                          \
    for (int l = 0; l < WIDTH; l++) m[l] = -INFINITY;                                                            \
    for (int k = 0; k < 8; k++) {                                                                                \
      memcpy(&v, base + off[k], sizeof v);                                                                       \
      vi##WIDTH take = (v > m) | (v != v);                                                                       \
      m = (vf##WIDTH)(((vi##WIDTH)v & take) | ((vi##WIDTH)m & ~take));                                           \
      at = (k & take) | (at & ~take);                                                                            \
    }                                                                                                            \
    vb##WIDTH b = __builtin_convertvector(at, vb##WIDTH);                                                        \
    memcpy(y, &m, sizeof m);                                                                                     \
    memcpy(idx, &b, sizeof b);                                                                                   \
  }                                                                                                              \
  /* the 8 taps at base + off[k] of one input window: dy where idx == k, else 0, plus add at the same place */   \
  INLINE void bwd_chunk##WIDTH(float *base, const float *add, const float *dy, const uint8_t *idx,                \
                               const size_t off[8])                                                              \
  {                                                                                                              \
    vf##WIDTH d, a;                                                                                              \
    vb##WIDTH b;                                                                                                 \
    memcpy(&d, dy, sizeof d);                                                                                    \
    memcpy(&b, idx, sizeof b);                                                                                   \
    vi##WIDTH at = __builtin_convertvector(b, vi##WIDTH);                                                        \
    for (int k = 0; k < 8; k++) {                                                                                \
      vf##WIDTH g = (vf##WIDTH)((vi##WIDTH)d & (at == k));                                                       \
      if (add) {                                                                                                 \
        memcpy(&a, add + off[k], sizeof a);                                                                      \
        g += a;                                                                                                  \
      }                                                                                                          \
      memcpy(base + off[k], &g, sizeof g);                                                                       \
    }                                                                                                            \
  }

POOL_CHUNK(16)
POOL_CHUNK(8)

/* offsets of the 8 window taps (a,p,q) from the window's first element, in scan order */
INLINE void window_offsets(size_t off[8], size_t sd, size_t sh, size_t sw)
{
  for (int k = 0; k < 8; k++) off[k] = (size_t)(k >> 2) * sd + (size_t)((k >> 1) & 1) * sh + (size_t)(k & 1) * sw;
}

/* x: (2nd,2H,2W,C); y, idx: (nd,H,W,C) written (H, W: output sizes) */
INLINE void forward_body(float *restrict y, uint8_t *restrict idx, const float *restrict x, int nd, int H, int W,
                         int C)
{
  const size_t sw = (size_t)C, sh = 2 * (size_t)W * sw, sd = 2 * (size_t)H * sh;
  size_t off[8];
  window_offsets(off, sd, sh, sw);
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++) {
        const size_t o = (((size_t)d * H + h) * W + w) * C;
        const float *base = x + 2 * (size_t)d * sd + 2 * (size_t)h * sh + 2 * (size_t)w * sw;
        int c = 0;
        for (; c + 16 <= C; c += 16) fwd_chunk16(y + o + c, idx + o + c, base + c, off);
        for (; c + 8 <= C; c += 8) fwd_chunk8(y + o + c, idx + o + c, base + c, off);
        for (; c < C; c++) { /* the reference's scalar rule */
          float m = -INFINITY;
          int at = 0;
          for (int k = 0; k < 8; k++) {
            float v = base[off[k] + c];
            if ((v > m) | (v != v)) m = v, at = k;
          }
          y[o + c] = m;
          idx[o + c] = (uint8_t)at;
        }
      }
}

/* dx: (2nd,2H,2W,C) written = unpool(dy) (+ add: same shape as dx, or NULL) */
INLINE void backward_body(float *restrict dx, const float *restrict dy, const uint8_t *restrict idx,
                          const float *restrict add, int nd, int H, int W, int C)
{
  const size_t sw = (size_t)C, sh = 2 * (size_t)W * sw, sd = 2 * (size_t)H * sh;
  size_t off[8];
  window_offsets(off, sd, sh, sw);
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++) {
        const size_t o = (((size_t)d * H + h) * W + w) * C;
        const size_t b = 2 * (size_t)d * sd + 2 * (size_t)h * sh + 2 * (size_t)w * sw;
        const float *ab = add ? add + b : NULL;
        int c = 0;
        for (; c + 16 <= C; c += 16) bwd_chunk16(dx + b + c, ab ? ab + c : NULL, dy + o + c, idx + o + c, off);
        for (; c + 8 <= C; c += 8) bwd_chunk8(dx + b + c, ab ? ab + c : NULL, dy + o + c, idx + o + c, off);
        for (; c < C; c++)
          for (int k = 0; k < 8; k++) {
            float g = idx[o + c] == k ? dy[o + c] : 0.0f;
            dx[b + off[k] + c] = ab ? g + ab[off[k] + c] : g;
          }
      }
}

#define POOL_VARIANTS(sfx, attr)                                                                                 \
  attr NOINLINE static void fwd_##sfx(float *y, uint8_t *idx, const float *x, int nd, int H, int W, int C)       \
  {                                                                                                              \
    forward_body(y, idx, x, nd, H, W, C);                                                                        \
  }                                                                                                              \
  attr NOINLINE static void bwd_##sfx(float *dx, const float *dy, const uint8_t *idx, const float *add, int nd,  \
                                      int H, int W, int C)                                                       \
  {                                                                                                              \
    backward_body(dx, dy, idx, add, nd, H, W, C);                                                                \
  }

#if defined(__x86_64__) && defined(__GNUC__)
POOL_VARIANTS(avx512, __attribute__((target("avx512f,avx512bw,avx512vl,prefer-vector-width=512"))))
POOL_VARIANTS(avx2, __attribute__((target("avx2,fma"))))
#define POOL_DISPATCH(fn, ...)                                      \
  switch (sf_cpu_isa_active()) {                                    \
  case SF_ISA_AVX512: fn##_avx512(__VA_ARGS__); break;              \
  case SF_ISA_AVX2: fn##_avx2(__VA_ARGS__); break;                  \
  default: fn##_c(__VA_ARGS__); break;                              \
  }
#else
#define POOL_DISPATCH(fn, ...) fn##_c(__VA_ARGS__)
#endif
POOL_VARIANTS(c, )

void sf_maxpool3d_forward(float *y, uint8_t *idx, const float *x, int nd, int H, int W, int C)
{
  POOL_DISPATCH(fwd, y, idx, x, nd, H, W, C);
}

void sf_maxpool3d_backward(float *dx, const float *dy, const uint8_t *idx, const float *add, int nd, int H, int W,
                           int C)
{
  POOL_DISPATCH(bwd, dx, dy, idx, add, nd, H, W, C);
}
