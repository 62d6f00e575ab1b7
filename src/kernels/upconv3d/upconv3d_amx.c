/* Transposed convolution, kernel 2, stride 2, with bias, with bf16 operands and fp32 sums on AMX tiles, for
 * torch_amp: 1 on CPU workers with the AMX engine, where the shapes allow (sf_upconv3d_amx_fits); the other shapes
 * take the small-GEMM path of upconv3d_direct.c (gemm_amx.c). Same contract and rounding as that path
 * (scaffold/ops.h). x (nd,H,W,Cin), y (2nd,2H,2W,Cout), w (Cin, 8*Cout): column j = k*Cout + co of child
 * k = a*4 + p*2 + q (upconv3d_child.h).
 *
 * The GEMMs are those of upconv3d_direct.c, Y8 (voxels x 8*Cout) = X . W and its two transposes, but the tiles
 * read and write the tensors where they lie instead of through staged copies (the y8/g8 chunks and the C buffer,
 * 3 passes over the output that took most of the time: 2.5-5 GB/s at ps 5 b16):
 *   - forward: a tile of R voxels of one input row (R = 16, 8 or 4 dividing W) x 16 columns of Y8 is R rows of
 *     one child pair, 2*Cout floats apart in y, so it is stored straight into y; its C tiles start from the bias;
 *   - dX: an A tile of the output gradient (R voxels x a K chunk of 32 columns, or 2*Cout below 16 outputs) is R
 *     rows of a child pair run in dy, so it is loaded from dy's bf16 copy, and the C tiles go straight into dx;
 *   - dW: dW (Cin x 8*Cout) += X^T . G8 over blocks of 32 voxels: X transposed per block ([ci][32 voxels]) and
 *     G8 in VNNI pairs of voxels per block of 16 columns, each packed once from the fp32 tensors; the sums of all
 *     blocks are added to dw once. db as upconv3d_direct.c (sf_bias_grad_rows). */
#include <stdint.h>
#include <string.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "../common/amx_internal.h"
#include "../common/bias_grad.h"
#include "upconv3d_child.h"
#include "upconv3d_variants.h"

#define UA_SLOT_A 2 /* the bf16 copy of x, of dy, or x transposed */
#define UA_SLOT_B 3 /* packed weights (forward, dX), packed output gradient (dW) */
#define UA_SLOT_AUX 0 /* the bias rows (forward), the C staging buffer (dW) */

/* Voxels per tile along an input row: 16, 8 or 4 dividing W, else 0 */
static int rows_per_tile(int W) { return W <= 0 ? 0 : W % 16 == 0 ? 16 : W % 8 == 0 ? 8 : W % 4 == 0 ? 4 : 0; }

int sf_upconv3d_amx_fits(int W, int Cin, int Cout)
{
  /* 16 columns of Y8 one contiguous run of a child pair (Cout a multiple of 16, or 8: the pair itself); 16-column
   * C tiles of dx and A tiles of x^T (Cin a multiple of 16); rows of one input row */
  return rows_per_tile(W) > 0 && Cin % 16 == 0 && (Cout % 16 == 0 || Cout == 8);
}

/* Offset in y (or dy) of column col of Y8 at input voxel v: child k = col / Cout, channel col % Cout */
static inline size_t y8_offset(size_t v, int col, int H, int W, int Cout)
{
  int k = col / Cout;
  return sf_upconv_child_pair(v, k >> 2, (k >> 1) & 1, H, W, Cout) + (size_t)(k & 1) * Cout + (size_t)(col % Cout);
}

/* C tiles 0-3 R x 16 fp32, A tile 4 R x kc bf16, B tiles 6-7 kc/2 rows x 16 pairs */
SF_AMX_TARGET static void ua_config(int R, int kc)
{
  sf_amx_config c;
  sf_amx_config_set(&c, R, kc * 2, kc / 2);
  for (int i = 0; i < 4; i++) c.rows[i] = (uint8_t)R;
  _tile_loadconfig(&c);
}

/* B[k][16n + j] (k < K, zero up to Kp) in VNNI tiles [chunk][n][kc/2][16][2]; B[k][col] = src[k*ks + col*cs] */
static void pack_b(sf_bf16 *bt, const float *src, size_t ks, size_t cs, int K, int Kp, int kc, int NB)
{
  float pair[32];
  for (int c = 0; c < Kp / kc; c++)
    for (int n = 0; n < NB; n++)
      for (int r = 0; r < kc / 2; r++) {
        for (int j = 0; j < 16; j++)
          for (int s = 0; s < 2; s++) {
            int k = c * kc + 2 * r + s;
            pair[2 * j + s] = k < K ? src[(size_t)k * ks + (size_t)(16 * n + j) * cs] : 0.0f;
          }
        sf_bf16_from_floats(bt + (((size_t)c * NB + n) * (kc / 2) + r) * 32, pair, 32);
      }
}

/* The products of A tile 4 with the nn B tiles of bt (kc/2 x 32 bf16 each, consecutive) into C tiles 0..nn-1 */
SF_AMX_TARGET static inline void ua_products(const sf_bf16 *bt, size_t bstride, int nn)
{
  _tile_loadd(6, bt, 64);
  _tile_dpbf16ps(0, 4, 6);
  if (nn > 1) {
    _tile_loadd(7, bt + bstride, 64);
    _tile_dpbf16ps(1, 4, 7);
  }
  if (nn > 2) {
    _tile_loadd(6, bt + 2 * bstride, 64);
    _tile_dpbf16ps(2, 4, 6);
  }
  if (nn > 3) {
    _tile_loadd(7, bt + 3 * bstride, 64);
    _tile_dpbf16ps(3, 4, 7);
  }
}

/* C tile j = rows of p + j*step, ld bytes apart (stride 0: one row repeated), j < nn; zero when p is NULL */
SF_AMX_TARGET static inline void ua_load_c(const float *p, size_t step, size_t ld, int nn)
{
  if (!p) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    return;
  }
  _tile_loadd(0, p, ld);
  if (nn > 1) _tile_loadd(1, p + step, ld);
  if (nn > 2) _tile_loadd(2, p + 2 * step, ld);
  if (nn > 3) _tile_loadd(3, p + 3 * step, ld);
}

SF_AMX_TARGET static inline void ua_store_c(float *const *dst, size_t ld, int nn)
{
  _tile_stored(0, dst[0], ld);
  if (nn > 1) _tile_stored(1, dst[1], ld);
  if (nn > 2) _tile_stored(2, dst[2], ld);
  if (nn > 3) _tile_stored(3, dst[3], ld);
}

/* y = x . w + b: per tile of R voxels, 4 column blocks at a time (8*Cout / 16 is a multiple of 4) */
SF_AMX_TARGET void sf_upconv3d_amx_forward(float *y, const float *x, const float *w, const float *b, int nd, int H,
                                           int W, int Cin, int Cout)
{
  SF_ASSERT(sf_amx_supported() && sf_upconv3d_amx_fits(W, Cin, Cout));
  const int R = rows_per_tile(W), N = 8 * Cout, NB = N / 16;
  const int Kp = Cin <= 32 ? Cin : (Cin + 31) / 32 * 32, kc = Kp < 32 ? Kp : 32, nk = Kp / kc;
  const size_t nvox = (size_t)nd * H * W, bstride = (size_t)kc / 2 * 32;
  sf_bf16 *xb = (sf_bf16 *)sf_workspace_floats(UA_SLOT_A, nvox * Kp / 2 + 1);
  sf_bf16 *wb = (sf_bf16 *)sf_workspace_floats(UA_SLOT_B, (size_t)Kp * N / 2 + 1);
  float *bias = sf_workspace_floats(UA_SLOT_AUX, (size_t)N);
  if (Kp == Cin) sf_bf16_from_floats(xb, x, nvox * Cin);
  else
    for (size_t v = 0; v < nvox; v++) {
      sf_bf16_from_floats(xb + v * Kp, x + v * Cin, (size_t)Cin);
      memset(xb + v * Kp + Cin, 0, sizeof(sf_bf16) * (Kp - Cin));
    }
  pack_b(wb, w, (size_t)N, 1, Cin, Kp, kc, NB);
  for (int j = 0; j < N; j++) bias[j] = b[j % Cout];
  ua_config(R, kc);
  const size_t ys = (size_t)2 * Cout * sizeof(float);
  for (size_t v0 = 0; v0 < nvox; v0 += R)
    for (int n0 = 0; n0 < NB; n0 += 4) {
      ua_load_c(bias + 16 * n0, 16, 0, 4);
      for (int c = 0; c < nk; c++) {
        _tile_loadd(4, xb + v0 * Kp + (size_t)c * kc, (size_t)Kp * 2);
        ua_products(wb + ((size_t)c * NB + n0) * bstride, bstride, 4);
      }
      float *dst[4];
      for (int j = 0; j < 4; j++) dst[j] = y + y8_offset(v0, 16 * (n0 + j), H, W, Cout);
      ua_store_c(dst, ys, 4);
    }
  _tile_release();
}

/* dx = G8 . w^T: A tiles from dy's bf16 copy (K chunks of 32 columns of G8, or of 2*Cout = 16 at 8 outputs, each a
 * run of one child pair), C tiles of 16 input channels straight into dx */
SF_AMX_TARGET void sf_upconv3d_amx_backward_data(float *dx, const float *dy, const float *w, int nd, int H, int W,
                                                 int Cin, int Cout)
{
  SF_ASSERT(sf_amx_supported() && sf_upconv3d_amx_fits(W, Cin, Cout));
  const int R = rows_per_tile(W), K = 8 * Cout, kc = 2 * Cout < 32 ? 2 * Cout : 32, nk = K / kc, NB = Cin / 16;
  const size_t nvox = (size_t)nd * H * W, bstride = (size_t)kc / 2 * 32;
  sf_bf16 *gb = (sf_bf16 *)sf_workspace_floats(UA_SLOT_A, nvox * K / 2 + 1);
  sf_bf16 *wb = (sf_bf16 *)sf_workspace_floats(UA_SLOT_B, (size_t)K * Cin / 2 + 1);
  sf_bf16_from_floats(gb, dy, nvox * K);
  pack_b(wb, w, 1, (size_t)K, K, K, kc, NB); /* B[k][ci] = w[ci][k] */
  ua_config(R, kc);
  const size_t as = (size_t)2 * Cout * sizeof(sf_bf16), ds = (size_t)Cin * sizeof(float);
  for (size_t v0 = 0; v0 < nvox; v0 += R)
    for (int n0 = 0; n0 < NB; n0 += 4) {
      int nn = NB - n0 < 4 ? NB - n0 : 4;
      ua_load_c(NULL, 0, 0, nn);
      for (int c = 0; c < nk; c++) {
        _tile_loadd(4, gb + y8_offset(v0, c * kc, H, W, Cout), as);
        ua_products(wb + ((size_t)c * NB + n0) * bstride, bstride, nn);
      }
      float *dst[4];
      for (int j = 0; j < nn; j++) dst[j] = dx + v0 * Cin + 16 * (n0 + j);
      ua_store_c(dst, ds, nn);
    }
  _tile_release();
}

/* xt: [block][Cin][32] bf16, x^T of 32 voxels per block (zero past nvox), by 16 x 16 transposes */
SF_AMX_TARGET static void pack_x_transposed(sf_bf16 *xt, const float *x, size_t nvox, int Cin, size_t nblk)
{
  for (size_t k = 0; k < nblk; k++)
    for (int c = 0; c < Cin; c += 16) {
      __m512 lo[16], hi[16];
      for (int i = 0; i < 16; i++) {
        size_t va = 32 * k + (size_t)i, vb = va + 16;
        lo[i] = va < nvox ? _mm512_loadu_ps(x + va * Cin + c) : _mm512_setzero_ps();
        hi[i] = vb < nvox ? _mm512_loadu_ps(x + vb * Cin + c) : _mm512_setzero_ps();
      }
      sf_amx_transpose16(lo);
      sf_amx_transpose16(hi);
      sf_bf16 *dst = xt + (k * Cin + c) * 32;
      for (int j = 0; j < 16; j++) _mm512_storeu_si512(dst + 32 * j, (__m512i)_mm512_cvtne2ps_pbh(hi[j], lo[j]));
    }
}

/* gp: [block][NB][16 pairs][16][2] bf16: G8's 16 columns of block n at voxels 2i, 2i+1 of each block of 32 as VNNI
 * rows (zero past nvox). coff: NB scratch offsets (column block n's child and channel from a voxel's child (0,0,0)) */
SF_AMX_TARGET static void pack_g8_pairs(sf_bf16 *gp, size_t *coff, const float *dy, size_t nvox, int H, int W,
                                        int Cout, size_t nblk)
{
  const int NB = 8 * Cout / 16;
  const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int n = 0; n < NB; n++) coff[n] = y8_offset(0, 16 * n, H, W, Cout);
  for (size_t k = 0; k < nblk; k++) {
    size_t base[32];
    for (int i = 0; i < 32; i++)
      base[i] = 32 * k + (size_t)i < nvox ? sf_upconv_child_pair(32 * k + (size_t)i, 0, 0, H, W, Cout) : SIZE_MAX;
    for (int n = 0; n < NB; n++) {
      sf_bf16 *dst = gp + (k * NB + n) * 16 * 32;
      for (int i = 0; i < 16; i++) {
        size_t va = base[2 * i], vb = base[2 * i + 1];
        __m512 a = va != SIZE_MAX ? _mm512_loadu_ps(dy + va + coff[n]) : _mm512_setzero_ps();
        __m512 b = vb != SIZE_MAX ? _mm512_loadu_ps(dy + vb + coff[n]) : _mm512_setzero_ps();
        _mm512_storeu_si512(dst + 32 * i, _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(b, a)));
      }
    }
  }
}

/* dw += x^T . G8 (every block of 32 voxels summed in the C tiles, then added once), db += the column sums of dy */
SF_AMX_TARGET void sf_upconv3d_amx_backward_weights(float *dw, float *db, const float *x, const float *dy, int nd,
                                                    int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_amx_supported() && sf_upconv3d_amx_fits(W, Cin, Cout));
  const int N = 8 * Cout, NB = N / 16;
  const size_t nvox = (size_t)nd * H * W, nblk = (nvox + 31) / 32, bstride = 16 * 32;
  if (nvox == 0) return;
  sf_bf16 *xt = (sf_bf16 *)sf_workspace_floats(UA_SLOT_A, nblk * Cin * 16 + 1);
  sf_bf16 *gp = (sf_bf16 *)sf_workspace_floats(UA_SLOT_B, nblk * NB * 16 * 16 + 1);
  float *buf = sf_workspace_floats(UA_SLOT_AUX, 4 * 16 * 16 + (size_t)NB * sizeof(size_t) / sizeof(float));
  pack_x_transposed(xt, x, nvox, Cin, nblk);
  pack_g8_pairs(gp, (size_t *)(buf + 4 * 16 * 16), dy, nvox, H, W, Cout, nblk);
  ua_config(16, 32);
  for (int m = 0; m < Cin / 16; m++)
    for (int n0 = 0; n0 < NB; n0 += 4) {
      ua_load_c(NULL, 0, 0, 4);
      for (size_t k = 0; k < nblk; k++) {
        _tile_loadd(4, xt + (k * Cin + 16 * (size_t)m) * 32, 64);
        ua_products(gp + (k * NB + n0) * bstride, bstride, 4);
      }
      float *dst[4] = {buf, buf + 256, buf + 512, buf + 768};
      ua_store_c(dst, 64, 4);
      for (int j = 0; j < 4; j++)
        for (int r = 0; r < 16; r++) {
          float *row = dw + (size_t)(16 * m + r) * N + 16 * (n0 + j);
          for (int i = 0; i < 16; i++) row[i] += dst[j][16 * r + i];
        }
    }
  _tile_release();
  sf_bias_grad_rows(db, dy, (size_t)8 * nvox, Cout);
}
