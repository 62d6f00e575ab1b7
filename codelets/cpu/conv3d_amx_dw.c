/* Weight gradient of the 3x3x3 convolution with bf16 operands and fp32 accumulation on AMX tiles, for
 * torch_amp: 1 on CPUs with AMX-BF16 (forward and dX: conv3d_amx.c); the same contract and rounding as
 * conv3d_bf16_dw.c:
 *   dw[t][ci][co] += sum over output voxels v of bf16(x[v + offset(t)][ci]) * bf16(dy[v][co])
 * computed transposed, one GEMM per tap over the padded grid (conv3d_bf16_internal.h):
 *   C (16 output x 16 input channels) += A (16 output channels x 32 padded voxels) . B (32 voxels x 16 inputs).
 * A comes from the output gradient transposed once per call into blocks of 32 voxels, dyT[block][co][32], zero
 * at padding voxels (so they contribute nothing); its tile is 1 KiB contiguous and the same for every tap. B
 * comes from the padded input in VNNI pair order, xv[parity][pair][ci][2]: pair m of parity p holds voxels
 * 2m+p and 2m+p+1, so the 32 voxels from q + offset(t), odd or even, are 16 consecutive rows of one parity.
 * Block: 4 C tiles, taps x 16-channel blocks of outputs x of inputs (4 taps of a 16 x 16 layer, 1 tap of
 * 32 x 32), over a group of SF_AMX_DW_GROUP voxels, summed from zero and then added to dw (a long reduction
 * sums group partials); groups outermost, so a group's inputs under all 27 taps stay in L2. */
#include <string.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "conv3d_amx_internal.h"

#ifndef SF_AMX_DW_GROUP
#define SF_AMX_DW_GROUP 2048 /* padded voxels per partial sum, a multiple of 32 */
#endif
/* xv starts this many zero voxels before padded voxel 0: the first block of 32 voxels starts up to 31 voxels
 * before the first output voxel, and tap 0 reads a plane, a row and a voxel before that */
#define SF_AMX_DW_LEAD 32

typedef struct {
  const sf_bf16 *dyT, *xv;
  size_t pairs;  /* rows of one parity of xv */
  int Cp, Coutp; /* channels rounded up to 16 */
  int Cin, Cout;
} dw_operands;

/* xv: 2 parities x pairs rows of 2*Cp bf16: row m of parity p interleaves voxels u = 2m+p and u+1 of xb, shifted by
 * SF_AMX_DW_LEAD (u - LEAD is the padded voxel; zero outside [0, nvox)), as [ci][2] */
SF_AMX_TARGET static void pack_pairs(sf_bf16 *xv, const sf_bf16 *xb, size_t nvox, size_t pairs, int Cp)
{
  const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int par = 0; par < 2; par++)
    for (size_t m = 0; m < pairs; m++) {
      ptrdiff_t v0 = (ptrdiff_t)(2 * m + par) - SF_AMX_DW_LEAD, v1 = v0 + 1;
      int ok0 = v0 >= 0 && v0 < (ptrdiff_t)nvox, ok1 = v1 >= 0 && v1 < (ptrdiff_t)nvox;
      sf_bf16 *dst = xv + ((size_t)par * pairs + m) * 2 * Cp;
      for (int c = 0; c < Cp; c += 16) {
        __m256i a = ok0 ? _mm256_loadu_si256((const void *)(xb + v0 * Cp + c)) : _mm256_setzero_si256();
        __m256i b = ok1 ? _mm256_loadu_si256((const void *)(xb + v1 * Cp + c)) : _mm256_setzero_si256();
        __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
        _mm512_storeu_si512(dst + 2 * c, _mm512_permutexvar_epi16(inter, ab));
      }
    }
}

/* dyT: nblk blocks of Coutp rows x 32 bf16: block k, row co = dy of channel co at padded voxels q0+32k..+31 (zero
 * at padding voxels and channels >= Cout); tmp: 32 x Coutp floats of scratch */
SF_AMX_TARGET static void pack_dy_transposed(sf_bf16 *dyT, float *tmp, const float *dy, size_t q0, size_t nblk, int nd,
                                             int H, int W, int Cout, int Coutp)
{
  const size_t prow = (size_t)W + 2, pplane = prow * (H + 2);
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(Coutp));
  size_t pd = q0 / pplane, ph = q0 / prow % (H + 2), pw = q0 % prow;
  for (size_t k = 0; k < nblk; k++) {
    for (int i = 0; i < 32; i++) {
      float *row = tmp + (size_t)i * Coutp;
      int inside = pd >= 1 && pd <= (size_t)nd && ph >= 1 && ph <= (size_t)H && pw >= 1 && pw <= (size_t)W;
      if (inside) {
        memcpy(row, dy + (((pd - 1) * H + ph - 1) * W + pw - 1) * Cout, sizeof(float) * Cout);
        memset(row + Cout, 0, sizeof(float) * (Coutp - Cout));
      } else {
        memset(row, 0, sizeof(float) * Coutp);
      }
      if (++pw == prow) pw = 0, ph++;
      if (ph == (size_t)H + 2) ph = 0, pd++;
    }
    sf_bf16 *dst = dyT + k * Coutp * 32;
    for (int co = 0; co < Coutp; co++) {
      __m512 lo = _mm512_i32gather_ps(rows, tmp + co, 4);
      __m512 hi = _mm512_i32gather_ps(rows, tmp + (size_t)16 * Coutp + co, 4);
      _mm512_storeu_si512(dst + (size_t)co * 32, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  }
}

/* The products of B operand j (tap j / nc, input block j % nc; tile 6 + j % 2) with the nn A tiles (4, 5) into
 * C tiles j*nn + n: tile numbers are immediates, so the cases are spelled out */
SF_AMX_TARGET static inline void dw_products(int nn, int j)
{
  if (nn == 1) {
    switch (j) {
    case 0: _tile_dpbf16ps(0, 4, 6); break;
    case 1: _tile_dpbf16ps(1, 4, 7); break;
    case 2: _tile_dpbf16ps(2, 4, 6); break;
    default: _tile_dpbf16ps(3, 4, 7); break;
    }
  } else if (j == 0) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 5, 6);
  } else {
    _tile_dpbf16ps(2, 4, 7);
    _tile_dpbf16ps(3, 5, 7);
  }
}

/* dwt (tap t's rows at dwt + t*Cin*Cout) += the C tile of (tap i, input block ci0/16 + c, output block n0 + n):
 * nt taps x nc input x nn output blocks over the voxel blocks [k0, k1) of dyT (padded voxels from q0 + 32*k0) */
SF_AMX_TARGET static void dw_block(float *dwt, float *buf, const dw_operands *o, const ptrdiff_t *off, int nt, size_t q0,
                                   size_t k0, size_t k1, int ci0, int nc, int n0, int nn)
{
  const size_t xs = (size_t)o->Cp * 4; /* bytes between xv rows */
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (size_t k = k0; k < k1; k++) {
    const sf_bf16 *a = o->dyT + (k * o->Coutp + 16 * (size_t)n0) * 32;
    _tile_loadd(4, a, 64);
    if (nn == 2) _tile_loadd(5, a + 16 * 32, 64);
    size_t q = q0 + 32 * k;
    for (int j = 0; j < nt * nc; j++) {
      size_t u = (size_t)((ptrdiff_t)q + off[j / nc] + SF_AMX_DW_LEAD), par = u & 1;
      const sf_bf16 *b = o->xv + (par * o->pairs + u / 2) * 2 * o->Cp + 2 * (ci0 + 16 * (j % nc));
      if (j % 2 == 0) _tile_loadd(6, b, xs);
      else _tile_loadd(7, b, xs);
      dw_products(nn, j);
    }
  }
  _tile_stored(0, buf, 64);
  _tile_stored(1, buf + 256, 64);
  _tile_stored(2, buf + 512, 64);
  _tile_stored(3, buf + 768, 64);
  for (int j = 0; j < nt * nc; j++)
    for (int n = 0; n < nn; n++) {
      const float *tile = buf + 256 * (j * nn + n); /* [co][ci] */
      int ci = ci0 + 16 * (j % nc), co = 16 * (n0 + n);
      int nci = o->Cin - ci < 16 ? o->Cin - ci : 16, nco = o->Cout - co < 16 ? o->Cout - co : 16;
      float *dst = dwt + (size_t)(j / nc) * o->Cin * o->Cout + (size_t)ci * o->Cout + co;
      for (int r = 0; r < nci; r++)
        for (int s = 0; s < nco; s++) dst[(size_t)r * o->Cout + s] += tile[16 * s + r];
    }
}

SF_AMX_TARGET void sf_conv3d_weights_amx(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                         const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_amx_supported() && 0 <= t0 && t0 <= t1 && t1 <= 27);
  const int Cp = (Cin + 15) / 16 * 16, NB = (Cout + 15) / 16, Coutp = NB * 16;
  const size_t nvox = sf_bf16_pad_voxels(nd, H, W);
  /* blocks of 32 padded voxels covering every output voxel, from a multiple of 32 */
  const size_t q0 = sf_bf16_pidx(0, 0, 0, H, W) & ~(size_t)31, qe = sf_bf16_pidx(nd - 1, H - 1, W - 1, H, W) + 1;
  const size_t nblk = (qe - q0 + 31) / 32;
  /* pairs per parity: up to the last voxel a block reads under the last tap, plus one */
  const size_t pairs = (SF_AMX_DW_LEAD + q0 + 32 * nblk + (size_t)sf_bf16_tap_off(26, H, W) + 2) / 2 + 1;
  sf_bf16 *xb = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_X, nvox * Cp / 2 + 1);
  sf_bf16 *xv = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_AUX, 2 * pairs * Cp);
  sf_bf16 *dyT = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_PACK, nblk * Coutp * 16);
  float *buf = sf_workspace_floats(SF_BF16_SLOT_LIST, 4 * 256 + (size_t)32 * Coutp);
  sf_bf16_pad_slab(xb, x_lo, x, x_hi, nd, H, W, Cin, Cp);
  pack_pairs(xv, xb, nvox, pairs, Cp);
  pack_dy_transposed(dyT, buf + 4 * 256, dy, q0, nblk, nd, H, W, Cout, Coutp);
  sf_amx_config cfg;
  sf_amx_config_set(&cfg, 16, 64, 16);
  _tile_loadconfig(&cfg);
  const dw_operands o = {.dyT = dyT, .xv = xv, .pairs = pairs, .Cp = Cp, .Coutp = Coutp, .Cin = Cin, .Cout = Cout};
  const size_t group = SF_AMX_DW_GROUP / 32;
  for (size_t k = 0; k < nblk; k += group) {
    size_t k1 = k + group < nblk ? k + group : nblk;
    for (int ci0 = 0; ci0 < Cin; ci0 += 32)
      for (int n0 = 0; n0 < NB; n0 += 2) {
        int nc = ci0 + 16 < Cin ? 2 : 1, nn = n0 + 1 < NB ? 2 : 1, per = 4 / (nc * nn); /* taps per block */
        for (int t = t0; t < t1; t += per) {
          int nt = t1 - t < per ? t1 - t : per;
          ptrdiff_t off[4];
          for (int i = 0; i < nt; i++) off[i] = sf_bf16_tap_off(t + i, H, W);
          dw_block(dw + (size_t)(t - t0) * Cin * Cout, buf, &o, off, nt, q0, k, k1, ci0, nc, n0, nn);
        }
      }
  }
  _tile_release();
}
