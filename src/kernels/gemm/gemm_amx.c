/* The small-GEMM problem of gemm_direct.h with bf16 operands and fp32 sums on AMX tiles (TDPBF16PS), for
 * torch_amp: 1: the 1x1x1 and transposed convolutions of CPU workers with the AMX engine (conv1_direct.c,
 * upconv3d_direct.c), as upstream's CPU autocast runs them. Operands are rounded to nearest even exactly as the
 * 3x3x3 bf16 kernels round them (VCVTNE2PS2BF16), so products are exact and only the fp32 summation order
 * differs from the fp32 kernels on rounded operands.
 *
 * The segments' K ranges are concatenated (K = sum of their lengths), then packed once per call:
 *   A: [M/16 blocks][K chunks][16 rows][kc] bf16, one tile per (block, chunk), rows kc apart;
 *   B: [K chunks][N/16 blocks][kc/2 pairs][16][2] bf16 (VNNI), one tile per (chunk, block).
 * K <= 32 is one chunk of K rounded up to even, longer K chunks of 32 (zero-padded). Blocks of 2 x 2 C tiles
 * (32 rows x 32 columns) sum over every chunk, then go through a buffer into C (zero, bias or accumulate). */
#include <string.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "../common/amx_internal.h"
#include "gemm_direct.h"

#define SF_GA_A_SLOT 2 /* the 3x3x3 kernels' ring/pack slots: free while a 1x1x1 or transposed conv runs */
#define SF_GA_B_SLOT 3

typedef struct {
  int M, N, K, kc, nk, MB, NB; /* MB, NB: blocks of 16 rows / columns */
  sf_bf16 *a, *b;
  float *buf;         /* 32 x 32 C staging */
  const float **brow; /* K row pointers of B (NULL: a padding row of zeros) */
} amx_gemm;

static inline sf_bf16 *a_tile(const amx_gemm *g, int mb, int c) { return g->a + ((size_t)mb * g->nk + c) * 16 * g->kc; }
static inline sf_bf16 *b_tile(const amx_gemm *g, int c, int nb)
{
  return g->b + ((size_t)c * g->NB + nb) * (g->kc / 2) * 32;
}

/* n bf16 values of A row r from concatenated K index kk on, split where they cross a chunk */
static void put_a_run(const amx_gemm *g, int r, int kk, const sf_bf16 *v, int n)
{
  while (n > 0) {
    int at = kk % g->kc, run = g->kc - at < n ? g->kc - at : n;
    memcpy(a_tile(g, r / 16, kk / g->kc) + (size_t)(r % 16) * g->kc + at, v, sizeof(sf_bf16) * run);
    kk += run, v += run, n -= run;
  }
}

/* A rows r < M, columns of segment s from k0. Contiguous along K (aks == 1): converted a row run at a time.
 * Contiguous along M (ars == 1: the weight gradients, A = an activation transposed): 16 x 16 blocks transposed
 * in registers (the two layouts the callers have). */
SF_AMX_TARGET static void pack_a_segment(const amx_gemm *g, const sf_gd_problem *p, const sf_gd_seg *s, int k0)
{
  sf_bf16 v[32];
  if (p->aks == 1) { /* straight into the tiles, a chunk's part of the row at a time */
    for (int r = 0; r < p->M; r++)
      for (int k = 0; k < s->len;) {
        int kk = k0 + k, at = kk % g->kc, run = g->kc - at < s->len - k ? g->kc - at : s->len - k;
        sf_bf16_from_floats(a_tile(g, r / 16, kk / g->kc) + (size_t)(r % 16) * g->kc + at, s->a + (size_t)r * p->ars + k,
                            (size_t)run);
        k += run;
      }
  } else if (p->ars == 1) {
    for (int r0 = 0; r0 < p->M; r0 += 16)
      for (int k = 0; k < s->len; k += 16) {
        int nr = p->M - r0 < 16 ? p->M - r0 : 16, nk = s->len - k < 16 ? s->len - k : 16;
        __mmask16 m = (__mmask16)((1u << nr) - 1);
        __m512 t[16];
        for (int i = 0; i < 16; i++)
          t[i] = i < nk ? _mm512_maskz_loadu_ps(m, s->a + (size_t)(k + i) * p->aks + r0) : _mm512_setzero_ps();
        sf_amx_transpose16(t); /* t[r]: row r0 + r at K k..k+15 */
        for (int r = 0; r < nr; r++) {
          _mm256_storeu_si256((void *)v, (__m256i)_mm512_cvtneps_pbh(t[r]));
          put_a_run(g, r0 + r, k0 + k, v, nk);
        }
      }
  } else {
    SF_ABORT("sf_gd_run_amx: A must be contiguous along K (aks 1) or along M (ars 1), not ars %zu aks %zu", p->ars,
             p->aks);
  }
}

/* B in VNNI pairs: rows k, k+1 of the concatenated K (g->brow) interleaved per block of 16 columns */
SF_AMX_TARGET static void pack_b(const amx_gemm *g)
{
  const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int k = 0; k < g->nk * g->kc; k += 2) {
    const float *r0 = k < g->K ? g->brow[k] : NULL, *r1 = k + 1 < g->K ? g->brow[k + 1] : NULL;
    for (int nb = 0; nb < g->NB; nb++) {
      int left = g->N - 16 * nb < 16 ? g->N - 16 * nb : 16;
      __mmask16 m = (__mmask16)((1u << left) - 1);
      __m512 lo = r0 ? _mm512_maskz_loadu_ps(m, r0 + 16 * nb) : _mm512_setzero_ps();
      __m512 hi = r1 ? _mm512_maskz_loadu_ps(m, r1 + 16 * nb) : _mm512_setzero_ps();
      __m512i v = _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      _mm512_storeu_si512(b_tile(g, k / g->kc, nb) + (size_t)(k % g->kc / 2) * 32, v);
    }
  }
}

/* C rows [32*mb2, +32) x columns [32*nb2, +32) from the 2 x 2 C tiles */
SF_AMX_TARGET static void block(const amx_gemm *g, const sf_gd_problem *p, int mb, int nb)
{
  int two_m = mb + 1 < g->MB, two_n = nb + 1 < g->NB;
  const size_t as = (size_t)g->kc * 2;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int c = 0; c < g->nk; c++) {
    _tile_loadd(4, a_tile(g, mb, c), as);
    _tile_loadd(6, b_tile(g, c, nb), 64);
    _tile_dpbf16ps(0, 4, 6);
    if (two_n) {
      _tile_loadd(7, b_tile(g, c, nb + 1), 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if (two_m) {
      _tile_loadd(5, a_tile(g, mb + 1, c), as);
      _tile_dpbf16ps(2, 5, 6);
      if (two_n) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, g->buf, 128);
  _tile_stored(1, g->buf + 16, 128);
  _tile_stored(2, g->buf + 16 * 32, 128);
  _tile_stored(3, g->buf + 16 * 32 + 16, 128);
  int r0 = 16 * mb, j0 = 16 * nb, nr = p->M - r0 < 32 ? p->M - r0 : 32, nj = p->N - j0 < 32 ? p->N - j0 : 32;
  for (int r = 0; r < nr; r++) {
    float *crow = p->c + (size_t)(r0 + r) * p->ldc + j0;
    const float *v = g->buf + (size_t)r * 32;
    if (p->init == SF_GD_ACC)
      for (int j = 0; j < nj; j++) crow[j] += v[j];
    else if (p->init == SF_GD_BIAS)
      for (int j = 0; j < nj; j++) crow[j] = p->bias[j0 + j] + v[j];
    else
      memcpy(crow, v, sizeof(float) * nj);
  }
}

SF_AMX_TARGET void sf_gd_run_amx(const sf_gd_problem *p)
{
  SF_ASSERT(sf_amx_supported());
  if (p->M <= 0 || p->N <= 0) return;
  amx_gemm g = {.M = p->M, .N = p->N, .K = 0};
  for (int s = 0; s < p->nseg; s++) g.K += p->seg[s].len;
  int Kp = g.K <= 32 ? (g.K + 1) & ~1 : (g.K + 31) / 32 * 32;
  if (Kp == 0) Kp = 2; /* no K: C = init only, through zero tiles */
  g.kc = Kp < 32 ? Kp : 32, g.nk = Kp / g.kc, g.MB = (p->M + 15) / 16, g.NB = (p->N + 15) / 16;
  size_t a_n = (size_t)g.MB * 16 * Kp, b_n = (size_t)Kp * g.NB * 16;
  g.a = (sf_bf16 *)sf_workspace_floats(SF_GA_A_SLOT, a_n / 2 + 1);
  /* slot B: the packed B (b_n / 2 floats, a multiple of 16), the C buffer, the K row pointers */
  float *bspace = sf_workspace_floats(SF_GA_B_SLOT, b_n / 2 + 32 * 32 + (size_t)Kp * 2);
  g.b = (sf_bf16 *)bspace;
  g.buf = bspace + b_n / 2;
  g.brow = (const float **)(g.buf + 32 * 32);
  if (Kp != g.K || p->M % 16) memset(g.a, 0, sizeof(sf_bf16) * a_n); /* padding rows or columns: zero */
  for (int s = 0, k0 = 0; s < p->nseg; k0 += p->seg[s++].len) {
    pack_a_segment(&g, p, &p->seg[s], k0);
    for (int k = 0; k < p->seg[s].len; k++) g.brow[k0 + k] = p->seg[s].b + (size_t)k * p->bks;
  }
  pack_b(&g);
  sf_amx_config cfg;
  sf_amx_config_set(&cfg, 16, g.kc * 2, g.kc / 2);
  _tile_loadconfig(&cfg);
  for (int mb = 0; mb < g.MB; mb += 2)
    for (int nb = 0; nb < g.NB; nb += 2) block(&g, p, mb, nb);
  _tile_release();
}
