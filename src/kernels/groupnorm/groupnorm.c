/* GroupNorm's only entry, with its vector variants (scaffold/ops.h: sf_groupnorm_stats, _forward, _backward_stats,
 * _backward_data), equal to the _ref kernels of src/kernels/groupnorm/groupnorm_ref.c:
 *   - The sums (stats, backward stats) are bitwise the reference's: per channel, a running double sum over
 *     the voxels in order, as the reference, but held in registers for up to 32 channels at a time (the
 *     reference kept them in memory, a store-to-load chain per voxel, 2-3x slower at 8-32 channels). A
 *     float, and a product of two floats, is exact in double, so an FMA cannot change a term. That keeps
 *     groupnorm_stats's OpenCL variant bitwise equal to the CPU one (docs/heterogeneous.md).
 *   - The element-wise passes (y = a*x + b, dx = A*dy' + B*x + K) use the reference's float coefficients
 *     and formulas on a flat view of the (n,C) array cut into periods of P = lcm(C,16) floats (one voxel
 *     when C % 16 == 0, else P/C voxels), so each lane of a 16-float vector has a fixed channel (lane l:
 *     channel l % C); the floats after the last whole period take a scalar loop.
 * One body in plain C, compiled three times (AVX-512, AVX2 + FMA, the build's target) and chosen by
 * sf_cpu_isa_active(), as src/kernels/loss/loss.c. */
#include <math.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "groupnorm_internal.h"
#include "../common/stream_store.h"

#define VL 16 /* floats per vector: one AVX-512 vector, two AVX2 ones */
#define INLINE static inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline)) /* keeps each variant's target options (vector width) */

typedef float vf __attribute__((vector_size(VL * sizeof(float))));
typedef double vd __attribute__((vector_size(8 * sizeof(double))));
typedef int vi __attribute__((vector_size(VL * sizeof(int))));
typedef float vf8 __attribute__((vector_size(8 * sizeof(float))));
typedef int vi8 __attribute__((vector_size(8 * sizeof(int))));

INLINE vf vload(const float *p)
{
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}
INLINE void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }
/* a streaming store (stream_store.h) in 16-byte pieces, which every x86-64 has and which fill whole lines in
 * order; p 16-byte aligned */
INLINE void vstream(float *p, vf v)
{
  float t[VL];
  memcpy(t, &v, sizeof v);
  sf_stream_floats(p, t, VL);
}
/* 8 floats to doubles, written element-wise: GCC 12 makes one vcvtps2pd zmm of this where it splits
 * __builtin_convertvector into four narrow conversions */
INLINE vd to_double(vf8 v)
{
  vd d;
  for (int j = 0; j < 8; j++) d[j] = v[j];
  return d;
}
/* dy masked by y > 0 when relu (NaN in y masks, as the reference's y > 0.0f) */
INLINE vf masked(vf dy, vf y, int relu) { return relu ? (vf)((vi)dy & (y > 0.0f)) : dy; }

static int gcd_int(int a, int b) { return b ? gcd_int(b, a % b) : a; }
static int period_of(int C) { return C / gcd_int(C, VL) * VL; }

#define CH 8     /* channels per sum vector: 8 doubles */
#define CHUNKS 4 /* sum vectors carried through one pass over the voxels: 8 independent add chains */
#define GN_BLOCK_FLOATS 4096 /* floats of each input per block of voxels, so a block stays in L1 */

/* s[c] += dv and q[c] += dv * e (dv * dv when square) for the NCH * CH channels from c0, voxel by voxel from
 * i0 to i1, the running sums loaded from s, q and stored back; dv = d masked by my > 0 when my != NULL. */
INLINE void chunk_pass(double *restrict s, double *restrict q, const float *restrict d, const float *restrict my,
                       const float *restrict e, const int square, size_t i0, size_t i1, int C, int c0, const int NCH)
{
  vd as[CHUNKS], aq[CHUNKS];
  for (int k = 0; k < NCH; k++) {
    memcpy(&as[k], s + c0 + CH * k, sizeof(vd));
    memcpy(&aq[k], q + c0 + CH * k, sizeof(vd));
  }
  for (size_t i = i0; i < i1; i++) {
    const size_t o = i * (size_t)C + (size_t)c0;
    for (int k = 0; k < NCH; k++) {
      vf8 dv, ev;
      memcpy(&dv, d + o + CH * k, sizeof dv);
      if (my) {
        vf8 yv;
        memcpy(&yv, my + o + CH * k, sizeof yv);
        dv = (vf8)((vi8)dv & (yv > 0.0f));
      }
      if (square)
        ev = dv;
      else
        memcpy(&ev, e + o + CH * k, sizeof ev);
      vd dd = to_double(dv);
      as[k] += dd;
      aq[k] += dd * to_double(ev);
    }
  }
  for (int k = 0; k < NCH; k++) {
    memcpy(s + c0 + CH * k, &as[k], sizeof(vd));
    memcpy(q + c0 + CH * k, &aq[k], sizeof(vd));
  }
}

/* s[c] = sum of dv over the n voxels, q[c] = sum of dv * e (or dv * dv), c < C, each a running sum in voxel
 * order (the reference's). Channels past the last whole CH take a scalar loop in the same order. */
INLINE void channel_sums_body(double *restrict s, double *restrict q, const float *restrict d,
                              const float *restrict my, const float *restrict e, const int square, size_t n, int C)
{
  const int full = C / CH * CH;
  const size_t block = GN_BLOCK_FLOATS / (size_t)C > 1 ? GN_BLOCK_FLOATS / (size_t)C : 1;
  memset(s, 0, (size_t)C * sizeof *s);
  memset(q, 0, (size_t)C * sizeof *q);
  for (size_t i0 = 0; i0 < n; i0 += block) {
    size_t i1 = i0 + block < n ? i0 + block : n;
    for (int c0 = 0; c0 < full; c0 += CHUNKS * CH) {
      switch ((full - c0) / CH) {
      case 1: chunk_pass(s, q, d, my, e, square, i0, i1, C, c0, 1); break;
      case 2: chunk_pass(s, q, d, my, e, square, i0, i1, C, c0, 2); break;
      case 3: chunk_pass(s, q, d, my, e, square, i0, i1, C, c0, 3); break;
      default: chunk_pass(s, q, d, my, e, square, i0, i1, C, c0, 4); break;
      }
    }
    for (int c = full; c < C; c++)
      for (size_t i = i0; i < i1; i++) {
        size_t o = i * (size_t)C + (size_t)c;
        double v = my && !(my[o] > 0.0f) ? 0.0 : d[o];
        s[c] += v;
        q[c] += v * (double)(square ? d[o] : e[o]);
      }
  }
}

/* y = [relu](a*x + b) per lane, over `rows` periods; stream: streaming stores (y vector-aligned) */
INLINE void affine_body(float *y, const float *x, const float *restrict a, const float *restrict b, size_t rows, int P,
                        int relu, const int stream)
{
  for (size_t r = 0; r < rows; r++)
    for (int j = 0; j < P; j += VL) {
      size_t o = r * (size_t)P + (size_t)j;
      vf v = vload(x + o) * vload(a + j) + vload(b + j);
      if (relu) v = (vf)((vi)v & ~(v < 0.0f)); /* v < 0 -> 0; NaN stays (v < 0 is false) */
      if (stream) vstream(y + o, v);
      else vstore(y + o, v);
    }
}

/* dx = A*dy' + B*x + K per lane, over `rows` periods; stream as affine_body */
INLINE void bwd_data_body(float *dx, const float *dy, const float *y, const float *x, const float *restrict A,
                          const float *restrict B, const float *restrict K, size_t rows, int P, int relu,
                          const int stream)
{
  for (size_t r = 0; r < rows; r++)
    for (int j = 0; j < P; j += VL) {
      size_t o = r * (size_t)P + (size_t)j;
      vf d = masked(vload(dy + o), vload(y + o), relu);
      vf v = vload(A + j) * d + vload(B + j) * vload(x + o) + vload(K + j);
      if (stream) vstream(dx + o, v);
      else vstore(dx + o, v);
    }
}

#define GN_VARIANTS(sfx, attr)                                                                                   \
  attr NOINLINE static void sums_##sfx(double *s, double *q, const float *x, size_t n, int C)                     \
  {                                                                                                              \
    channel_sums_body(s, q, x, NULL, x, 1, n, C);                                                                \
  }                                                                                                              \
  attr NOINLINE static void bwd_sums_##sfx(double *s, double *q, const float *dy, const float *y,                 \
                                           const float *x, size_t n, int C, int relu)                            \
  {                                                                                                              \
    if (relu)                                                                                                    \
      channel_sums_body(s, q, dy, y, x, 0, n, C);                                                                \
    else                                                                                                         \
      channel_sums_body(s, q, dy, NULL, x, 0, n, C);                                                             \
  }                                                                                                              \
  attr NOINLINE static void affine_##sfx(float *y, const float *x, const float *a, const float *b, size_t rows,   \
                                         int P, int relu, int stream)                                            \
  {                                                                                                              \
    if (stream)                                                                                                  \
      affine_body(y, x, a, b, rows, P, relu, 1);                                                                 \
    else                                                                                                         \
      affine_body(y, x, a, b, rows, P, relu, 0);                                                                 \
  }                                                                                                              \
  attr NOINLINE static void bwd_data_##sfx(float *dx, const float *dy, const float *y, const float *x,            \
                                           const float *A, const float *B, const float *K, size_t rows, int P,   \
                                           int relu, int stream)                                                 \
  {                                                                                                              \
    if (stream)                                                                                                  \
      bwd_data_body(dx, dy, y, x, A, B, K, rows, P, relu, 1);                                                    \
    else                                                                                                         \
      bwd_data_body(dx, dy, y, x, A, B, K, rows, P, relu, 0);                                                    \
  }

#if defined(__x86_64__) && defined(__GNUC__)
GN_VARIANTS(avx512, __attribute__((target("avx512f,fma,prefer-vector-width=512"))))
GN_VARIANTS(avx2, __attribute__((target("avx2,fma"))))
#define GN_DISPATCH(fn, ...)                                        \
  switch (sf_cpu_isa_active()) {                                    \
  case SF_ISA_AVX512: fn##_avx512(__VA_ARGS__); break;              \
  case SF_ISA_AVX2: fn##_avx2(__VA_ARGS__); break;                  \
  default: fn##_c(__VA_ARGS__); break;                              \
  }
#else
#define GN_DISPATCH(fn, ...) fn##_c(__VA_ARGS__)
#endif
GN_VARIANTS(c, )

/* Stream the element-wise passes' output of n floats at y (stream_store.h) when it is large; every row of a
 * period starts 16-byte aligned when y does (P is a multiple of 16 floats) */
static int stream_output(const float *y, size_t n) { return sf_stream_worth(y, n * sizeof(float), 16); }

/* lanes[l] = per_channel[l % C], l < P */
static void expand_lanes(float *lanes, const float *per_channel, int C, int P)
{
  for (int l = 0; l < P; l++) lanes[l] = per_channel[l % C];
}

void sf_groupnorm_stats(double *stats, const float *x, size_t n, int C, int G)
{
  SF_ASSERT(G > 0 && C % G == 0);
  const int cpg = C / G;
  double *sum = (double *)sf_workspace_floats(SF_GN_WS_SLOT, 4 * (size_t)C), *sq = sum + C;
  GN_DISPATCH(sums, sum, sq, x, n, C);
  for (int c = 0; c < C; c++) { /* the reference's order */
    stats[2 * (c / cpg)] += sum[c];
    stats[2 * (c / cpg) + 1] += sq[c];
  }
}

void sf_groupnorm_forward(float *y, const float *x, const double *stats, const float *gamma, const float *beta,
                          size_t n, size_t ntotal, int C, int G, float eps, int relu)
{
  SF_ASSERT(G > 0 && C % G == 0);
  const int P = period_of(C);
  const size_t total = n * (size_t)C, rows = total / (size_t)P;
  float *a = sf_workspace_floats(SF_GN_WS_SLOT, 2 * (size_t)C + 2 * (size_t)P), *b = a + C;
  float *al = b + C, *bl = al + P;
  sf_gn_forward_coefs(a, b, stats, gamma, beta, ntotal, C, G, eps);
  expand_lanes(al, a, C, P);
  expand_lanes(bl, b, C, P);
  const int stream = stream_output(y, total);
  GN_DISPATCH(affine, y, x, al, bl, rows, P, relu, stream);
  if (stream) sf_stream_fence();
  for (size_t k = rows * (size_t)P; k < total; k++) {
    float v = x[k] * a[k % (size_t)C] + b[k % (size_t)C];
    y[k] = relu && v < 0.0f ? 0.0f : v;
  }
}

void sf_groupnorm_backward_stats(double *gsums, double *dgb, const float *dy, const float *y, const float *x,
                                 const double *stats, const float *gamma, size_t n, size_t ntotal, int C, int G,
                                 float eps, int relu)
{
  SF_ASSERT(G > 0 && C % G == 0);
  double *sdy = (double *)sf_workspace_floats(SF_GN_WS_SLOT, 4 * (size_t)C), *sdyx = sdy + C;
  GN_DISPATCH(bwd_sums, sdy, sdyx, dy, y, x, n, C, relu);
  sf_gn_backward_stats_finish(gsums, dgb, sdy, sdyx, stats, gamma, ntotal, C, G, eps);
}

void sf_groupnorm_backward_data(float *dx, const float *dy, const float *y, const float *x, const double *stats,
                                const double *gsums, const float *gamma, size_t n, size_t ntotal, int C, int G,
                                float eps, int relu)
{
  SF_ASSERT(G > 0 && C % G == 0);
  const int P = period_of(C);
  const size_t total = n * (size_t)C, rows = total / (size_t)P;
  float *A = sf_workspace_floats(SF_GN_WS_SLOT, 3 * (size_t)C + 3 * (size_t)P), *B = A + C, *K = B + C;
  float *Al = K + C, *Bl = Al + P, *Kl = Bl + P;
  sf_gn_backward_data_coefs(A, B, K, stats, gsums, gamma, ntotal, C, G, eps);
  expand_lanes(Al, A, C, P);
  expand_lanes(Bl, B, C, P);
  expand_lanes(Kl, K, C, P);
  const int stream = stream_output(dx, total);
  GN_DISPATCH(bwd_data, dx, dy, y, x, Al, Bl, Kl, rows, P, relu, stream);
  if (stream) sf_stream_fence();
  for (size_t k = rows * (size_t)P; k < total; k++) {
    size_t c = k % (size_t)C;
    float d = relu && !(y[k] > 0.0f) ? 0.0f : dy[k];
    dx[k] = A[c] * d + B[c] * x[k] + K[c];
  }
}
