/* 3x3x3 convolution (padding 1, stride 1, no bias), forward and dX, with bf16 operands and fp32 accumulation on
 * AMX tiles (TDPBF16PS), for torch_amp: 1 on CPU workers of CPUs with AMX-BF16 (Sapphire Rapids and later
 * Xeons). Same contract and rounding as conv3d_bf16.c (scaffold/ops.h).
 *
 * An implicit GEMM on the zero-padded bf16 slab (conv3d_bf16_internal.h), computed on the padded grid: output
 * row q of the GEMM is padded voxel q, and its tap-t input is padded voxel q + offset(t), so the A tile of 16
 * consecutive padded voxels x 32 input channels is one strided tile load straight from the slab (rows Kp
 * channels apart), whatever the tap. Rows of W a multiple of 16 (32^2 and 16^2 planes) go in runs of 16 interior
 * voxels, two per block, and their C tiles are stored straight into y; other planes are computed on the whole
 * padded grid, outputs at padding voxels dropped (about (W+2)(H+2)/(WH) extra work: 56 % at 8^2). B tiles hold
 * the weights of one tap and 32 input channels for 16 output channels, packed once per call as
 * [tap][chunk][pair][16][2]. Block: 2 A tiles (32 voxels) x 2 B tiles (32 output channels) into 4 C tiles over
 * all 27 taps x Kp/32 chunks; then the C tiles go into y (through a small buffer on the padded grid: interior
 * voxels only). Channel counts <= 32 take one chunk of Kp = K rounded up to even. */
#include <string.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "../common/amx_internal.h"
#include "conv3d_bf16_internal.h"

/* wf: (ntaps, nk, NB, kc/2, 16, 2) fp32, block n of 16 output channels from c0 = 16n; forward w[t][k][c], dX
 * w[26-t][c][k]; zero beyond K inputs and N outputs (the general case; pack_weights_bf16 below is the
 * fast one). fold: the 3 taps kw = 0..2 of a row (kd, kh) are one tap of 3*Kp inputs, input kw*Kp + k. */
static void pack_weights(float *wf, const float *w, int Cin, int Cout, int flip, int Kp, int kc, int NB, int fold)
{
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout, Kt = fold ? 3 * Kp : Kp, nk = Kt / kc, ntaps = fold ? 9 : 27;
  memset(wf, 0, sizeof(float) * ntaps * (size_t)Kt * NB * 16);
  for (int t = 0; t < 27; t++) {
    const float *src = w + (size_t)(flip ? 26 - t : t) * Cin * Cout;
    int gt = fold ? t / 3 : t, k0 = fold ? t % 3 * Kp : 0; /* GEMM tap and first GEMM input */
    for (int k = 0; k < K; k++) {
      int kk = k0 + k, chunk = kk / kc, pair = (kk % kc) / 2, s = kk % 2;
      for (int c = 0; c < N; c++) {
        size_t at = ((((size_t)gt * nk + chunk) * NB + c / 16) * (kc / 2) + pair) * 32 + (size_t)(c % 16) * 2 + s;
        wf[at] = flip ? src[(size_t)c * Cout + k] : src[(size_t)k * Cout + c];
      }
    }
  }
}

/* wb: the same layout as pack_weights, in bf16, straight from w with vector moves, for K == Kp (no
 * padding input channel) and N a multiple of 16: per tap, pair of input channels and block of 16 outputs,
 * one 64-byte B-tile row. Forward: the pair's two weight rows, converted together and interleaved; dX:
 * the 16 outputs' pairs gathered as 64-bit words, already interleaved. Packing through pack_weights took
 * longer than the AMX products on the deep levels (27 x 512 x 512 weights for a 4^3 slab). */
/* dX's layout for whole K chunks of 32 (kc == 32): per tap, block of 16 outputs n (rows 16n.. of w[26-t]) and 32
 * inputs k0.. (their columns), the 16 rows converted to 16 pairs each and transposed as 16 x 16 32-bit pairs in
 * registers, so row p of the result is the B-tile row of pair p: 3-4x faster than gathering the pairs */
SF_AMX_TARGET static void pack_weights_bf16_flip32(sf_bf16 *wb, const float *w, int Cin, int Cout, int Kp, int NB)
{
  const int nk = Kp / 32;
  for (int t = 0; t < 27; t++) {
    const float *src = w + (size_t)(26 - t) * Cin * Cout;
    for (int n = 0; n < NB; n++)
      for (int k0 = 0; k0 < Kp; k0 += 32) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) {
          const float *row = src + (size_t)(16 * n + i) * Cout + k0;
          r[i] = _mm512_castsi512_ps((__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + 16), _mm512_loadu_ps(row)));
        }
        sf_amx_transpose16(r);
        sf_bf16 *dst = wb + (((size_t)t * nk + k0 / 32) * NB + n) * 16 * 32;
        for (int p = 0; p < 16; p++) _mm512_storeu_ps((float *)(dst + (size_t)p * 32), r[p]);
      }
  }
}

SF_AMX_TARGET static void pack_weights_bf16(sf_bf16 *wb, const float *w, int Cin, int Cout, int flip, int Kp, int kc,
                                            int NB)
{
  if (flip && kc == 32) {
    pack_weights_bf16_flip32(wb, w, Cin, Cout, Kp, NB);
    return;
  }
  const int nk = Kp / kc, half = kc / 2;
  __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                   5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  __m256i rows = _mm256_setr_epi32(0, Cout, 2 * Cout, 3 * Cout, 4 * Cout, 5 * Cout, 6 * Cout, 7 * Cout);
  for (int t = 0; t < 27; t++) {
    const float *src = w + (size_t)(flip ? 26 - t : t) * Cin * Cout;
    for (int k0 = 0; k0 < Kp; k0 += 2) {
      sf_bf16 *dst = wb + (((size_t)t * nk + k0 / kc) * NB * half + (k0 % kc) / 2) * 32;
      for (int n = 0; n < NB; n++, dst += (size_t)half * 32) {
        __m512bh v;
        if (!flip) { /* rows k0, k0+1 of w[t], channels 16n.. */
          const float *r0 = src + (size_t)k0 * Cout + 16 * n;
          v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(r0 + Cout), _mm512_loadu_ps(r0));
          v = (__m512bh)_mm512_permutexvar_epi16(inter, (__m512i)v);
        } else { /* rows 16n.. of w[26-t], the pair (k0, k0+1) of each */
          const float *b0 = src + (size_t)16 * n * Cout + k0;
          __m512d lo = _mm512_i32gather_pd(rows, (const void *)b0, 4);
          __m512d hi = _mm512_i32gather_pd(rows, (const void *)(b0 + (size_t)8 * Cout), 4);
          v = _mm512_cvtne2ps_pbh(_mm512_castpd_ps(hi), _mm512_castpd_ps(lo));
        }
        _mm512_storeu_si512(dst, (__m512i)v);
      }
    }
  }
}

/* The 32 padded voxels from q of the 2 x 2 C tiles (through buf: 32 rows x 32 floats) into y: interior voxels
 * only, channels [n0, n0+nb) of N */
static void store_block(float *y, const float *buf, size_t q, int nd, int H, int W, int N, int n0, int nb)
{
  const size_t prow = (size_t)W + 2, pplane = prow * (H + 2);
  size_t pd = q / pplane, ph = q / prow % (H + 2), pw = q % prow; /* then stepped, not divided, per voxel */
  for (int i = 0; i < 32; i++) {
    if (pd >= 1 && pd <= (size_t)nd && ph >= 1 && ph <= (size_t)H && pw >= 1 && pw <= (size_t)W)
      memcpy(y + (((pd - 1) * H + ph - 1) * W + pw - 1) * N + n0, buf + (size_t)i * 32, sizeof(float) * nb);
    if (++pw == prow) pw = 0, ph++;
    if (ph == (size_t)H + 2) ph = 0, pd++;
  }
}

/* C tiles (0: voxels of run a, channels n0..; 1: run a, n0+16..; 2: run b, n0..; 3: run b, n0+16..) = sum over
 * the ntaps GEMM taps and chunks; xa, xb: the slab at the first padded voxel of runs a and b (16 voxels each,
 * consecutive in the padded grid; xb NULL: run a only), wb: the packed weights */
SF_AMX_TARGET static void amx_block(const sf_bf16 *xa, const sf_bf16 *xb, size_t xstride_b, const ptrdiff_t *toff,
                                    int ntaps, const sf_bf16 *wb, int nk, int kc, int NB, int n0blk, int two_n)
{
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  size_t bstride = (size_t)(kc / 2) * 32; /* bf16 per B block */
  for (int t = 0; t < ntaps; t++)
    for (int c = 0; c < nk; c++) {
      const sf_bf16 *b = wb + (((size_t)t * nk + c) * NB + n0blk) * bstride;
      _tile_loadd(4, xa + toff[t] + (size_t)c * kc, xstride_b);
      _tile_loadd(6, b, 64);
      _tile_dpbf16ps(0, 4, 6);
      if (xb) {
        _tile_loadd(5, xb + toff[t] + (size_t)c * kc, xstride_b);
        _tile_dpbf16ps(2, 5, 6);
      }
      if (two_n) {
        _tile_loadd(7, b + bstride, 64);
        _tile_dpbf16ps(1, 4, 7);
        if (xb) _tile_dpbf16ps(3, 5, 7);
      }
    }
}

SF_AMX_TARGET static void amx_store(float *buf)
{
  _tile_stored(0, buf, 128);
  _tile_stored(1, buf + 16, 128);
  _tile_stored(2, buf + 16 * 32, 128);
  _tile_stored(3, buf + 16 * 32 + 16, 128);
}

/* The C tiles of runs a and b (voxels va.., vb.. of y, 16 each) straight into y: N a multiple of 16 */
SF_AMX_TARGET static void amx_store_runs(float *y, size_t va, size_t vb, int has_b, int N, int n0, int two_n)
{
  const size_t ys = (size_t)N * sizeof(float);
  _tile_stored(0, y + va * N + n0, ys);
  if (two_n) _tile_stored(1, y + va * N + n0 + 16, ys);
  if (!has_b) return;
  _tile_stored(2, y + vb * N + n0, ys);
  if (two_n) _tile_stored(3, y + vb * N + n0 + 16, ys);
}

/* Interior voxel v's place in the slab xs of vs bf16 per voxel: the padded grid, or the compact one */
static inline const sf_bf16 *run_start(const sf_bf16 *xs, size_t v, int vs, int compact, int H, int W)
{
  size_t row = v / W; /* d * H + h */
  if (compact) return xs + sf_amx_compact_idx(v, H, W) * vs;
  return xs + sf_bf16_pidx((int)(row / H), (int)(row % H), (int)(v % W), H, W) * vs;
}

/* The output voxels in runs of 16, each consecutive in the slab xs (vs bf16 per voxel): rows of W a multiple of 16
 * on the padded grid, or the planes on the compact grid; two runs per block, so no product is spent on a padding
 * voxel; the C tiles go to y directly when N fills them */
SF_AMX_TARGET static void amx_runs(float *y, float *buf, const sf_bf16 *xs, int vs, int compact, const ptrdiff_t *toff,
                                   int ntaps, const sf_bf16 *wb, int nk, int kc, int NB, int nd, int H, int W, int N)
{
  const size_t nruns = (size_t)nd * H * W / 16;
  for (int nb0 = 0; nb0 < NB; nb0 += 2) {
    int two_n = nb0 + 1 < NB, n0 = nb0 * 16, nb = N - n0 < 32 ? N - n0 : 32;
    for (size_t r = 0; r < nruns; r += 2) {
      size_t va = 16 * r, vb = va + 16;
      int has_b = r + 1 < nruns;
      const sf_bf16 *xa = run_start(xs, va, vs, compact, H, W);
      const sf_bf16 *xb = has_b ? run_start(xs, vb, vs, compact, H, W) : NULL;
      amx_block(xa, xb, (size_t)vs * 2, toff, ntaps, wb, nk, kc, NB, nb0, two_n);
      if (N % 16 == 0) {
        amx_store_runs(y, va, vb, has_b, N, n0, two_n);
        continue;
      }
      amx_store(buf);
      for (int i = 0; i < (has_b ? 32 : 16); i++) /* runs a and b: rows 0-15 and 16-31 of buf */
        memcpy(y + ((i < 16 ? va : vb - 16) + i) * N + n0, buf + (size_t)i * 32, sizeof(float) * nb);
    }
  }
}

/* xc: the slab on the compact grid (conv3d_amx_internal.h), for planes too narrow for runs along a row; each voxel
 * holds 3*Kp channels, the input at (d, h, w-1), (d, h, w), (d, h, w+1) (zero past the row), so the 3 taps along
 * w are one GEMM tap of 3*Kp inputs. row: W*Kp bf16 of scratch */
static void compact_pad(sf_bf16 *xc, sf_bf16 *row, const float *x_lo, const float *x, const float *x_hi, int nd, int H,
                        int W, int K, int Kp)
{
  const size_t vs = 3 * (size_t)Kp, plane = (size_t)H * W * K;
  memset(xc, 0, sizeof(sf_bf16) * (size_t)(nd + 2) * (H + 2) * W * vs);
  for (int e = -1; e <= nd; e++) {
    const float *src = e < 0 ? x_lo : e >= nd ? x_hi : x + (size_t)e * plane;
    if (!src) continue;
    for (int h = 0; h < H; h++, src += (size_t)W * K) {
      memset(row, 0, sizeof(sf_bf16) * (size_t)W * Kp);
      for (int w = 0; w < W; w++) sf_bf16_from_floats(row + (size_t)w * Kp, src + (size_t)w * K, (size_t)K);
      sf_bf16 *dst = xc + ((size_t)(e + 1) * (H + 2) + h + 1) * W * vs;
      for (int w = 0; w < W; w++)
        for (int kw = 0; kw < 3; kw++)
          if (w + kw - 1 >= 0 && w + kw - 1 < W)
            memcpy(dst + w * vs + (size_t)kw * Kp, row + (size_t)(w + kw - 1) * Kp, sizeof(sf_bf16) * Kp);
    }
  }
}

/* K and N whose packed weights are the same for every slab geometry: whole K chunks of 32 (the fold's layout is then
 * the unfolded one) and whole blocks of 16 outputs, packed by pack_weights_bf16 */
static int packed_layout_fixed(int K, int N) { return K % 32 == 0 && N % 16 == 0; }

size_t sf_conv3d_amx_packed_bytes(int Cin, int Cout, int flip)
{
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout;
  return packed_layout_fixed(K, N) ? (size_t)27 * K * N * sizeof(sf_bf16) : 0;
}

/* Both layouts from one read of w (Cin and Cout multiples of 32): per tap t, block of 16 inputs ci0.. and 32 outputs
 * k0..: the forward's B rows pair input rows (ci, ci+1) for 16 outputs (interleaved by one permutation), the dX's
 * (tap 26 - t) pair outputs for the 16 inputs (a 16 x 16 transpose of 32-bit pairs, as pack_weights_bf16_flip32) */
SF_AMX_TARGET static void pack_weights_bf16_both(sf_bf16 *wf, sf_bf16 *wd, const float *w, int Cin, int Cout)
{
  const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const int nkf = Cin / 32, NBf = Cout / 16, nkd = Cout / 32, NBd = Cin / 16;
  for (int t = 0; t < 27; t++)
    for (int ci0 = 0; ci0 < Cin; ci0 += 16)
      for (int k0 = 0; k0 < Cout; k0 += 32) {
        __m512 lo[16], hi[16], r[16];
        for (int i = 0; i < 16; i++) {
          const float *row = w + ((size_t)t * Cin + ci0 + i) * Cout + k0;
          lo[i] = _mm512_loadu_ps(row), hi[i] = _mm512_loadu_ps(row + 16);
          r[i] = _mm512_castsi512_ps((__m512i)_mm512_cvtne2ps_pbh(hi[i], lo[i]));
        }
        for (int m = 0; m < 8; m++) { /* forward: input pair (ci0 + 2m, +1), outputs k0.. and k0+16.. */
          int c = ci0 + 2 * m;
          sf_bf16 *dst = wf + ((((size_t)t * nkf + c / 32) * NBf + k0 / 16) * 16 + (c % 32) / 2) * 32;
          __m512i a = _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(lo[2 * m + 1], lo[2 * m]));
          __m512i b = _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(hi[2 * m + 1], hi[2 * m]));
          _mm512_storeu_si512(dst, a);
          _mm512_storeu_si512(dst + 16 * 32, b);
        }
        sf_amx_transpose16(r); /* dX: row p = output pair (k0 + 2p, +1) of the 16 inputs */
        sf_bf16 *dst = wd + (((size_t)(26 - t) * nkd + k0 / 32) * NBd + ci0 / 16) * 16 * 32;
        for (int p = 0; p < 16; p++) _mm512_storeu_ps((float *)(dst + (size_t)p * 32), r[p]);
      }
}

void sf_conv3d_amx_pack(void *wfwd, void *wdx, const float *w, int Cin, int Cout)
{
  SF_ASSERT((!wfwd || packed_layout_fixed(Cin, Cout)) && (!wdx || packed_layout_fixed(Cout, Cin)));
  if (wfwd && wdx && Cin % 32 == 0 && Cout % 32 == 0) {
    pack_weights_bf16_both((sf_bf16 *)wfwd, (sf_bf16 *)wdx, w, Cin, Cout);
    return;
  }
  if (wfwd) pack_weights_bf16((sf_bf16 *)wfwd, w, Cin, Cout, 0, Cin, 32, Cout / 16);
  if (wdx) pack_weights_bf16((sf_bf16 *)wdx, w, Cin, Cout, 1, Cout, 32, Cin / 16);
}

static void conv3d_amx(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w,
                       const sf_bf16 *wpre, int nd, int H, int W, int Cin, int Cout, int flip);

void sf_conv3d_amx(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd, int H, int W,
                   int Cin, int Cout, int flip)
{
  conv3d_amx(y, x_lo, x, x_hi, w, NULL, nd, H, W, Cin, Cout, flip);
}

void sf_conv3d_amx_packed(float *y, const float *x_lo, const float *x, const float *x_hi, const void *wp, int nd, int H,
                          int W, int Cin, int Cout, int flip)
{
  SF_ASSERT(sf_conv3d_amx_packed_bytes(Cin, Cout, flip) > 0);
  conv3d_amx(y, x_lo, x, x_hi, NULL, (const sf_bf16 *)wp, nd, H, W, Cin, Cout, flip);
}

/* wpre: the weights packed by sf_conv3d_amx_pack, or NULL: packed here from w */
SF_AMX_TARGET static void conv3d_amx(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w,
                                     const sf_bf16 *wpre, int nd, int H, int W, int Cin, int Cout, int flip)
{
  SF_ASSERT(sf_amx_supported());
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout;
  int Kp = K <= 32 ? (K + 1) & ~1 : (K + 31) / 32 * 32;
  /* rows of W a multiple of 16 go in runs along the padded grid's rows; narrower planes whose voxels fill runs of
   * 16 on the compact grid, where 3*Kp makes whole K chunks */
  int rows = W % 16 == 0, compact = !rows && (size_t)H * W % 16 == 0 && (Kp % 32 == 0 || 3 * Kp <= 32);
  /* few channels (K <= 10: the input layer's 3, base 8's 8), or the compact grid: the 3 taps along w of each
   * (kd, kh) are adjacent voxels of the padded slab, or one voxel of the compact one, so one A tile of 3*Kp
   * columns covers them: 9 GEMM taps of 3*Kp inputs, not 27 of Kp */
  int fold = compact || 3 * Kp <= 32, Kt = fold ? 3 * Kp : Kp, ntaps = fold ? 9 : 27, vs = compact ? 3 * Kp : Kp;
  int kc = Kt < 32 ? Kt : 32, nk = Kt / kc, NB = (N + 15) / 16;
  size_t nvox = compact ? (size_t)(nd + 2) * (H + 2) * W : sf_bf16_pad_voxels(nd, H, W) + SF_AMX_MARGIN;
  sf_bf16 *xs = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_X, nvox * vs / 2 + 1);
  const sf_bf16 *wb = wpre;
  float *buf = sf_workspace_floats(SF_BF16_SLOT_LIST, 32 * 32 + (size_t)W * Kp / 2 + 1);
  if (compact)
    compact_pad(xs, (sf_bf16 *)(buf + 32 * 32), x_lo, x, x_hi, nd, H, W, K, Kp);
  else {
    sf_bf16_pad_slab(xs, x_lo, x, x_hi, nd, H, W, K, Kp);
    memset(xs + (nvox - SF_AMX_MARGIN) * Kp, 0, sizeof(sf_bf16) * SF_AMX_MARGIN * Kp);
  }
  /* the fold's weight layout, [(kd, kh)][kw * Kp + k], is the unfolded [tap][k] one when K chunks are whole */
  if (!wb) {
    sf_bf16 *pack = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_PACK, (size_t)ntaps * Kt * NB * 8 + 1);
    if ((!fold || Kp % 32 == 0) && K == Kp && N % 16 == 0)
      pack_weights_bf16(pack, w, Cin, Cout, flip, Kp, kc, NB);
    else {
      float *wf = sf_workspace_floats(SF_BF16_SLOT_AUX, (size_t)ntaps * Kt * NB * 16);
      pack_weights(wf, w, Cin, Cout, flip, Kp, kc, NB, fold);
      sf_bf16_from_floats(pack, wf, (size_t)ntaps * Kt * NB * 16);
    }
    wb = pack;
  } else
    SF_ASSERT(packed_layout_fixed(K, N) && kc == 32 && NB * 16 == N);
  ptrdiff_t toff[27];
  for (int t = 0; t < ntaps; t++)
    toff[t] = compact ? ((ptrdiff_t)(t / 3 - 1) * (H + 2) + (t % 3 - 1)) * W * vs
                      : sf_bf16_tap_off(fold ? 3 * t : t, H, W) * Kp;
  sf_amx_config cfg;
  sf_amx_config_set(&cfg, 16, kc * 2, kc / 2);
  _tile_loadconfig(&cfg);
  if (rows || compact) {
    amx_runs(y, buf, xs, vs, compact, toff, ntaps, wb, nk, kc, NB, nd, H, W, N);
    _tile_release();
    return;
  }
  size_t q0 = sf_bf16_pidx(0, 0, 0, H, W), q1 = sf_bf16_pidx(nd - 1, H - 1, W - 1, H, W) + 1;
  for (int nb0 = 0; nb0 < NB; nb0 += 2) {
    int two_n = nb0 + 1 < NB, n0 = nb0 * 16, nb = N - n0 < 32 ? N - n0 : 32;
    for (size_t q = q0; q < q1; q += 32) {
      amx_block(xs + q * Kp, xs + (q + 16) * Kp, (size_t)Kp * 2, toff, ntaps, wb, nk, kc, NB, nb0, two_n);
      amx_store(buf);
      store_block(y, buf, q, nd, H, W, N, n0, nb);
    }
  }
  _tile_release();
}
