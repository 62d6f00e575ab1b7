/* Template of the Winograd F(2x2x2, 3x3x3) stages for one CPU kernel set, included after
 * conv3d_direct_tiles.h (whose register-block helpers rb_* it reuses) with SF_WINO_TABLE naming the
 * table (conv3d_winograd_internal.h). The driver is conv3d_winograd.c.
 *
 * In one dimension F(2,3) computes 2 outputs of a 3-tap correlation from 4 inputs d with 4 products:
 *   y = A^T [(G g) * (B^T d)],  B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
 *   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],  A^T = [1 1 1 0; 0 1 -1 -1],
 * and in 3D the three transforms apply along depth, rows and columns in turn: a 2x2x2 output tile
 * costs 64 products per (input, output) channel pair instead of 8 * 27 = 216. The 64 products of
 * a block of tiles are 64 independent GEMMs (tiles x K) . (K x N), run by the direct kernels'
 * register blocks. Vectors run along channels (NDHWC), so every stage is whole-vector arithmetic.
 * Under ASan the stages are left uninstrumented and each block checks its footprint on entry
 * (sanitize_footprint.h, as the direct register blocks). With SF_WINO_BF16 defined (the AVX-512 set) it
 * also includes conv3d_winograd_bf16_tiles.h (forward/dX) and conv3d_winograd_bf16_dw_tiles.h (dW), the
 * same stages with the GEMMs on VDPBF16PS. */
#include "conv3d_winograd_internal.h"

#define SF_WI SF_VTARGET SF_NO_ASAN static inline __attribute__((always_inline))

/* B^T along one axis: the 4 vectors p[0], p[s], p[2s], p[3s] in place */
SF_WI void wino_bt(SF_VEC *p, int s)
{
  SF_VEC d0 = p[0], d1 = p[s], d2 = p[2 * s], d3 = p[3 * s];
  p[0] = SF_VSUB(d0, d2);
  p[s] = SF_VADD(d1, d2);
  p[2 * s] = SF_VSUB(d2, d1);
  p[3 * s] = SF_VSUB(d1, d3);
}

/* G along one axis: g[0], g[gs], g[2gs] -> u[0], u[us], u[2us], u[3us] */
SF_WI void wino_g(SF_VEC *u, int us, const SF_VEC *g, int gs)
{
  SF_VEC half = SF_VSET1(0.5f), g0 = g[0], g1 = g[gs], g2 = g[2 * gs];
  SF_VEC e = SF_VMUL(SF_VADD(g0, g2), half), o = SF_VMUL(g1, half);
  u[0] = g0;
  u[us] = SF_VADD(e, o);
  u[2 * us] = SF_VSUB(e, o);
  u[3 * us] = g2;
}

/* A^T along one axis: m[0], m[s], m[2s], m[3s] -> m[0], m[s] */
SF_WI void wino_at(SF_VEC *m, int s)
{
  SF_VEC m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s];
  m[0] = SF_VADD(SF_VADD(m0, m1), m2);
  m[s] = SF_VSUB(SF_VSUB(m1, m2), m3);
}

/* U (conv3d_winograd_internal.h) from w: (27, K, N): 27 weight vectors -> 64, a vector of output
 * channels at a time */
SF_VTARGET SF_NO_ASAN static void wino_weights(float *U, const float *w, int K, int N)
{
  SF_FOOTPRINT(w, (size_t)27 * K * N, 0);
  SF_FOOTPRINT(U, (size_t)64 * K * N, 1);
  size_t xs = (size_t)K * N; /* between transformed points */
  for (int k = 0; k < K; k++)
    for (int c = 0; c < N; c += SF_VW) {
      SF_VEC g[27], a[36], b[48], u[64];
      for (int t = 0; t < 27; t++) g[t] = SF_VLOAD(w + ((size_t)t * K + k) * N + c);
      for (int dh = 0; dh < 9; dh++) wino_g(a + dh * 4, 1, g + dh * 3, 1);             /* columns: (3,3,4) */
      for (int d = 0; d < 3; d++)                                                       /* rows: (3,4,4) */
        for (int l = 0; l < 4; l++) wino_g(b + d * 16 + l, 4, a + d * 12 + l, 4);
      for (int jl = 0; jl < 16; jl++) wino_g(u + jl, 16, b + jl, 16);                   /* depth: (4,4,4) */
      int blk = c / (2 * SF_VW), width = N - blk * 2 * SF_VW < 2 * SF_VW ? SF_VW : 2 * SF_VW;
      float *dst = U + (size_t)blk * 2 * SF_VW * K + (size_t)k * width + (c - blk * 2 * SF_VW);
      for (int xi = 0; xi < 64; xi++) SF_VSTORE(dst + xi * xs, u[xi]);
    }
}

/* t = B^T d B of a tile's 4x4x4 input voxels, channels [c, c + vw). rows[i*4+j]: input row (plane
 * 2td-1+i, row 2th-1+j), a zero row outside the volume; columns w0 .. w0+3, which an interior tile
 * (edge == 0) has all inside the row, so its loads need no test. */
SF_WI void wino_input_t(const sf_wino_job *j, const float *const rows[16], int w0, const int edge, int c,
                        SF_VEC t[64])
{
  SF_VEC z = SF_VZERO();
  int l0 = w0 < 0 ? 1 : 0, l1 = w0 + 3 >= j->W ? 3 : 4; /* the columns inside the volume */
#pragma GCC unroll 16
  for (int r = 0; r < 16; r++) {
#pragma GCC unroll 4
    for (int l = 0; l < 4; l++)
      t[r * 4 + l] = !edge || (l >= l0 && l < l1) ? SF_VLOAD(rows[r] + (ptrdiff_t)(w0 + l) * j->K + c) : z;
    wino_bt(t + r * 4, 1);
  }
#pragma GCC unroll 16
  for (int il = 0; il < 16; il++) wino_bt(t + (il / 4) * 16 + il % 4, 4);
#pragma GCC unroll 16
  for (int jl = 0; jl < 16; jl++) wino_bt(t + jl, 16);
}

/* V rows of tile `slot`: B^T d B of its input voxels (wino_input_t), all K channels */
SF_WI void wino_input_body(const sf_wino_job *j, int slot, const float *const rows[16], int w0, const int edge)
{
  for (int c = 0; c < j->K; c += SF_VW) {
    SF_VEC t[64];
    wino_input_t(j, rows, w0, edge, c, t);
    float *dst = j->V + (size_t)slot * j->K + c;
#pragma GCC unroll 64
    for (int xi = 0; xi < 64; xi++) SF_VSTORE(dst + xi * j->vs, t[xi]);
  }
}

SF_VTARGET SF_NO_ASAN static void wino_input_tile(const sf_wino_job *j, int slot, const float *const rows[16],
                                                  int w0)
{
  if (w0 >= 0 && w0 + 3 < j->W)
    wino_input_body(j, slot, rows, w0, 0);
  else
    wino_input_body(j, slot, rows, w0, 1);
}

/* The 2x2x2 output voxels of tile `slot` (output plane d, row h, column w) from M: A^T m A */
SF_VTARGET SF_NO_ASAN static void wino_output_tile(const sf_wino_job *j, int slot, int d, int h, int w)
{
  size_t ms = j->ms, row = (size_t)j->W * j->N, plane = (size_t)j->H * row;
  const float *src = j->M + (size_t)slot * j->N;
  float *y = j->y + (size_t)d * plane + (size_t)h * row + (size_t)w * j->N;
  for (int c = 0; c < j->N; c += SF_VW) {
    SF_VEC m[64];
    for (int xi = 0; xi < 64; xi++) m[xi] = SF_VLOAD(src + xi * ms + c);
    for (int r = 0; r < 16; r++) wino_at(m + r * 4, 1);          /* columns: 4 -> 2 */
    for (int i = 0; i < 4; i++)                                  /* rows */
      for (int l = 0; l < 2; l++) wino_at(m + i * 16 + l, 4);
    for (int jl = 0; jl < 4; jl++) wino_at(m + (jl / 2) * 4 + jl % 2, 16); /* depth */
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++)
        for (int e = 0; e < 2; e++) SF_VSTORE(y + a * plane + b * row + e * j->N + c, m[a * 16 + b * 4 + e]);
  }
}

/* M rows [r0, r0+R) of point xi, column block at n0 (NV vectors) = V rows . U block */
SF_WI void wino_gemm_rows(const sf_wino_job *j, int xi, int r0, int n0, const float *ub, const int R, const int NV)
{
  SF_VEC acc[SF_VMAX_R][2];
  const float *v = j->V + (size_t)xi * j->vs + (size_t)r0 * j->K;
  rb_zero(acc, R, NV);
  for (int k = 0; k < j->K; k++) rb_update(acc, v + k, j->K, ub + (size_t)k * SF_VW * NV, R, NV);
  rb_store(j->M + (size_t)xi * j->ms + (size_t)r0 * j->N + n0, j->N, acc, R, NV);
}

/* switch (r) running CALL(R, NV) with R = r (1 .. SF_VMAX_R) and NV = nv (1 or 2) compile-time
 * constants, so the register block of every size is unrolled into registers */
#define SF_WINO_CASE(R, CALL)                                                                                   \
  case R:                                                                                                     \
    if (nv == 2)                                                                                              \
      CALL(R, 2);                                                                                             \
    else                                                                                                      \
      CALL(R, 1);                                                                                             \
    break;
#if SF_VMAX_R == 12
#define SF_WINO_CASES_7_12(CALL)                                                                                \
  SF_WINO_CASE(7, CALL) SF_WINO_CASE(8, CALL) SF_WINO_CASE(9, CALL) SF_WINO_CASE(10, CALL)                      \
  SF_WINO_CASE(11, CALL) SF_WINO_CASE(12, CALL)
#else
#define SF_WINO_CASES_7_12(CALL)
#endif
#define SF_WINO_BY_R(r, CALL)                                                                                   \
  switch (r) {                                                                                                \
    SF_WINO_CASE(1, CALL) SF_WINO_CASE(2, CALL) SF_WINO_CASE(3, CALL) SF_WINO_CASE(4, CALL)                     \
    SF_WINO_CASE(5, CALL) SF_WINO_CASE(6, CALL) SF_WINO_CASES_7_12(CALL)                                        \
  }

#define SF_WINO_GEMM_CALL(R, NV) wino_gemm_rows(j, xi, r0, n0, ub, R, NV)
SF_VTARGET SF_NO_ASAN static void wino_gemm(const sf_wino_job *j, int xi, int nt)
{
  const float *U = j->U + (size_t)xi * j->K * j->N;
  for (int n0 = 0; n0 < j->N; n0 += 2 * SF_VW) {
    int nv = j->N - n0 < 2 * SF_VW ? 1 : 2;
    const float *ub = U + (size_t)n0 * j->K;
    for (int r0 = 0; r0 < nt; r0 += SF_VMAX_R) {
      int r = nt - r0 < SF_VMAX_R ? nt - r0 : SF_VMAX_R;
      SF_WINO_BY_R(r, SF_WINO_GEMM_CALL)
    }
  }
}

/* rows[i*4+r]: the input rows under tile row (td, th): plane 2td-1+i, row 2th-1+r, or the zero row */
SF_WI void wino_tile_rows(const sf_wino_job *j, int td, int th, const float *rows[16])
{
  size_t plane = (size_t)j->H * j->W * j->K;
  for (int i = 0; i < 4; i++) {
    int p = 2 * td - 1 + i;
    const float *pl = p < 0 ? j->lo : p >= j->nd ? j->hi : j->x + (size_t)p * plane;
    for (int r = 0; r < 4; r++) {
      int h = 2 * th - 1 + r;
      rows[i * 4 + r] = pl && h >= 0 && h < j->H ? pl + (size_t)h * j->W * j->K : j->zero;
    }
  }
}

/* tile t's position: (td, th, tw), tw fastest */
SF_WI void wino_tile_at(const sf_wino_job *j, size_t t, int *td, int *th, int *tw)
{
  int TW = j->W / 2, TH = j->H / 2;
  *tw = (int)(t % TW), *th = (int)(t / TW % TH), *td = (int)(t / ((size_t)TW * TH));
}

/* V rows of tiles [t0, t0 + nt) */
SF_VTARGET SF_NO_ASAN static void wino_input_tiles(const sf_wino_job *j, size_t t0, int nt)
{
  for (int s = 0; s < nt; s++) {
    int td, th, tw;
    const float *rows[16];
    wino_tile_at(j, t0 + s, &td, &th, &tw);
    wino_tile_rows(j, td, th, rows);
    wino_input_tile(j, s, rows, 2 * tw - 1);
  }
}

#ifdef SF_FOOTPRINT_CHECKS
/* The ranges a block of tiles touches (sanitize_footprint.h), as the stages compute them: per tile
 * the 16 input rows (W*K floats each; the zero row for rows outside the volume) and its 2x2 rows of
 * 2 output voxels (forward: y written; dW: dy read); V and M up to the block's last tile; U (forward)
 * or Wt (dW, read and written) whole. */
SF_VTARGET static void wino_footprint(const sf_wino_job *j, size_t t0, int nt, int dw)
{
  size_t row = (size_t)j->W * j->N, plane = (size_t)j->H * row;
  for (int s = 0; s < nt; s++) {
    int td, th, tw;
    const float *rows[16];
    wino_tile_at(j, t0 + s, &td, &th, &tw);
    wino_tile_rows(j, td, th, rows);
    for (int r = 0; r < 16; r++) SF_FOOTPRINT(rows[r], (size_t)j->W * j->K, 0);
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++) {
        size_t off = (size_t)(2 * td + a) * plane + (size_t)(2 * th + b) * row + (size_t)(2 * tw) * j->N;
        SF_FOOTPRINT((dw ? j->dy : j->y) + off, 2 * (size_t)j->N, !dw);
      }
  }
  if (j->Mb) { /* bf16 dW (conv3d_winograd_bf16_dw_tiles.h): pairs of tiles in bf16, two words to a float */
    size_t np = (size_t)(nt + 1) / 2;
    SF_FOOTPRINT((const float *)j->Vb, (63 * j->vs + np * 2 * j->K + 1) / 2, 1);
    SF_FOOTPRINT((const float *)j->Mb, (63 * j->ms + np * 2 * j->N + 1) / 2, 1);
    SF_FOOTPRINT(j->Wt, (size_t)64 * j->K * j->N, 1);
    return;
  }
  SF_FOOTPRINT(j->M, 63 * j->ms + (size_t)nt * j->N, 1);
  if (j->Vb) { /* bf16 GEMMs (conv3d_winograd_bf16_tiles.h): V and U in bf16, two to a float */
    SF_FOOTPRINT((const float *)j->Vb, (63 * j->vs + (size_t)nt * j->K + 1) / 2, 1);
    SF_FOOTPRINT((const float *)j->Ub, (size_t)32 * j->K * j->N, 0);
    return;
  }
  SF_FOOTPRINT(j->V, 63 * j->vs + (size_t)nt * j->K, 1);
  SF_FOOTPRINT(dw ? j->Wt : j->U, (size_t)64 * j->K * j->N, dw);
}
#define SF_WINO_FOOTPRINT(j, t0, nt, dw) wino_footprint(j, t0, nt, dw)
#else
#define SF_WINO_FOOTPRINT(j, t0, nt, dw) ((void)0)
#endif

SF_VTARGET SF_NO_ASAN static void wino_block(const sf_wino_job *j, size_t t0, int nt)
{
  SF_WINO_FOOTPRINT(j, t0, nt, 0);
  wino_input_tiles(j, t0, nt);
  for (int xi = 0; xi < 64; xi++) wino_gemm(j, xi, nt);
  for (int s = 0; s < nt; s++) {
    int td, th, tw;
    wino_tile_at(j, t0 + s, &td, &th, &tw);
    wino_output_tile(j, s, 2 * td, 2 * th, 2 * tw);
  }
}

/* ---- weight gradient: dW = sum over tiles of G^T [(B^T x B) * (A dy A^T)] G (the transpose of the
 * forward's y = A^T [(G w G^T) * (B^T x B)] A in w), summed over tiles in the transformed domain ---- */

/* A along one axis: m[0], m[s] -> m[0], m[s], m[2s], m[3s] = (y0, y0 + y1, y0 - y1, -y1) */
SF_WI void wino_a(SF_VEC *m, int s)
{
  SF_VEC y0 = m[0], y1 = m[s];
  m[s] = SF_VADD(y0, y1);
  m[2 * s] = SF_VSUB(y0, y1);
  m[3 * s] = SF_VSUB(SF_VZERO(), y1);
}

/* G^T along one axis: u[0], u[s], u[2s], u[3s] -> g0, g1, g2 = (u0 + (u1+u2)/2, (u1-u2)/2, (u1+u2)/2 + u3) */
SF_WI void wino_gt(SF_VEC *g, int gs, const SF_VEC *u, int s)
{
  SF_VEC half = SF_VSET1(0.5f), e = SF_VMUL(SF_VADD(u[s], u[2 * s]), half), o = SF_VMUL(SF_VSUB(u[s], u[2 * s]), half);
  g[0] = SF_VADD(u[0], e);
  g[gs] = o;
  g[2 * gs] = SF_VADD(e, u[3 * s]);
}

/* m = A dy A^T of the output gradient's 2x2x2 voxels at src (output channels [c, c + vw)), 2x2x2 -> 4x4x4 */
SF_WI void wino_dy_t(const sf_wino_job *j, const float *src, int c, SF_VEC m[64])
{
  size_t row = (size_t)j->W * j->N, plane = (size_t)j->H * row;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int e = 0; e < 2; e++) m[a * 16 + b * 4 + e] = SF_VLOAD(src + a * plane + b * row + e * j->N + c);
  for (int ab = 0; ab < 4; ab++) wino_a(m + (ab / 2) * 16 + (ab % 2) * 4, 1); /* columns: 2 -> 4 */
  for (int i = 0; i < 2; i++)                                                     /* rows */
    for (int l = 0; l < 4; l++) wino_a(m + i * 16 + l, 4);
  for (int jl = 0; jl < 16; jl++) wino_a(m + jl, 16);                             /* depth */
}

/* the output gradient's 2x2x2 voxels of tile t: (td, th, tw) -> output voxel (2td, 2th, 2tw) */
SF_WI const float *wino_dy_at(const sf_wino_job *j, int td, int th, int tw)
{
  size_t row = (size_t)j->W * j->N, plane = (size_t)j->H * row;
  return j->dy + (size_t)(2 * td) * plane + (size_t)(2 * th) * row + (size_t)(2 * tw) * j->N;
}

/* M rows of tile `slot` = A dy A^T of the output gradient's 2x2x2 voxels at src */
SF_VTARGET SF_NO_ASAN static void wino_dy_tile(const sf_wino_job *j, int slot, const float *src)
{
  float *dst = j->M + (size_t)slot * j->N;
  for (int c = 0; c < j->N; c += SF_VW) {
    SF_VEC m[64];
    wino_dy_t(j, src, c, m);
    for (int xi = 0; xi < 64; xi++) SF_VSTORE(dst + xi * j->ms + c, m[xi]);
  }
}

/* Wt rows [k0, k0+R) of point xi, columns at n0 (NV vectors) += sum over nt tiles of V[t][k] M[t][n] */
SF_WI void wino_dw_rows(const sf_wino_job *j, int xi, int k0, int n0, int nt, const int R, const int NV)
{
  SF_VEC acc[SF_VMAX_R][2];
  float *wt = j->Wt + (size_t)xi * j->K * j->N + (size_t)k0 * j->N + n0;
  const float *v = j->V + (size_t)xi * j->vs + k0, *m = j->M + (size_t)xi * j->ms + n0;
  rb_zero(acc, R, NV); /* the block's sum, then added: Wt sums block sums, not tile after tile */
  for (int t = 0; t < nt; t++) rb_update(acc, v + (size_t)t * j->K, 1, m + (size_t)t * j->N, R, NV);
  rb_add_store(wt, j->N, acc, R, NV);
}

#define SF_WINO_DW_CALL(R, NV) wino_dw_rows(j, xi, k0, n0, nt, R, NV)
SF_VTARGET SF_NO_ASAN static void wino_dw_gemm(const sf_wino_job *j, int xi, int nt)
{
  for (int n0 = 0; n0 < j->N; n0 += 2 * SF_VW) {
    int nv = j->N - n0 < 2 * SF_VW ? 1 : 2;
    for (int k0 = 0; k0 < j->K; k0 += SF_VMAX_R) {
      int r = j->K - k0 < SF_VMAX_R ? j->K - k0 : SF_VMAX_R;
      SF_WINO_BY_R(r, SF_WINO_DW_CALL)
    }
  }
}

SF_VTARGET SF_NO_ASAN static void wino_dw_block(const sf_wino_job *j, size_t t0, int nt)
{
  SF_WINO_FOOTPRINT(j, t0, nt, 1);
  wino_input_tiles(j, t0, nt);
  for (int s = 0; s < nt; s++) {
    int td, th, tw;
    wino_tile_at(j, t0 + s, &td, &th, &tw);
    wino_dy_tile(j, s, wino_dy_at(j, td, th, tw));
  }
  for (int xi = 0; xi < 64; xi++) wino_dw_gemm(j, xi, nt);
}

/* dw: (t1 - t0, K, N), the rows of taps [t0, t1), += G^T Wt G (the other taps are computed, not stored) */
SF_VTARGET SF_NO_ASAN static void wino_dw_finish(float *dw, const float *Wt, int K, int N, int t0, int t1)
{
  SF_FOOTPRINT(Wt, (size_t)64 * K * N, 0);
  SF_FOOTPRINT(dw, (size_t)(t1 - t0) * K * N, 1);
  size_t xs = (size_t)K * N;
  for (int k = 0; k < K; k++)
    for (int c = 0; c < N; c += SF_VW) {
      SF_VEC u[64], b[48], a[36], g[27];
      for (int xi = 0; xi < 64; xi++) u[xi] = SF_VLOAD(Wt + xi * xs + (size_t)k * N + c);
      for (int jl = 0; jl < 16; jl++) wino_gt(b + jl, 16, u + jl, 16);                /* depth: (3,4,4) */
      for (int d = 0; d < 3; d++)                                                      /* rows: (3,3,4) */
        for (int l = 0; l < 4; l++) wino_gt(a + d * 12 + l, 4, b + d * 16 + l, 4);
      for (int dh = 0; dh < 9; dh++) wino_gt(g + dh * 3, 1, a + dh * 4, 1);             /* columns: (3,3,3) */
      for (int t = t0; t < t1; t++) {
        float *p = dw + ((size_t)(t - t0) * K + k) * N + c;
        SF_VEC sum = SF_VADD(SF_VLOAD(p), g[t]);
        SF_VSTORE(p, sum);
      }
    }
}

#ifdef SF_WINO_BF16 /* the AVX-512 set: its GEMMs on VDPBF16PS too */
#include "conv3d_winograd_bf16_tiles.h"
#include "conv3d_winograd_bf16_dw_tiles.h"
#define SF_WINO_BF16_STAGES wino_bf16_weights, wino_bf16_block, wino_bf16_dw_block
#else
#define SF_WINO_BF16_STAGES NULL, NULL, NULL
#endif

const sf_wino_kernels SF_WINO_TABLE = {SF_VW, wino_weights, wino_block, wino_dw_block, wino_dw_finish,
                                       SF_WINO_BF16_STAGES};
