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

/* Stepping through the padded grid (conv3d_bf16_internal.h) voxel by voxel: the source row of padded voxel
 * (pd, ph, pw) among the planes lo (pd 0), x (1..nd), hi (nd+1), each H*W voxels of C floats; NULL at padding
 * voxels, NULL halos and past the last plane */
typedef struct {
  const float *lo, *x, *hi;
  int nd, H, W, C;
  size_t pd, ph, pw;
} grid_walk;

static inline const float *walk_row(const grid_walk *g)
{
  if (g->ph < 1 || g->ph > (size_t)g->H || g->pw < 1 || g->pw > (size_t)g->W || g->pd > (size_t)g->nd + 1) return NULL;
  const float *plane = g->pd == 0 ? g->lo : g->pd == (size_t)g->nd + 1 ? g->hi : g->x + (g->pd - 1) * g->H * g->W * g->C;
  return plane ? plane + ((g->ph - 1) * g->W + g->pw - 1) * g->C : NULL;
}

static inline void walk_next(grid_walk *g)
{
  if (++g->pw == (size_t)g->W + 2) g->pw = 0, g->ph++;
  if (g->ph == (size_t)g->H + 2) g->ph = 0, g->pd++;
}

/* xv: 2 parities x pairs rows of 2*Cp bf16: row m of parity p interleaves voxels u = 2m+p and u+1, where u - LEAD
 * is the padded voxel (zero outside the padded slab), as [ci][2]; straight from the fp32 planes, each voxel
 * rounded once (row: 2 x Cp bf16 of scratch, the previous and the current voxel) */
SF_AMX_TARGET static void pack_pairs(sf_bf16 *xv, sf_bf16 *row, const float *x_lo, const float *x, const float *x_hi,
                                     int nd, int H, int W, int Cin, int Cp, size_t pairs)
{
  const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  grid_walk g = {.lo = x_lo, .x = x, .hi = x_hi, .nd = nd, .H = H, .W = W, .C = Cin};
  memset(row, 0, sizeof(sf_bf16) * 2 * Cp);
  for (size_t u = 1; u <= 2 * pairs; u++) { /* voxel u completes the pair (u-1, u) */
    ptrdiff_t v = (ptrdiff_t)u - SF_AMX_DW_LEAD;
    const float *src = v >= 0 ? walk_row(&g) : NULL;
    if (v >= 0) walk_next(&g);
    sf_bf16 *cur = row + (u & 1) * Cp, *prev = row + (~u & 1) * Cp;
    for (int c = 0; c < Cp; c += 16) {
      int in = !src ? 0 : Cin - c < 16 ? Cin - c : 16;
      __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps((__mmask16)((1u << in) - 1), src ? src + c : x));
      _mm256_storeu_si256((void *)(cur + c), (__m256i)b);
    }
    sf_bf16 *dst = xv + (((u - 1) & 1) * pairs + (u - 1) / 2) * 2 * Cp;
    for (int c = 0; c < Cp; c += 16) {
      __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)(prev + c))),
                                      _mm256_loadu_si256((const void *)(cur + c)), 1);
      _mm512_storeu_si512(dst + 2 * c, _mm512_permutexvar_epi16(inter, ab));
    }
  }
}

/* dyT: nblk blocks of Coutp rows x 32 bf16: block k, row co = dy of channel co at padded voxels q0+32k..+31 (zero
 * at padding voxels and channels >= Cout): per 16 channels, two 16 x 16 transposes in registers */
SF_AMX_TARGET static void pack_dy_transposed(sf_bf16 *dyT, const float *dy, size_t q0, size_t nblk, int nd, int H,
                                             int W, int Cout, int Coutp)
{
  const size_t prow = (size_t)W + 2, pplane = prow * (H + 2);
  grid_walk g = {.lo = NULL, .x = dy, .hi = NULL, .nd = nd, .H = H, .W = W, .C = Cout};
  g.pd = q0 / pplane, g.ph = q0 / prow % (H + 2), g.pw = q0 % prow;
  for (size_t k = 0; k < nblk; k++) {
    const float *src[32];
    for (int i = 0; i < 32; i++, walk_next(&g)) src[i] = walk_row(&g);
    for (int c = 0; c < Coutp; c += 16) {
      __mmask16 m = (__mmask16)((1u << (Cout - c < 16 ? Cout - c : 16)) - 1);
      __m512 lo[16], hi[16];
      for (int i = 0; i < 16; i++) {
        lo[i] = src[i] ? _mm512_maskz_loadu_ps(m, src[i] + c) : _mm512_setzero_ps();
        hi[i] = src[16 + i] ? _mm512_maskz_loadu_ps(m, src[16 + i] + c) : _mm512_setzero_ps();
      }
      sf_amx_transpose16(lo);
      sf_amx_transpose16(hi);
      sf_bf16 *dst = dyT + (k * Coutp + c) * 32;
      for (int j = 0; j < 16; j++) _mm512_storeu_si512(dst + 32 * j, (__m512i)_mm512_cvtne2ps_pbh(hi[j], lo[j]));
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
      __m512 t[16]; /* transposed in registers, so each input channel's row adds as one vector */
      for (int s = 0; s < 16; s++) t[s] = _mm512_loadu_ps(tile + 16 * s);
      sf_amx_transpose16(t);
      __mmask16 m = (__mmask16)((1u << nco) - 1);
      for (int r = 0; r < nci; r++) {
        float *d = dst + (size_t)r * o->Cout;
        _mm512_mask_storeu_ps(d, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d), t[r]));
      }
    }
}

SF_AMX_TARGET void sf_conv3d_weights_amx(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                         const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_amx_supported() && 0 <= t0 && t0 <= t1 && t1 <= 27);
  const int Cp = (Cin + 15) / 16 * 16, NB = (Cout + 15) / 16, Coutp = NB * 16;
  /* blocks of 32 padded voxels covering every output voxel, from a multiple of 32 */
  const size_t q0 = sf_bf16_pidx(0, 0, 0, H, W) & ~(size_t)31, qe = sf_bf16_pidx(nd - 1, H - 1, W - 1, H, W) + 1;
  const size_t nblk = (qe - q0 + 31) / 32;
  /* pairs per parity: up to the last voxel a block reads under the last tap, plus one */
  const size_t pairs = (SF_AMX_DW_LEAD + q0 + 32 * nblk + (size_t)sf_bf16_tap_off(26, H, W) + 2) / 2 + 1;
  sf_bf16 *xv = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_AUX, 2 * pairs * Cp);
  sf_bf16 *dyT = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_PACK, nblk * Coutp * 16);
  float *buf = sf_workspace_floats(SF_BF16_SLOT_LIST, 4 * 256 + (size_t)Cp);
  pack_pairs(xv, (sf_bf16 *)(buf + 4 * 256), x_lo, x, x_hi, nd, H, W, Cin, Cp, pairs);
  pack_dy_transposed(dyT, dy, q0, nblk, nd, H, W, Cout, Coutp);
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
