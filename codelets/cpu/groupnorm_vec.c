/* Fast CPU variants of GroupNorm (scaffold/ops.h: sf_groupnorm_stats, _forward, _backward_stats,
 * _backward_data): the same sums and outputs as the _ref kernels of codelets/cpu/groupnorm.c, on a flat
 * view of the (n,C) array cut into periods of P = lcm(C,16) floats (one voxel when C % 16 == 0, else
 * P/C voxels), so each lane of a 16-float vector has a fixed channel (lane l: channel l % C) and the
 * per-channel coefficients and sums become per-lane arrays of P entries.
 *   - Sums stay in double, in register accumulators: a float, and a product of two floats, is exact in
 *     double, so each lane's sum is the reference's sum in another order (rows two at a time, and for
 *     C < 16 several lanes per channel added at the end).
 *   - The element-wise passes (y = a*x + b, dx = A*dy' + B*x + K) use the reference's float
 *     coefficients and formulas.
 * The reference accumulated each voxel into memory (a store-to-load chain per voxel): 4-10x slower at
 * C = 8..32. The floats after the last whole period (n*C % P of them) take a scalar loop.
 * One body in plain C, compiled three times (AVX-512, AVX2 + FMA, the build's target) and chosen by
 * sf_cpu_isa_active(), as codelets/cpu/loss_vec.c. */
#include <math.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "groupnorm_internal.h"

#define VL 16 /* floats per vector: one AVX-512 vector, two AVX2 ones */
#define INLINE static inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline)) /* keeps each variant's target options (vector width) */

typedef float vf __attribute__((vector_size(VL * sizeof(float))));
typedef double vd __attribute__((vector_size(VL / 2 * sizeof(double))));
typedef int vi __attribute__((vector_size(VL * sizeof(int))));

INLINE vf vload(const float *p)
{
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}
INLINE void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }
INLINE vd lo_d(vf v) { return __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7), vd); }
INLINE vd hi_d(vf v)
{
  return __builtin_convertvector(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15), vd);
}
INLINE void vadd_d(double *p, vd v)
{
  vd t;
  memcpy(&t, p, sizeof t);
  t += v;
  memcpy(p, &t, sizeof t);
}
/* dy masked by y > 0 when relu (NaN in y masks, as the reference's y > 0.0f) */
INLINE vf masked(vf dy, vf y, int relu) { return relu ? (vf)((vi)dy & (y > 0.0f)) : dy; }

static int gcd_int(int a, int b) { return b ? gcd_int(b, a % b) : a; }
static int period_of(int C) { return C / gcd_int(C, VL) * VL; }

/* The double sums run over blocks of rows: each vector column of a block is summed in registers, then
 * added to the lane's sum in memory. A block (GN_BLOCK_FLOATS floats of each input) stays in L1 while its
 * columns are summed, so every cache line is read from L2 or beyond once. */
#define GN_BLOCK_FLOATS 2048

/* The terms of one vector at offset o: dv = d, masked by y > 0 when my (the ReLU's output) is given, and
 * dv * e, or dv * dv when square; added into the accumulators sl, sh (dv) and ql, qh (the products). */
#define PAIR_TERMS(o, sl, sh, ql, qh)                                        \
  do {                                                                       \
    vf d_ = vload(d + (o));                                                  \
    if (my) d_ = masked(d_, vload(my + (o)), 1);                             \
    vf e_ = square ? d_ : vload(e + (o));                                    \
    vd l_ = lo_d(d_), h_ = hi_d(d_);                                         \
    sl += l_, sh += h_, ql += l_ * lo_d(e_), qh += h_ * hi_d(e_);            \
  } while (0)

/* s[l] = sum of lane l of dv, q[l] = sum of lane l of dv * e (or dv * dv when square), over `rows` periods of
 * P floats (P % VL == 0), dv = d masked by my > 0 when my != NULL. Each vector column of a block of rows is
 * summed in registers two rows at a time, then added to s and q. */
INLINE void pair_sums_body(double *restrict s, double *restrict q, const float *restrict d, const float *restrict my,
                           const float *restrict e, const int square, size_t rows, int P)
{
  const size_t block = GN_BLOCK_FLOATS / (size_t)P > 2 ? GN_BLOCK_FLOATS / (size_t)P : 2;
  memset(s, 0, (size_t)P * sizeof *s);
  memset(q, 0, (size_t)P * sizeof *q);
  for (size_t r0 = 0; r0 < rows; r0 += block) {
    size_t r1 = r0 + block < rows ? r0 + block : rows;
    for (int j = 0; j < P; j += VL) {
      vd s0 = {0}, s1 = {0}, q0 = {0}, q1 = {0}, s2 = {0}, s3 = {0}, q2 = {0}, q3 = {0};
      size_t o = r0 * (size_t)P + (size_t)j, r = r0;
      for (; r + 2 <= r1; r += 2, o += 2 * (size_t)P) {
        PAIR_TERMS(o, s0, s1, q0, q1);
        PAIR_TERMS(o + (size_t)P, s2, s3, q2, q3);
      }
      if (r < r1) PAIR_TERMS(o, s0, s1, q0, q1);
      vadd_d(s + j, s0 + s2), vadd_d(s + j + VL / 2, s1 + s3);
      vadd_d(q + j, q0 + q2), vadd_d(q + j + VL / 2, q1 + q3);
    }
  }
}

/* y = [relu](a*x + b) per lane, over `rows` periods */
INLINE void affine_body(float *restrict y, const float *restrict x, const float *restrict a, const float *restrict b,
                        size_t rows, int P, int relu)
{
  for (size_t r = 0; r < rows; r++)
    for (int j = 0; j < P; j += VL) {
      size_t o = r * (size_t)P + (size_t)j;
      vf v = vload(x + o) * vload(a + j) + vload(b + j);
      if (relu) v = (vf)((vi)v & ~(v < 0.0f)); /* v < 0 -> 0; NaN stays (v < 0 is false) */
      vstore(y + o, v);
    }
}

/* dx = A*dy' + B*x + K per lane, over `rows` periods */
INLINE void bwd_data_body(float *restrict dx, const float *restrict dy, const float *restrict y,
                          const float *restrict x, const float *restrict A, const float *restrict B,
                          const float *restrict K, size_t rows, int P, int relu)
{
  for (size_t r = 0; r < rows; r++)
    for (int j = 0; j < P; j += VL) {
      size_t o = r * (size_t)P + (size_t)j;
      vf d = masked(vload(dy + o), vload(y + o), relu);
      vstore(dx + o, vload(A + j) * d + vload(B + j) * vload(x + o) + vload(K + j));
    }
}

#define GN_VARIANTS(sfx, attr)                                                                                   \
  attr NOINLINE static void lane_sums_##sfx(double *s, double *q, const float *x, size_t rows, int P)             \
  {                                                                                                              \
    pair_sums_body(s, q, x, NULL, x, 1, rows, P);                                                                \
  }                                                                                                              \
  attr NOINLINE static void lane_bwd_sums_##sfx(double *s, double *q, const float *dy, const float *y,            \
                                                const float *x, size_t rows, int P, int relu)                    \
  {                                                                                                              \
    if (relu)                                                                                                    \
      pair_sums_body(s, q, dy, y, x, 0, rows, P);                                                                \
    else                                                                                                         \
      pair_sums_body(s, q, dy, NULL, x, 0, rows, P);                                                             \
  }                                                                                                              \
  attr NOINLINE static void affine_##sfx(float *y, const float *x, const float *a, const float *b, size_t rows,   \
                                         int P, int relu)                                                        \
  {                                                                                                              \
    affine_body(y, x, a, b, rows, P, relu);                                                                      \
  }                                                                                                              \
  attr NOINLINE static void bwd_data_##sfx(float *dx, const float *dy, const float *y, const float *x,            \
                                           const float *A, const float *B, const float *K, size_t rows, int P,   \
                                           int relu)                                                             \
  {                                                                                                              \
    bwd_data_body(dx, dy, y, x, A, B, K, rows, P, relu);                                                         \
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

/* lanes[l] = per_channel[l % C], l < P */
static void expand_lanes(float *lanes, const float *per_channel, int C, int P)
{
  for (int l = 0; l < P; l++) lanes[l] = per_channel[l % C];
}

void sf_groupnorm_stats(double *stats, const float *x, size_t n, int C, int G)
{
  SF_ASSERT(G > 0 && C % G == 0);
  const int P = period_of(C), cpg = C / G;
  const size_t total = n * (size_t)C, rows = total / (size_t)P;
  double *s = (double *)sf_workspace_floats(SF_GN_WS_SLOT, 4 * (size_t)P), *q = s + P;
  GN_DISPATCH(lane_sums, s, q, x, rows, P);
  for (size_t k = rows * (size_t)P; k < total; k++) { /* the partial last period: lane k % P */
    double v = x[k];
    s[k % (size_t)P] += v;
    q[k % (size_t)P] += v * v;
  }
  for (int l = 0; l < P; l++) {
    int g = l % C / cpg;
    stats[2 * g] += s[l];
    stats[2 * g + 1] += q[l];
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
  GN_DISPATCH(affine, y, x, al, bl, rows, P, relu);
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
  const int P = period_of(C);
  const size_t total = n * (size_t)C, rows = total / (size_t)P;
  double *s = (double *)sf_workspace_floats(SF_GN_WS_SLOT, 4 * (size_t)P + 4 * (size_t)C), *q = s + P;
  double *sdy = q + P, *sdyx = sdy + C;
  GN_DISPATCH(lane_bwd_sums, s, q, dy, y, x, rows, P, relu);
  for (size_t k = rows * (size_t)P; k < total; k++) {
    double d = relu && !(y[k] > 0.0f) ? 0.0 : dy[k];
    s[k % (size_t)P] += d;
    q[k % (size_t)P] += d * (double)x[k];
  }
  memset(sdy, 0, 2 * (size_t)C * sizeof(double));
  for (int l = 0; l < P; l++) {
    sdy[l % C] += s[l];
    sdyx[l % C] += q[l];
  }
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
  GN_DISPATCH(bwd_data, dx, dy, y, x, Al, Bl, Kl, rows, P, relu);
  for (size_t k = rows * (size_t)P; k < total; k++) {
    size_t c = k % (size_t)C;
    float d = relu && !(y[k] > 0.0f) ? 0.0f : dy[k];
    dx[k] = A[c] * d + B[c] * x[k] + K[c];
  }
}
