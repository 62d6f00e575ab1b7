/* The one body of the direct small-GEMM kernel (gemm_direct.h), included by gemm_direct.c once per
 * CPU kernel set with GD_V (helper prefix of gemm_direct_vec.h: v16, v8, v4), GD_VL (floats per
 * vector), GD_RMAX (rows per register block: 4, 6 or 12), GD_TARGET (target attribute) and
 * GD_SUFFIX (name suffix) defined. Defines the static sf_gd_run_<GD_SUFFIX>(). */
#define GD_FN(x) SF_GD_CAT(x, GD_SUFFIX)
#define GD_VT SF_GD_CAT(GD_V, _t)
#define GD_MT SF_GD_CAT(GD_V, _mask)
#define V_(op) SF_GD_CAT(GD_V, op)

/* One register block: rows [0, R) of C at c, columns [0, NV*VL) (the last vector has nt lanes when
 * T), A and B already offset by the block's first row (aoff) and column (boff). */
GD_TARGET static inline __attribute__((always_inline)) void GD_FN(gd_tile)(const sf_gd_problem *p, size_t aoff,
                                                                          size_t boff, float *c, int nt,
                                                                          const int R, const int NV, const int T)
{
  GD_VT acc[GD_RMAX][2];
  GD_MT m = V_(_mask_of)(nt);
  const size_t ars = p->ars, aks = p->aks, bks = p->bks, ldc = p->ldc;
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) {
      int part = T && v == NV - 1;
      const float *src = p->init == SF_GD_BIAS ? p->bias + boff + v * GD_VL : c + r * ldc + v * GD_VL;
      acc[r][v] = p->init == SF_GD_ZERO ? V_(_zero)() : part ? V_(_loadn)(src, m) : V_(_load)(src);
    }
  for (int s = 0; s < p->nseg; s++) {
    const float *a = p->seg[s].a + aoff, *b = p->seg[s].b + boff;
    for (int k = 0; k < p->seg[s].len; k++, a += aks, b += bks) {
      GD_VT bv[2];
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) bv[v] = T && v == NV - 1 ? V_(_loadn)(b + v * GD_VL, m) : V_(_load)(b + v * GD_VL);
#pragma GCC unroll 12
      for (int r = 0; r < R; r++) {
        GD_VT ab = V_(_set1)(a[r * ars]);
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[r][v] = V_(_fma)(ab, bv[v], acc[r][v]);
      }
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) {
      if (T && v == NV - 1)
        V_(_storen)(c + r * ldc + v * GD_VL, acc[r][v], m);
      else
        V_(_store)(c + r * ldc + v * GD_VL, acc[r][v]);
    }
}

#define GD_TILE_NAME(R, NV, T) GD_FN(gd_tile_##R##_##NV##_##T)
#define GD_DEF_TILE(R, NV, T)                                                                                   \
  GD_TARGET static void GD_TILE_NAME(R, NV, T)(const sf_gd_problem *p, size_t aoff, size_t boff, float *c, int nt) \
  {                                                                                                           \
    GD_FN(gd_tile)(p, aoff, boff, c, nt, R, NV, T);                                                           \
  }
#define GD_REF_TILE(R, NV, T) GD_TILE_NAME(R, NV, T),
#define GD_ROWS SF_GD_CAT(SF_GD_ROWS_, GD_RMAX)

GD_ROWS(GD_DEF_TILE, 1, 0)
GD_ROWS(GD_DEF_TILE, 1, 1)
GD_ROWS(GD_DEF_TILE, 2, 0)
GD_ROWS(GD_DEF_TILE, 2, 1)

/* [NV-1][partial last vector][R-1] */
static void (*const GD_FN(gd_tiles)[2][2][GD_RMAX])(const sf_gd_problem *, size_t, size_t, float *, int) = {
    {{GD_ROWS(GD_REF_TILE, 1, 0)}, {GD_ROWS(GD_REF_TILE, 1, 1)}},
    {{GD_ROWS(GD_REF_TILE, 2, 0)}, {GD_ROWS(GD_REF_TILE, 2, 1)}},
};

/* Column blocks of 2 vectors outside, row blocks inside. With many row blocks and B rows far apart
 * (>= 1 KiB, which fall into few L1 sets), a column block's B rows are first packed contiguously
 * (workspace slot SF_GD_PACK_SLOT); for near rows packing cost more than it saved (measured). */
static void GD_FN(sf_gd_run_)(const sf_gd_problem *p)
{
  int pack = p->M >= 4 * GD_RMAX && p->bks >= 256 && p->nseg <= SF_GD_MAX_SEG;
  sf_gd_seg packed[SF_GD_MAX_SEG];
  size_t K = 0;
  for (int s = 0; s < p->nseg; s++) K += (size_t)p->seg[s].len;
  float *pk = pack ? sf_workspace_floats(SF_GD_PACK_SLOT, K * 2 * GD_VL) : NULL;
  for (int n0 = 0; n0 < p->N; n0 += 2 * GD_VL) {
    int cols = p->N - n0 < 2 * GD_VL ? p->N - n0 : 2 * GD_VL;
    int nv = (cols + GD_VL - 1) / GD_VL, nt = cols - (nv - 1) * GD_VL;
    sf_gd_problem q = *p;
    size_t boff = (size_t)n0;
    if (pack) {
      float *dst = pk;
      for (int s = 0; s < p->nseg; s++) {
        const float *src = p->seg[s].b + n0;
        for (int k = 0; k < p->seg[s].len; k++)
          memcpy(dst + (size_t)k * 2 * GD_VL, src + k * p->bks, cols * sizeof(float));
        packed[s] = (sf_gd_seg){p->seg[s].a, dst, p->seg[s].len};
        dst += (size_t)p->seg[s].len * 2 * GD_VL;
      }
      q.seg = packed, q.bks = 2 * GD_VL, q.bias = p->bias ? p->bias + n0 : NULL, boff = 0;
    }
    for (int m0 = 0; m0 < p->M; m0 += GD_RMAX) {
      int r = p->M - m0 < GD_RMAX ? p->M - m0 : GD_RMAX;
      GD_FN(gd_tiles)[nv - 1][nt != GD_VL][r - 1](&q, (size_t)m0 * p->ars, boff,
                                                  p->c + (size_t)m0 * p->ldc + n0, nt);
    }
  }
}

#undef GD_FN
#undef GD_VT
#undef GD_MT
#undef V_
#undef GD_TILE_NAME
#undef GD_DEF_TILE
#undef GD_REF_TILE
#undef GD_ROWS
