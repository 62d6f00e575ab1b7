/* 3x3x3 convolution (padding 1, stride 1, no bias), forward and dX, with bf16 operands and fp32 accumulation on
 * AVX-512 BF16 (VDPBF16PS), for torch_amp: 1 on CPU workers. NDHWC fp32 activations in and out, (27,Cin,Cout)
 * fp32 weights, as every conv3d kernel (scaffold/ops.h): the input slab and the weights are rounded to bf16 as
 * they are copied (conv3d_bf16_common.c), the products summed in fp32.
 *
 * One VDPBF16PS adds two input channels' products to 16 output channels: lane j += x[2p]*w[2p][j] +
 * x[2p+1]*w[2p+1][j], so the input channels are taken in pairs (an odd count gets a zero channel) and the
 * weights are packed as [tap][pair][output channel][2]. Register block: R <= 12 consecutive output voxels of a
 * row times NV = 1 or 2 vectors of 16 output channels, 24 zmm accumulators over all 27 taps x Kp/2 pairs; per
 * pair NV weight loads and R broadcasts of an input pair. The input is one zero-padded bf16 copy of the slab
 * with its halos (conv3d_bf16_internal.h), so no tap tests a border. dX is the forward conv of dy with the taps
 * mirrored and the channels transposed (flip). */
#include <string.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "conv3d_bf16_internal.h"

#define SF_BF16_MAX_R 12
#define SF_BF16_INLINE SF_BF16_TARGET static inline __attribute__((always_inline))

static inline int32_t load_pair(const sf_bf16 *p)
{
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* y row r (rows ystride floats apart), channels [0, 16*NV) masked by mlast on the last vector = sum over taps
 * t, pairs p of x[r*xstride + toff[t] + 2p .. +1] . wb[t][p][.][..] */
SF_BF16_INLINE void fwd_body(float *y, size_t ystride, const sf_bf16 *x, size_t xstride, const ptrdiff_t *toff,
                             const sf_bf16 *wb, int P, __mmask16 mlast, const int R, const int NV)
{
  __m512 acc[SF_BF16_MAX_R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
  for (int t = 0; t < 27; t++) {
    const sf_bf16 *xt = x + toff[t], *wt = wb + (size_t)t * P * NV * 32;
    for (int p = 0; p < P; p++, wt += NV * 32) {
      __m512bh b[2];
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) {
        b[v] = (__m512bh)_mm512_loadu_si512(wt + 32 * v);
        __asm__("" : "+v"(b[v])); /* one load per weight vector, not one per row */
      }
#pragma GCC unroll 12
      for (int r = 0; r < R; r++) {
        __m512bh a = (__m512bh)_mm512_set1_epi32(load_pair(xt + r * xstride + 2 * p));
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], a, b[v]);
      }
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; r++) {
    if (NV == 2) _mm512_storeu_ps(y + r * ystride, acc[r][0]);
    _mm512_mask_storeu_ps(y + r * ystride + 16 * (NV - 1), mlast, acc[r][NV - 1]);
  }
}

typedef void (*fwd_fn)(float *y, size_t ystride, const sf_bf16 *x, size_t xstride, const ptrdiff_t *toff,
                       const sf_bf16 *wb, int P, __mmask16 mlast);
#define SF_BF16_FWD(R, NV)                                                                                             \
  SF_BF16_TARGET static void fwd_##R##_##NV(float *y, size_t ys, const sf_bf16 *x, size_t xs, const ptrdiff_t *to,     \
                                            const sf_bf16 *wb, int P, __mmask16 m)                                     \
  {                                                                                                                    \
    fwd_body(y, ys, x, xs, to, wb, P, m, R, NV);                                                                       \
  }
#define SF_BF16_FWD_NV(NV)                                                                                             \
  SF_BF16_FWD(1, NV)                                                                                                   \
  SF_BF16_FWD(2, NV)                                                                                                   \
  SF_BF16_FWD(3, NV)                                                                                                   \
  SF_BF16_FWD(4, NV) SF_BF16_FWD(5, NV) SF_BF16_FWD(6, NV) SF_BF16_FWD(7, NV) SF_BF16_FWD(8, NV) SF_BF16_FWD(9, NV)    \
      SF_BF16_FWD(10, NV) SF_BF16_FWD(11, NV) SF_BF16_FWD(12, NV)
SF_BF16_FWD_NV(1)
SF_BF16_FWD_NV(2)
#define SF_BF16_ROW(NV)                                                                                                \
  {                                                                                                                    \
    fwd_1_##NV, fwd_2_##NV, fwd_3_##NV, fwd_4_##NV, fwd_5_##NV, fwd_6_##NV, fwd_7_##NV, fwd_8_##NV, fwd_9_##NV,        \
        fwd_10_##NV, fwd_11_##NV, fwd_12_##NV                                                                          \
  }
static const fwd_fn fwd_blocks[2][SF_BF16_MAX_R] = {SF_BF16_ROW(1), SF_BF16_ROW(2)};

/* wf: (27, P, width, 2) fp32 = the weights of output channels [c0, c0+nb) by input channel pair, zero beyond nb
 * and beyond K input channels. Forward: w[t][k][c0+j]; dX: w[26-t][c0+j][k] (w: (27,Cin,Cout)). */
static void pack_weights(float *wf, const float *w, int Cin, int Cout, int flip, int c0, int nb, int width, int P)
{
  int K = flip ? Cout : Cin;
  memset(wf, 0, sizeof(float) * 27 * P * width * 2);
  for (int t = 0; t < 27; t++) {
    const float *src = w + (size_t)(flip ? 26 - t : t) * Cin * Cout;
    float *dst = wf + (size_t)t * P * width * 2;
    for (int k = 0; k < K; k++)
      for (int j = 0; j < nb; j++)
        dst[((size_t)(k / 2) * width + j) * 2 + k % 2] =
            flip ? src[(size_t)(c0 + j) * Cout + k] : src[(size_t)k * Cout + c0 + j];
  }
}

/* y: (nd,H,W,N) = conv of x: (nd,H,W,K) with halos, (K, N) = (Cin, Cout) forward, (Cout, Cin) dX */
void sf_conv3d_vdpbf16(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd, int H,
                       int W, int Cin, int Cout, int flip)
{
  SF_ASSERT(sf_cpu_bf16_supported());
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout, Kp = (K + 1) & ~1, P = Kp / 2;
  sf_bf16 *xb = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_X, sf_bf16_pad_voxels(nd, H, W) * Kp / 2 + 1);
  float *wf = sf_workspace_floats(SF_BF16_SLOT_AUX, (size_t)27 * P * 64);
  sf_bf16 *wb = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_PACK, (size_t)27 * P * 32);
  ptrdiff_t toff[27];
  for (int t = 0; t < 27; t++) toff[t] = sf_bf16_tap_off(t, H, W) * Kp;
  sf_bf16_pad_slab(xb, x_lo, x, x_hi, nd, H, W, K, Kp);
  int ntiles = (W + SF_BF16_MAX_R - 1) / SF_BF16_MAX_R, tbase = W / ntiles, tlong = W % ntiles;
  for (int co = 0; co < N; co += 32) {
    int nb = N - co < 32 ? N - co : 32, nv = nb > 16 ? 2 : 1;
    __mmask16 mlast = (__mmask16)((1u << (nb - 16 * (nv - 1))) - 1);
    pack_weights(wf, w, Cin, Cout, flip, co, nb, 16 * nv, P);
    sf_bf16_from_floats(wb, wf, (size_t)27 * P * 32 * nv);
    for (int d = 0; d < nd; d++)
      for (int h = 0; h < H; h++) {
        const sf_bf16 *xrow = xb + sf_bf16_pidx(d, h, 0, H, W) * Kp;
        float *yrow = y + ((size_t)d * H + h) * W * N + co;
        for (int i = 0, x0 = 0; i < ntiles; i++) {
          int r = tbase + (i < tlong);
          fwd_blocks[nv - 1][r - 1](yrow + (size_t)x0 * N, N, xrow + (size_t)x0 * Kp, Kp, toff, wb, P, mlast);
          x0 += r;
        }
      }
  }
}
