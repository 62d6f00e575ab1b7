/* Weight gradient of the 3x3x3 convolution with bf16 operands and fp32 accumulation on AMX tiles, for
 * torch_amp: 1 on CPUs with AMX-BF16 (forward and dX: conv3d_amx.c); the same contract and rounding as
 * conv3d_bf16_dw.c:
 *   dw[t][ci][co] += sum over output voxels v of bf16(x[v + offset(t)][ci]) * bf16(dy[v][co])
 * computed transposed, one GEMM per tap over blocks of 32 output voxels:
 *   C (16 output x 16 input channels) += A (16 output channels x 32 voxels) . B (32 voxels x 16 inputs).
 * A comes from the output gradient transposed once per call into blocks of 32 voxels, dyT[block][co][32]; its tile
 * is 1 KiB contiguous and the same for every tap. B comes from the input in VNNI pair order, rows of [ci][2]
 * holding two consecutive voxels, in one of three layouts (dw_layout below), so that a block's 32 voxels under
 * any tap are 16 rows at one stride:
 *  - W a multiple of 32 (32^2 planes): blocks are runs of 32 interior voxels of a row of the zero-padded grid
 *    (conv3d_bf16_internal.h), which is kept in two parities (rows of parity p pair voxels 2m+p and 2m+p+1), so
 *    the block under a tap of odd offset is rows of the other parity;
 *  - W even, H*W a multiple of 32 (16^2, 8^2 planes): the compact grid (conv3d_amx_internal.h) in three copies,
 *    copy kw holding the input shifted by kw - 1 along w, so a tap is an offset of whole rows in copy kw;
 *  - otherwise the padded grid in blocks of 32 padded voxels, dy zero at padding voxels.
 * No product is spent on padding voxels but in the last case. Up to 4 input channels, the input is an im2col of all
 * the taps instead (weights_im2col below). Block: 4 C tiles, taps x 16-channel blocks of
 * outputs x of inputs (4 taps of a 16 x 16 layer, 1 tap of 32 x 32), over a group of SF_AMX_DW_GROUP voxels,
 * summed from zero and then added to dw (a long reduction sums group partials); groups outermost, so a group's
 * inputs under all 27 taps stay in L2. Slabs of 16 blocks or more whose gradient fits 1 MiB go in sub-groups of
 * SF_AMX_DW_SUBGROUP voxels instead, the C tiles carried from one to the next in a buffer of tiles (no transposes
 * between), so a sub-group's output gradient stays in L1 across the taps. */
#include <string.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "../common/amx_internal.h"
#include "conv3d_bf16_internal.h"

#ifndef SF_AMX_DW_GROUP
#define SF_AMX_DW_GROUP 1024 /* voxels per partial sum, a multiple of 32 */
#endif
#ifndef SF_AMX_DW_SUBGROUP
#define SF_AMX_DW_SUBGROUP 256 /* voxels per pass over the taps where a call has two such groups or more */
#endif
/* xv starts this many zero voxels before padded voxel 0: the first block of 32 voxels starts up to 31 voxels
 * before the first output voxel, and tap 0 reads a plane, a row and a voxel before that */
#define SF_AMX_DW_LEAD 32

typedef struct {
  const sf_bf16 *dyT;
  const size_t *prow; /* block k's first B row, counted from block 0's */
  int Cp, Coutp;      /* channels rounded up to 16 */
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

/* dst[0..2*Cp): the Cp bf16 channels of voxels a and b interleaved as [ci][2] (one VNNI row) */
SF_AMX_TARGET static inline void store_pair(sf_bf16 *dst, const sf_bf16 *a, const sf_bf16 *b, int Cp)
{
  const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int c = 0; c < Cp; c += 16) {
    __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)(a + c))),
                                    _mm256_loadu_si256((const void *)(b + c)), 1);
    _mm512_storeu_si512(dst + 2 * c, _mm512_permutexvar_epi16(inter, ab));
  }
}

/* rb: a zero voxel, the W voxels of src (Cin floats each) rounded to bf16 as Cp channels (zero beyond Cin), a zero
 * voxel: the input row with its padding, as the packers below read it */
static void row_bf16(sf_bf16 *rb, const float *src, int W, int Cin, int Cp)
{
  memset(rb, 0, sizeof(sf_bf16) * Cp);
  memset(rb + (size_t)(W + 1) * Cp, 0, sizeof(sf_bf16) * Cp);
  if (Cin == Cp) {
    sf_bf16_from_floats(rb + Cp, src, (size_t)W * Cin);
    return;
  }
  memset(rb + Cp, 0, sizeof(sf_bf16) * W * Cp);
  for (int w = 0; w < W; w++) sf_bf16_from_floats(rb + (size_t)(w + 1) * Cp, src + (size_t)w * Cin, (size_t)Cin);
}

/* The input row (d, h) of the padded slab (plane d among lo, x, hi: d = -1..nd), or NULL (a NULL halo) */
static inline const float *input_row(const float *x_lo, const float *x, const float *x_hi, int d, int h, int nd, int H,
                                     int W, int Cin)
{
  const float *plane = d < 0 ? x_lo : d >= nd ? x_hi : x + (size_t)d * H * W * Cin;
  return plane ? plane + (size_t)h * W * Cin : NULL;
}

/* The fp32 channels of padded-grid voxel u - LEAD (grid_walk g stepped through the grid from voxel 0), NULL where it
 * is zero: before the grid, padding, a NULL halo, past the grid; then the walk moves to voxel u + 1 */
static inline const float *lead_walk_row(grid_walk *g, size_t u)
{
  if (u < SF_AMX_DW_LEAD) return NULL;
  const float *r = walk_row(g);
  walk_next(g);
  return r;
}

/* xv: 2 parities x pairs rows of 2*Cp bf16: row m of parity p interleaves voxels u = 2m+p and u+1, where u - LEAD
 * is the padded voxel (zero outside the padded slab), as [ci][2]; straight from the fp32 planes in voxel order,
 * voxels 2m, 2m+1, 2m+2 giving row m of both parities (each voxel converted where it is read, every row written
 * once: no zeroing pass, no bf16 staging row) */
SF_AMX_TARGET static void pack_pairs(sf_bf16 *xv, const float *x_lo, const float *x, const float *x_hi, int nd, int H,
                                     int W, int Cin, int Cp, size_t pairs)
{
  const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  grid_walk g = {.lo = x_lo, .x = x, .hi = x_hi, .nd = nd, .H = H, .W = W, .C = Cin};
  sf_bf16 *p0 = xv, *p1 = xv + pairs * 2 * Cp;
  const float *s0 = lead_walk_row(&g, 0);
  for (size_t m = 0; m < pairs; m++, p0 += 2 * Cp, p1 += 2 * Cp) {
    const float *s1 = lead_walk_row(&g, 2 * m + 1), *s2 = lead_walk_row(&g, 2 * m + 2);
    for (int c = 0; c < Cp; c += 16) {
      __mmask16 k = (__mmask16)((1u << (Cin - c < 16 ? Cin - c : 16)) - 1);
      __m512 a = s0 ? _mm512_maskz_loadu_ps(k, s0 + c) : _mm512_setzero_ps();
      __m512 b = s1 ? _mm512_maskz_loadu_ps(k, s1 + c) : _mm512_setzero_ps();
      __m512 d = s2 ? _mm512_maskz_loadu_ps(k, s2 + c) : _mm512_setzero_ps();
      _mm512_storeu_si512(p0 + 2 * c, _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(b, a)));
      _mm512_storeu_si512(p1 + 2 * c, _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(d, b)));
    }
    s0 = s2;
  }
}

/* xk: 3 copies (kw = 0, 1, 2) x pairs rows of 2*Cp bf16: row m of copy kw interleaves compact voxels 2m and 2m+1
 * (conv3d_amx_internal.h), each holding the input at its (d, h, w + kw - 1): all zero first, then the W/2 pairs
 * of each input row (W even) in each copy, a row at a time (rb: W+2 voxels of scratch) */
SF_AMX_TARGET static void pack_kw_pairs(sf_bf16 *xk, sf_bf16 *rb, const float *x_lo, const float *x,
                                        const float *x_hi, int nd, int H, int W, int Cin, int Cp, size_t pairs)
{
  memset(xk, 0, sizeof(sf_bf16) * 6 * pairs * Cp);
  for (int d = -1; d <= nd; d++)
    for (int h = 0; h < H; h++) {
      const float *src = input_row(x_lo, x, x_hi, d, h, nd, H, W, Cin);
      if (!src) continue;
      row_bf16(rb, src, W, Cin, Cp);
      size_t m0 = ((size_t)(d + 1) * (H + 2) + h + 1) * W / 2; /* the row's first pair */
      for (int kw = 0; kw < 3; kw++)
        for (int i = 0; i < W; i += 2) /* compact voxel w holds rb's voxel w + kw */
          store_pair(xk + ((size_t)kw * pairs + m0 + i / 2) * 2 * Cp, rb + (size_t)(i + kw) * Cp,
                     rb + (size_t)(i + 1 + kw) * Cp, Cp);
    }
}

/* dyT: nblk blocks of Coutp rows x 32 bf16: block k, row co = dy of channel co at its 32 voxels (zero at padding
 * voxels and channels >= Cout): output voxels 32k.. when interior, else padded voxels q0 + 32k..; per 16
 * channels, two 16 x 16 transposes in registers */
SF_AMX_TARGET static void pack_dy_transposed(sf_bf16 *dyT, const float *dy, int interior, size_t q0, size_t nblk,
                                             int nd, int H, int W, int Cout, int Coutp)
{
  const size_t prow = (size_t)W + 2, pplane = prow * (H + 2);
  grid_walk g = {.lo = NULL, .x = dy, .hi = NULL, .nd = nd, .H = H, .W = W, .C = Cout};
  g.pd = q0 / pplane, g.ph = q0 / prow % (H + 2), g.pw = q0 % prow;
  for (size_t k = 0; k < nblk; k++) {
    const float *src[32];
    for (int i = 0; i < 32; i++)
      if (interior) src[i] = dy + (32 * k + (size_t)i) * Cout;
      else src[i] = walk_row(&g), walk_next(&g);
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

/* dst[ci][co] (rows Cout floats apart) += the 16 x 16 tile [co][ci], its first nci inputs and nco outputs: transposed
 * in registers, so each input channel's row adds as one vector */
SF_AMX_TARGET static void add_tile_transposed(float *dst, const float *tile, int nci, int nco, int Cout)
{
  __m512 t[16];
  for (int s = 0; s < 16; s++) t[s] = _mm512_loadu_ps(tile + 16 * s);
  sf_amx_transpose16(t);
  __mmask16 m = (__mmask16)((1u << nco) - 1);
  for (int r = 0; r < nci; r++) {
    float *d = dst + (size_t)r * Cout;
    _mm512_mask_storeu_ps(d, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d), t[r]));
  }
}

/* C tile c (0..3) from or to p; tile numbers are immediates */
SF_AMX_TARGET static inline void c_tile_load(int c, const float *p)
{
  switch (c) {
  case 0: _tile_loadd(0, p, 64); break;
  case 1: _tile_loadd(1, p, 64); break;
  case 2: _tile_loadd(2, p, 64); break;
  default: _tile_loadd(3, p, 64); break;
  }
}

SF_AMX_TARGET static inline void c_tile_store(int c, float *p)
{
  switch (c) {
  case 0: _tile_stored(0, p, 64); break;
  case 1: _tile_stored(1, p, 64); break;
  case 2: _tile_stored(2, p, 64); break;
  default: _tile_stored(3, p, 64); break;
  }
}

/* The C tile of (tap i, input block ci0/16 + c, output block n0 + n), for nt taps x nc input x nn output blocks, summed
 * over the voxel blocks [k0, k1) of dyT; tb[i]: tap i's B rows of block 0. acc NULL: the sums start from zero and are
 * added to dwt (tap t's rows at dwt + t*Cin*Cout); else C tile j*nn + n starts from and goes back to acc[j*nn + n]
 * (tiles [co][ci], added to dw once per call by the caller) */
SF_AMX_TARGET static void dw_block(float *dwt, float *buf, const dw_operands *o, const sf_bf16 *const *tb, int nt,
                                   size_t k0, size_t k1, int ci0, int nc, int n0, int nn, float *const *acc)
{
  const size_t xs = (size_t)o->Cp * 4; /* bytes between xv rows */
  const int ntiles = nt * nc * nn;
  for (int c = 0; c < 4; c++)
    if (acc && c < ntiles) c_tile_load(c, acc[c]);
    else if (c == 0) _tile_zero(0);
    else if (c == 1) _tile_zero(1);
    else if (c == 2) _tile_zero(2);
    else _tile_zero(3);
  for (size_t k = k0; k < k1; k++) {
    const sf_bf16 *a = o->dyT + (k * o->Coutp + 16 * (size_t)n0) * 32;
    _tile_loadd(4, a, 64);
    if (nn == 2) _tile_loadd(5, a + 16 * 32, 64);
    const size_t brow = o->prow[k] * 2 * o->Cp;
    for (int j = 0; j < nt * nc; j++) {
      const sf_bf16 *b = tb[j / nc] + brow + 2 * (ci0 + 16 * (j % nc));
      if (j % 2 == 0) _tile_loadd(6, b, xs);
      else _tile_loadd(7, b, xs);
      dw_products(nn, j);
    }
  }
  if (acc) {
    for (int c = 0; c < ntiles; c++) c_tile_store(c, acc[c]);
    return;
  }
  for (int c = 0; c < 4; c++) c_tile_store(c, buf + 256 * c);
  for (int j = 0; j < nt * nc; j++)
    for (int n = 0; n < nn; n++) {
      int ci = ci0 + 16 * (j % nc), co = 16 * (n0 + n);
      int nci = o->Cin - ci < 16 ? o->Cin - ci : 16, nco = o->Cout - co < 16 ? o->Cout - co : 16;
      float *dst = dwt + (size_t)(j / nc) * o->Cin * o->Cout + (size_t)ci * o->Cout + co;
      add_tile_transposed(dst, buf + 256 * (j * nn + n), nci, nco, o->Cout);
    }
}

/* Where the B rows of a call come from: the padded grid in two parities (SF_AMX_DW_LEAD zero voxels first), its
 * voxels in blocks of 32 from q0 (GRID) or in runs of 32 interior voxels (ROWS: W a multiple of 32); or the
 * compact grid in 3 copies, one per kw (COMPACT: W even and H*W a multiple of 32, so runs of 32 interior voxels
 * are consecutive there; no product is spent on padding where W is 8 or 16 either) */
enum dw_layout { DW_GRID, DW_ROWS, DW_COMPACT };

typedef struct {
  enum dw_layout layout;
  size_t nblk, pairs; /* blocks of 32 voxels; B rows per parity or copy */
  size_t first0;      /* block 0's first voxel in the B layout's numbering */
  size_t q0;          /* DW_GRID: block 0's first padded voxel */
} dw_plan;

static dw_plan plan_layout(int nd, int H, int W)
{
  dw_plan p = {.layout = W % 32 == 0 ? DW_ROWS : W % 2 == 0 && (size_t)H * W % 32 == 0 ? DW_COMPACT : DW_GRID};
  const size_t nvox = (size_t)nd * H * W, qe = sf_bf16_pidx(nd - 1, H - 1, W - 1, H, W) + 1;
  p.q0 = sf_bf16_pidx(0, 0, 0, H, W) & ~(size_t)31;
  p.nblk = p.layout == DW_GRID ? (qe - p.q0 + 31) / 32 : nvox / 32;
  size_t last; /* one past the last voxel any block reads under any tap */
  if (p.layout == DW_COMPACT) {
    p.first0 = sf_amx_compact_idx(0, H, W);
    last = sf_amx_compact_idx(nvox - 32, H, W) + 32 + (size_t)(H + 3) * W;
  } else {
    p.first0 = (p.layout == DW_GRID ? p.q0 : sf_bf16_pidx(0, 0, 0, H, W)) + SF_AMX_DW_LEAD;
    size_t q_last = p.layout == DW_GRID ? p.q0 + 32 * (p.nblk - 1) : sf_bf16_pidx(nd - 1, H - 1, W - 32, H, W);
    last = SF_AMX_DW_LEAD + q_last + 32 + (size_t)sf_bf16_tap_off(26, H, W) + 1;
  }
  p.pairs = last / 2 + 2;
  return p;
}

/* Block k's first B row relative to block 0's (the same under every tap and in every parity or copy) */
static void plan_rows(size_t *prow, const dw_plan *p, int H, int W)
{
  for (size_t k = 0, v = 0; k < p->nblk; k++, v += 32) {
    size_t row = v / W, first; /* row = d * H + h */
    if (p->layout == DW_GRID) first = p->q0 + 32 * k + SF_AMX_DW_LEAD;
    else if (p->layout == DW_COMPACT) first = sf_amx_compact_idx(v, H, W);
    else first = sf_bf16_pidx((int)(row / H), (int)(row % H), (int)(v % W), H, W) + SF_AMX_DW_LEAD;
    prow[k] = (first - p->first0) / 2;
  }
}

/* Tap t's B rows of block 0 */
static const sf_bf16 *tap_rows(const sf_bf16 *xv, const dw_plan *p, int t, int H, int W, int Cp)
{
  size_t u, copy;
  if (p->layout == DW_COMPACT) {
    u = p->first0 + (size_t)(((ptrdiff_t)(t / 9 - 1) * (H + 2) + (t / 3 % 3 - 1)) * W), copy = (size_t)t % 3;
  } else {
    u = (size_t)((ptrdiff_t)p->first0 + sf_bf16_tap_off(t, H, W)), copy = u & 1;
  }
  return xv + (copy * p->pairs + u / 2) * 2 * Cp;
}

/* Few input channels (the input layer's 3), W even and whole blocks of 32 voxels: one GEMM over all the call's
 * taps at once, its B an im2col of the input in VNNI pairs. Row m of xi interleaves interior voxels 2m and 2m+1
 * (one row of the slab never splits a pair), column (t - t0)*Cin + c holds their input at tap t, channel c;
 * columns up to ncolp (a multiple of 16) are zero. C (16 outputs x 16 columns) then lands on dw[t][c][co] as the
 * gradient of a 1x1x1 convolution of (t1 - t0)*Cin input channels would: 27*3 = 81 columns take 6 tile products
 * per block of 32 voxels and 16 outputs, where 27 taps of 3 channels padded to 16 took 27. */
#define SF_AMX_DW_IM2COL_MAX_CIN 4

static int im2col_fits(int nd, int H, int W, int Cin)
{
  return Cin <= SF_AMX_DW_IM2COL_MAX_CIN && W % 2 == 0 && (size_t)nd * H * W % 32 == 0;
}

/* Per row (kd, kh) of taps, its taps kw = a..b-1 in [t0, t1): where a voxel's inputs at those taps start in xb
 * (its padded index + off, times Cin), where they go in an xi row (column col), and the masks that move both
 * voxels' inputs of a pair */
typedef struct {
  ptrdiff_t off;
  int col;
  __mmask16 load;  /* Cin + (b-a)*Cin bf16: both voxels' spans */
  __mmask32 store; /* 2*(b-a)*Cin bf16 */
} im2col_taps;

static int plan_im2col(im2col_taps *g, int t0, int t1, int H, int W, int Cin)
{
  int n = 0;
  for (int r = t0 / 3; 3 * r < t1; r++, n++) { /* taps (kd, kh) = (r / 3, r % 3) */
    int a = 3 * r > t0 ? 3 * r : t0, b = 3 * r + 3 < t1 ? 3 * r + 3 : t1, len = (b - a) * Cin;
    g[n].off = sf_bf16_tap_off(a, H, W);
    g[n].col = (a - t0) * Cin;
    g[n].load = (__mmask16)((1u << (Cin + len)) - 1);
    g[n].store = (__mmask32)((1ull << (2 * len)) - 1);
  }
  return n;
}

/* xi rows for the interior voxels [v0, v1) (v0 even) from xb, the zero-padded slab of Cin bf16 channels
 * (conv3d_bf16_internal.h): per pair and row of taps, both voxels' inputs are one span of xb, interleaved by one
 * permutation */
SF_AMX_TARGET static void pack_im2col_pairs(sf_bf16 *xi, const sf_bf16 *xb, const im2col_taps *g, int ng, size_t v0,
                                            size_t v1, int H, int W, int Cin, int ncol, int ncolp)
{
  uint16_t lanes[32] = {0};
  for (int j = 0; j < 16; j++) lanes[2 * j] = (uint16_t)j, lanes[2 * j + 1] = (uint16_t)(Cin + j);
  const __m512i inter = _mm512_loadu_si512(lanes);
  const __mmask32 tail = (__mmask32)(((1ull << (2 * (ncolp - ncol))) - 1) << (2 * (ncol % 16)));
  sf_bf16 *row = xi;
  const size_t hw = (size_t)H * W;
  int d = (int)(v0 / hw), h = (int)(v0 % hw / W), w = (int)(v0 % W); /* then stepped: a pair never spans rows */
  const sf_bf16 *at = xb + sf_bf16_pidx(d, h, w, H, W) * Cin;
  for (size_t v = v0; v < v1; v += 2, row += 2 * (size_t)ncolp, at += 2 * (size_t)Cin) {
    if (w == W) { /* the next row: past the right and left padding voxels, and at a plane's end its two rows */
      w = 0, at += 2 * (size_t)Cin;
      if (++h == H) h = 0, at += 2 * (size_t)(W + 2) * Cin;
    }
    w += 2;
    for (int i = 0; i < ng; i++) {
      __m256i span = _mm256_maskz_loadu_epi16(g[i].load, at + g[i].off * Cin);
      _mm512_mask_storeu_epi16(row + 2 * g[i].col, g[i].store,
                               _mm512_permutexvar_epi16(inter, _mm512_castsi256_si512(span)));
    }
    if (ncolp > ncol) /* the zero columns, within the last 16: 32 bf16 of the row */
      _mm512_mask_storeu_epi16(row + 2 * (ncol / 16 * 16), tail, _mm512_setzero_si512());
  }
}

/* im2col of a group of SF_AMX_DW_GROUP voxels at a time, so it stays in L2 for the products that read it */
SF_AMX_TARGET static void weights_im2col(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                         const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  const int ncol = (t1 - t0) * Cin, ncolp = (ncol + 15) / 16 * 16, NB = (Cout + 15) / 16, Coutp = NB * 16;
  const size_t nvox = (size_t)nd * H * W, nblk = nvox / 32, group = SF_AMX_DW_GROUP / 32;
  sf_bf16 *xb = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_X, sf_bf16_pad_voxels(nd, H, W) * Cin / 2 + 1);
  sf_bf16 *xi = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_AUX, group * 16 * (size_t)ncolp);
  sf_bf16 *dyT = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_PACK, nblk * Coutp * 16);
  float *buf = sf_workspace_floats(SF_BF16_SLOT_LIST, 4 * 256 + 2 * nblk);
  size_t *prow = (size_t *)(buf + 4 * 256);
  for (size_t k = 0; k < nblk; k++) prow[k] = 16 * (k % group); /* rows of the group's xi */
  im2col_taps g[9];
  const int ng = plan_im2col(g, t0, t1, H, W, Cin);
  sf_bf16_pad_slab(xb, x_lo, x, x_hi, nd, H, W, Cin, Cin);
  pack_dy_transposed(dyT, dy, 1, 0, nblk, nd, H, W, Cout, Coutp);
  sf_amx_config cfg;
  sf_amx_config_set(&cfg, 16, 64, 16);
  _tile_loadconfig(&cfg);
  const dw_operands o = {.dyT = dyT, .prow = prow, .Cp = ncolp, .Coutp = Coutp, .Cin = ncol, .Cout = Cout};
  const sf_bf16 *tb[1] = {xi};
  for (size_t k = 0; k < nblk; k += group) {
    size_t k1 = k + group < nblk ? k + group : nblk;
    pack_im2col_pairs(xi, xb, g, ng, 32 * k, 32 * k1, H, W, Cin, ncol, ncolp);
    for (int c0 = 0; c0 < ncol; c0 += 32)
      for (int n0 = 0; n0 < NB; n0 += 2)
        dw_block(dw, buf, &o, tb, 1, k, k1, c0, c0 + 16 < ncol ? 2 : 1, n0, n0 + 1 < NB ? 2 : 1, NULL);
  }
  _tile_release();
}

SF_AMX_TARGET void sf_conv3d_weights_amx(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                         const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_amx_supported() && 0 <= t0 && t0 <= t1 && t1 <= 27);
  if (t0 == t1) return;
  if (im2col_fits(nd, H, W, Cin)) {
    weights_im2col(dw, t0, t1, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout);
    return;
  }
  const int Cp = (Cin + 15) / 16 * 16, NB = (Cout + 15) / 16, Coutp = NB * 16, CB = Cp / 16;
  const dw_plan p = plan_layout(nd, H, W);
  const int copies = p.layout == DW_COMPACT ? 3 : 2;
  /* two sub-groups or more and sums that stay in L2 (up to 1 MiB: 27 x 128 x 64): sub-groups of SF_AMX_DW_SUBGROUP
   * voxels, whose output gradient stays in L1 across the taps, with the C tiles kept in acc between them and added to
   * dw once. Alone, 1 thread: 8 x 32^2 64 -> 64 1.88 -> 1.57-1.62 ms, 128 -> 64 4.06 -> 3.35 ms; with 1.7 MiB of sums
   * (16^2 128 -> 128) 0.86 -> 0.98 ms, so those keep the groups of SF_AMX_DW_GROUP */
  const int use_acc = p.nblk >= 2 * (SF_AMX_DW_SUBGROUP / 32) && (size_t)(t1 - t0) * NB * CB * 256 * 4 <= (1u << 20);
  const size_t group = (use_acc ? SF_AMX_DW_SUBGROUP : SF_AMX_DW_GROUP) / 32;
  const size_t nacc = use_acc ? (size_t)(t1 - t0) * NB * CB * 256 : 0;
  sf_bf16 *xv = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_AUX, copies * p.pairs * Cp);
  sf_bf16 *dyT = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_PACK, p.nblk * Coutp * 16);
  float *buf = sf_workspace_floats(SF_BF16_SLOT_LIST, 4 * 256 + nacc + 2 * p.nblk);
  float *acc = buf + 4 * 256; /* acc[t - t0][output block][input block]: 16 x 16 tiles [co][ci] */
  size_t *prow = (size_t *)(acc + nacc);
  sf_bf16 *rb = (sf_bf16 *)sf_workspace_floats(SF_BF16_SLOT_X, (size_t)(W + 2) * Cp / 2 + 16);
  plan_rows(prow, &p, H, W);
  if (p.layout == DW_COMPACT) pack_kw_pairs(xv, rb, x_lo, x, x_hi, nd, H, W, Cin, Cp, p.pairs);
  else pack_pairs(xv, x_lo, x, x_hi, nd, H, W, Cin, Cp, p.pairs);
  pack_dy_transposed(dyT, dy, p.layout != DW_GRID, p.q0, p.nblk, nd, H, W, Cout, Coutp);
  if (use_acc) memset(acc, 0, sizeof(float) * nacc);
  sf_amx_config cfg;
  sf_amx_config_set(&cfg, 16, 64, 16);
  _tile_loadconfig(&cfg);
  const dw_operands o = {.dyT = dyT, .prow = prow, .Cp = Cp, .Coutp = Coutp, .Cin = Cin, .Cout = Cout};
  for (size_t k = 0; k < p.nblk; k += group) {
    size_t k1 = k + group < p.nblk ? k + group : p.nblk;
    for (int ci0 = 0; ci0 < Cin; ci0 += 32)
      for (int n0 = 0; n0 < NB; n0 += 2) {
        int nc = ci0 + 16 < Cin ? 2 : 1, nn = n0 + 1 < NB ? 2 : 1, per = 4 / (nc * nn); /* taps per block */
        for (int t = t0; t < t1; t += per) {
          int nt = t1 - t < per ? t1 - t : per;
          const sf_bf16 *tb[4];
          float *at[4];
          for (int i = 0; i < nt; i++) tb[i] = tap_rows(xv, &p, t + i, H, W, Cp);
          for (int j = 0; j < nt * nc; j++)
            for (int n = 0; n < nn; n++)
              at[j * nn + n] = acc + ((((size_t)(t - t0) + j / nc) * NB + n0 + n) * CB + ci0 / 16 + j % nc) * 256;
          dw_block(dw + (size_t)(t - t0) * Cin * Cout, buf, &o, tb, nt, k, k1, ci0, nc, n0, nn, use_acc ? at : NULL);
        }
      }
  }
  _tile_release();
  for (size_t i = 0; i < nacc / 256; i++) { /* acc into dw */
    int cb = (int)(i % CB), nb = (int)(i / CB % NB), t = (int)(i / CB / NB), ci = 16 * cb, co = 16 * nb;
    add_tile_transposed(dw + (size_t)t * Cin * Cout + (size_t)ci * Cout + co, acc + 256 * i,
                        Cin - ci < 16 ? Cin - ci : 16, Cout - co < 16 ? Cout - co : 16, Cout);
  }
}
