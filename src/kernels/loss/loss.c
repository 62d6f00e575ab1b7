/* The training loss's only entry, with its vector variants (scaffold/ops.h, sf_loss_partial / sf_loss_backward_batch):
 * the same sums and gradient as sf_loss_partial_ref / sf_loss_backward_batch_ref in src/kernels/loss/loss_ref.c,
 * computed 16 voxels at a time in float. A block of voxels is transposed to class-major (zt[k][j]),
 * softmax uses a Cody-Waite + degree-6 polynomial exp and a Cephes-style log (within a few ulp of
 * expf / logf), and the partial sums run in float lanes flushed to double every SF_LOSS_FLUSH blocks.
 * One body in plain C, compiled three times (AVX-512, AVX2 + FMA, the build's target) and chosen by
 * sf_cpu_isa_active(); GCC vectorises it across the 16 voxels. K > SF_LOSS_VEC_KMAX takes the reference. */
#include <stdint.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#define NB 16               /* voxels per block: one AVX-512 vector, two AVX2 ones */
#define SF_LOSS_VEC_KMAX 32 /* classes handled by the block path (stack arrays of KMAX vectors) */
#define SF_LOSS_FLUSH 64    /* blocks summed in float lanes before adding to the double sums */
#define INLINE static inline __attribute__((always_inline))

/* NB lanes, one per voxel of a block; a comparison gives a vi mask of -1 / 0 per lane */
typedef float vf __attribute__((vector_size(NB * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(NB * sizeof(int32_t))));

INLINE vf vsplat(float s) { return (vf){0} + s; }
INLINE vf vselect(vi mask, vf a, vf b) { return (vf)((mask & (vi)a) | (~mask & (vi)b)); }
INLINE vf vmask01(vi mask) { return (vf)(mask & (vi)vsplat(1.0f)); } /* 1.0f where mask, else 0 */
INLINE vf vload(const float *p)
{
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* exp(x) for x <= 0 (x - max of a softmax row); x below -87 gives exp(-87) ~ 1.6e-38 instead of a
 * smaller or zero value; NaN stays NaN. */
INLINE vf exp_nonpos(vf x)
{
  vf xc = vselect(x >= -87.0f, x, vsplat(-87.0f)); /* NaN -> -87 here, restored at the end */
  vf n = (xc * 1.44269504f + 12582912.0f) - 12582912.0f; /* round(x / ln 2) */
  vf r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f; /* r = x - n ln 2, |r| <= ln2 / 2 */
  vf p = vsplat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  vf scale = (vf)((__builtin_convertvector(n, vi) + 127) << 23); /* 2^n, n in -126..0 */
  return vselect(x != x, x, p * scale);
}

/* log(s) for s >= 1 (a softmax denominator); NaN stays NaN. */
INLINE vf log_ge1(vf s)
{
  vi b = (vi)s;
  vf e = __builtin_convertvector((b >> 23) - 127, vf);
  vf m = (vf)((b & 0x007fffff) | 0x3f800000); /* s = 2^e * m, m in [1, 2) */
  vi big = m > 1.41421356f;
  m = vselect(big, 0.5f * m, m);
  e = e + vmask01(big);
  vf x = m - 1.0f, z = x * x;
  vf y = vsplat(7.0376836292e-2f);
  y = y * x - 1.1514610310e-1f;
  y = y * x + 1.1676998740e-1f;
  y = y * x - 1.2420140846e-1f;
  y = y * x + 1.4249322787e-1f;
  y = y * x - 1.6668057665e-1f;
  y = y * x + 2.0000714765e-1f;
  y = y * x - 2.4999993993e-1f;
  y = y * x + 3.3333331174e-1f;
  y = y * x * z;
  y = y - 2.12194440e-4f * e - 0.5f * z;
  return vselect(s != s, s, x + y + 0.693359375f * e);
}

/* One block of NB voxels, class-major: zt[k], p[k] the logits and softmax of class k; mx the row max,
 * s = sum_k exp(zt[k] - mx); y the labels, w = cw[y] (0 on padding), valid 1 / 0, zy the label's logit. */
typedef struct {
  vf zt[SF_LOSS_VEC_KMAX], p[SF_LOSS_VEC_KMAX];
  vf mx, s, valid, w, zy;
  vi y;
} loss_block;

/* Loads voxels i0..i0+nv-1 of z: (n,K) into b->zt, labels into b->y (checked), padding to NB with
 * zero logits, label 0 and valid 0. */
INLINE void load_block(loss_block *b, const float *z, const uint16_t *lab, const float *cw, size_t i0, int nv,
                       int K)
{
  float zt[SF_LOSS_VEC_KMAX][NB], w[NB], valid[NB];
  int32_t y[NB];
  int bad = 0;
  for (int j = 0; j < NB; j++) {
    int ok = j < nv;
    y[j] = ok ? lab[i0 + j] : 0;
    bad |= y[j] >= K;
    valid[j] = ok ? 1.0f : 0.0f;
  }
  if (bad)
    for (int j = 0; j < nv; j++)
      if (y[j] >= K) SF_ABORT("loss: label %d at voxel %zu is out of range 0..%d", y[j], i0 + j, K - 1);
  for (int j = 0; j < NB; j++) w[j] = cw[y[j]] * valid[j];
  if (nv == NB)
    for (int j = 0; j < NB; j++)
      for (int k = 0; k < K; k++) zt[k][j] = z[(i0 + j) * K + k];
  else
    for (int j = 0; j < NB; j++)
      for (int k = 0; k < K; k++) zt[k][j] = j < nv ? z[(i0 + j) * K + k] : 0.0f;
  for (int k = 0; k < K; k++) b->zt[k] = vload(zt[k]);
  memcpy(&b->y, y, sizeof y);
  b->w = vload(w);
  b->valid = vload(valid);
}

INLINE void softmax_block(loss_block *b, int K)
{
  vf mx = b->zt[0], s = {0}, zy = {0};
  for (int k = 1; k < K; k++) mx = vselect(b->zt[k] > mx, b->zt[k], mx); /* NaN logits make p NaN via exp */
  for (int k = 0; k < K; k++) {
    b->p[k] = exp_nonpos(b->zt[k] - mx);
    s += b->p[k];
    zy += vselect(b->y == k, b->zt[k], (vf){0});
  }
  vf inv = 1.0f / s;
  for (int k = 0; k < K; k++) b->p[k] *= inv;
  b->mx = mx, b->s = s, b->zy = zy;
}

/* lanes: (SF_LOSS_NACC(K)) float partial sums of acc's entries, one lane per voxel of the block. */
INLINE void partial_block(vf *lanes, const loss_block *b, int K)
{
  lanes[0] += b->w * (log_ge1(b->s) + b->mx - b->zy); /* w[y] * -log p_y */
  lanes[1] += b->w;
  for (int k = 0; k < K; k++) {
    vf pk = b->p[k] * b->valid, yk = vselect(b->y == k, b->valid, (vf){0});
    lanes[2 + 3 * k + 0] += pk * yk;
    lanes[2 + 3 * k + 1] += pk;
    lanes[2 + 3 * k + 2] += yk;
  }
}

INLINE void flush_lanes(double *acc, vf *lanes, int nacc)
{
  for (int a = 0; a < nacc; a++) {
    double t = 0;
    for (int j = 0; j < NB; j++) t += lanes[a][j];
    acc[a] += t;
    lanes[a] = (vf){0};
  }
}

INLINE void partial_body(double *acc, const float *z, const uint16_t *lab, const float *cw, size_t n, int K)
{
  loss_block b;
  vf lanes[SF_LOSS_NACC(SF_LOSS_VEC_KMAX)];
  const int nacc = SF_LOSS_NACC(K);
  for (int a = 0; a < nacc; a++) lanes[a] = (vf){0};
  size_t blocks = 0;
  for (size_t i0 = 0; i0 < n; i0 += NB) {
    int nv = n - i0 < NB ? (int)(n - i0) : NB;
    load_block(&b, z, lab, cw, i0, nv, K);
    softmax_block(&b, K);
    partial_block(lanes, &b, K);
    if (++blocks % SF_LOSS_FLUSH == 0) flush_lanes(acc, lanes, nacc);
  }
  flush_lanes(acc, lanes, nacc);
}

/* ga, gb: (K) the Dice gradient g_k = gb[k] + ga[k]*Y_k of sf_loss_backward_batch_ref, in float. */
static void dice_grad_coefs(float *ga, float *gb, const double *acc, int batch, int K)
{
  const double inv_fg = 1.0 / ((double)(K - 1) * batch);
  ga[0] = gb[0] = 0.0f;
  for (int k = 1; k < K; k++) {
    double I = 2.0 * acc[2 + 3 * k], S = acc[2 + 3 * k + 1] + acc[2 + 3 * k + 2];
    if (S == 0.0) {
      ga[k] = gb[k] = 0.0f;
    } else {
      double se = S + SF_DICE_EPS;
      ga[k] = (float)(-inv_fg * 2.0 / se);
      gb[k] = (float)(inv_fg * (I + SF_DICE_EPS) / (se * se));
    }
  }
}

/* dz for one block, written for its valid voxels: dz_k = scale*(wc*(P_k - Y_k) + P_k*(g_k - pg)). */
INLINE void backward_block(float *dz, const loss_block *b, const float *ga, const float *gb, float inv_w, float scale,
                           size_t i0, int nv, int K)
{
  vf g[SF_LOSS_VEC_KMAX], pg = {0};
  float dzt[SF_LOSS_VEC_KMAX][NB];
  for (int k = 0; k < K; k++) {
    g[k] = vsplat(gb[k]) + vselect(b->y == k, vsplat(ga[k]), (vf){0});
    pg += b->p[k] * g[k];
  }
  vf wc = b->w * inv_w;
  for (int k = 0; k < K; k++) {
    vf d = wc * (b->p[k] - vmask01(b->y == k)) + b->p[k] * (g[k] - pg);
    vf dk = scale * d;
    memcpy(dzt[k], &dk, sizeof dk);
  }
  for (int j = 0; j < nv; j++)
    for (int k = 0; k < K; k++) dz[(i0 + j) * K + k] = dzt[k][j];
}

INLINE void backward_body(float *dz, const float *z, const uint16_t *lab, const float *cw, const double *acc,
                          double wsum, int batch, size_t n, int K, float scale)
{
  float ga[SF_LOSS_VEC_KMAX], gb[SF_LOSS_VEC_KMAX];
  dice_grad_coefs(ga, gb, acc, batch, K);
  const float inv_w = (float)(1.0 / wsum);
  loss_block b;
  for (size_t i0 = 0; i0 < n; i0 += NB) {
    int nv = n - i0 < NB ? (int)(n - i0) : NB;
    load_block(&b, z, lab, cw, i0, nv, K);
    softmax_block(&b, K);
    backward_block(dz, &b, ga, gb, inv_w, scale, i0, nv, K);
  }
}

#define LOSS_VARIANTS(suffix, attr)                                                                               \
  attr static void partial_##suffix(double *acc, const float *z, const uint16_t *lab, const float *cw, size_t n, \
                                    int K)                                                                        \
  {                                                                                                               \
    partial_body(acc, z, lab, cw, n, K);                                                                          \
  }                                                                                                               \
  attr static void backward_##suffix(float *dz, const float *z, const uint16_t *lab, const float *cw,           \
                                     const double *acc, double wsum, int batch, size_t n, int K, float scale)    \
  {                                                                                                               \
    backward_body(dz, z, lab, cw, acc, wsum, batch, n, K, scale);                                                 \
  }

#if defined(__x86_64__) && defined(__GNUC__)
LOSS_VARIANTS(avx512, __attribute__((target("avx512f,fma,prefer-vector-width=512"))))
LOSS_VARIANTS(avx2, __attribute__((target("avx2,fma"))))
#endif
LOSS_VARIANTS(c, )

void sf_loss_partial(double *acc, const float *z, const uint16_t *lab, const float *cw, size_t n, int K)
{
  SF_ASSERT(K >= 2);
  if (K > SF_LOSS_VEC_KMAX) {
    sf_loss_partial_ref(acc, z, lab, cw, n, K);
    return;
  }
  switch (sf_cpu_isa_active()) {
#if defined(__x86_64__) && defined(__GNUC__)
  case SF_ISA_AVX512: partial_avx512(acc, z, lab, cw, n, K); break;
  case SF_ISA_AVX2: partial_avx2(acc, z, lab, cw, n, K); break;
#endif
  default: partial_c(acc, z, lab, cw, n, K); break;
  }
}

void sf_loss_backward_batch(float *dz, const float *z, const uint16_t *lab, const float *cw, const double *acc,
                            double wsum, int batch, size_t n, int K, float scale)
{
  SF_ASSERT(K >= 2 && batch >= 1);
  if (K > SF_LOSS_VEC_KMAX) {
    sf_loss_backward_batch_ref(dz, z, lab, cw, acc, wsum, batch, n, K, scale);
    return;
  }
  switch (sf_cpu_isa_active()) {
#if defined(__x86_64__) && defined(__GNUC__)
  case SF_ISA_AVX512: backward_avx512(dz, z, lab, cw, acc, wsum, batch, n, K, scale); break;
  case SF_ISA_AVX2: backward_avx2(dz, z, lab, cw, acc, wsum, batch, n, K, scale); break;
#endif
  default: backward_c(dz, z, lab, cw, acc, wsum, batch, n, K, scale); break;
  }
}
