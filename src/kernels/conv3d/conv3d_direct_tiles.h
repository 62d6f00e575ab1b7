/* Template of the direct convolution register blocks, instantiated once per kernel set: a file
 * defines SF_DIRECT_ISA (SF_DIRECT_SET_AVX512/AVX2/C) and SF_DIRECT_TABLE (the table's name) and includes
 * this, which defines the forward/dX tiles and the dW blocks for that set's vectors
 * (conv3d_direct_vec.h) and the table of them (conv3d_direct_internal.h). The drivers that walk the
 * volume are in conv3d_direct.c and conv3d_direct_dw.c, shared by every set. */
#include "conv3d_direct_internal.h"
#include "conv3d_direct_vec.h"
#include "../common/sanitize_footprint.h"

/* Register blocks: acc[r][v] (r < R rows, v < NV vectors), R and NV compile-time constants after
 * inlining, so the block lives in vector registers. */
#define SF_RB_INLINE SF_VTARGET SF_NO_ASAN static inline __attribute__((always_inline))

/* acc = 0 */
SF_RB_INLINE void rb_zero(SF_VEC acc[][2], const int R, const int NV)
{
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[r][v] = SF_VZERO();
}

/* acc[r][v] += a[r * astride] * b[vw*v .. vw*v+vw): one rank-1 update (a broadcast per row) */
SF_RB_INLINE void rb_update(SF_VEC acc[][2], const float *a, size_t astride, const float *b, const int R,
                            const int NV)
{
  SF_VEC bv[2];
#pragma GCC unroll 2
  for (int v = 0; v < NV; v++) {
    bv[v] = SF_VLOAD(b + SF_VW * v);
    SF_VKEEP(bv[v]); /* one load per weight vector, not one per row folded into each FMA */
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; r++) {
    SF_VEC ab = SF_VSET1(a[r * astride]);
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[r][v] = SF_VFMA(ab, bv[v], acc[r][v]);
  }
}

/* dst row r (rows `stride` floats apart) = acc[r] */
SF_RB_INLINE void rb_store(float *dst, size_t stride, SF_VEC acc[][2], const int R, const int NV)
{
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) SF_VSTORE(dst + r * stride + SF_VW * v, acc[r][v]);
}

/* Forward/dX: R consecutive output voxels of one row times vw*NV channels, over all 27*K terms */
SF_RB_INLINE void tile_body(float *y, size_t ystride, const float *const *rows, int x0, const float *wb, int K,
                            const int R, const int NV)
{
  SF_VEC acc[SF_VMAX_R][2];
  rb_zero(acc, R, NV);
  for (int t9 = 0; t9 < 9; t9++) {
    if (!rows[t9]) continue;
    for (int kw = 0; kw < 3; kw++) {
      const float *xp = rows[t9] + (size_t)(x0 + kw) * K; /* padded index of voxel x0 + kw - 1 */
      const float *wp = wb + (size_t)(t9 * 3 + kw) * K * SF_VW * NV;
      for (int ci = 0; ci < K; ci++) rb_update(acc, xp + ci, K, wp + (size_t)ci * SF_VW * NV, R, NV);
    }
  }
  rb_store(y, ystride, acc, R, NV);
}

/* The slab-blocked driver's block: R output voxels (at y + yoff[r], vw*NV channels) += one tap's
 * terms over kc input channels, voxel r's input at x + xoff[r] (the voxels need not be neighbours:
 * a block gathers 6 wherever they are, so rows of 4 or 8 voxels still fill 12 accumulators);
 * wb: (kc, vw*NV) packed weights */
SF_RB_INLINE void tap_body(float *y, const size_t *yoff, const float *x, const size_t *xoff, const float *wb, int kc,
                           const int R, const int NV)
{
  SF_VEC acc[SF_VMAX_R][2];
  const float *xr[SF_VMAX_R];
#pragma GCC unroll 12
  for (int r = 0; r < R; r++) {
    xr[r] = x + xoff[r];
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[r][v] = SF_VLOAD(y + yoff[r] + SF_VW * v);
  }
  for (int ci = 0; ci < kc; ci++) {
    SF_VEC bv[2];
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) {
      bv[v] = SF_VLOAD(wb + (size_t)ci * SF_VW * NV + SF_VW * v);
      SF_VKEEP(bv[v]);
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
      SF_VEC ab = SF_VSET1(xr[r][ci]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) acc[r][v] = SF_VFMA(ab, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) SF_VSTORE(y + yoff[r] + SF_VW * v, acc[r][v]);
}

/* dst row r (rows `stride` floats apart) += acc[r] */
SF_RB_INLINE void rb_add_store(float *dst, size_t stride, SF_VEC acc[][2], const int R, const int NV)
{
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) {
      SF_VEC sum = SF_VADD(SF_VLOAD(dst + r * stride + SF_VW * v), acc[r][v]);
      SF_VSTORE(dst + r * stride + SF_VW * v, sum);
    }
}

/* dW: R input channels times vw*NV output channels of one tap, over a group of output rows. The
 * group's sum starts from zero and is added to dw at the end (not accumulated onto dw voxel by
 * voxel), so a gradient over N voxels sums N/group partial sums: at 32^3 x 8 channels the
 * running sum was 5.5e-6 off the double reference (relative to the largest value), enough to move
 * graph_equiv's Adam moments past 1e-5; im2col + sgemm was 4.7e-7 off. */
SF_RB_INLINE void dw_body(float *dwb, size_t dstride, const float *const *xrows, const float *dy, size_t gstride,
                          int nrows, int W, int Cin, const int R, const int NV)
{
  SF_VEC acc[SF_VMAX_R][2];
  rb_zero(acc, R, NV);
  for (int i = 0; i < nrows; i++) {
    const float *xp = xrows[i], *g = dy + (size_t)i * W * gstride;
    if (!xp) continue;
    for (int w = 0; w < W; w++) rb_update(acc, xp + (size_t)w * Cin, 1, g + (size_t)w * gstride, R, NV);
  }
  rb_add_store(dwb, dstride, acc, R, NV);
}

/* Packed dW (conv3d_direct_dw_packed.c): R gradient rows (dstride apart, vw*NV floats each) +=
 * sum over m voxels of xp[v][r] * gp[v][..]; xp: (m, R) and gp: (m, vw*NV), both contiguous, so
 * both streams run sequentially through L1 */
SF_RB_INLINE void dwp_body(float *dwb, size_t dstride, const float *xp, const float *gp, int m, const int R,
                           const int NV)
{
  SF_VEC acc[SF_VMAX_R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; r++)
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[r][v] = SF_VLOAD(dwb + r * dstride + SF_VW * v);
  for (int i = 0; i < m; i++) rb_update(acc, xp + (size_t)i * R, 1, gp + (size_t)i * SF_VW * NV, R, NV);
  rb_store(dwb, dstride, acc, R, NV);
}

#ifdef SF_FOOTPRINT_CHECKS
/* The ranges tile_body's loops touch (sanitize_footprint.h): per input row present, voxels
 * x0 .. x0+R+1 of K channels; that row's 3 taps of packed weights; R output rows of vw*NV floats. */
static void tile_footprint(float *y, size_t ystride, const float *const *rows, int x0, const float *wb, int K,
                           int R, int NV)
{
  for (int t9 = 0; t9 < 9; t9++) {
    if (!rows[t9]) continue;
    SF_FOOTPRINT(rows[t9] + (size_t)x0 * K, (size_t)(R + 2) * K, 0);
    SF_FOOTPRINT(wb + (size_t)t9 * 3 * K * SF_VW * NV, (size_t)3 * K * SF_VW * NV, 0);
  }
  for (int r = 0; r < R; r++) SF_FOOTPRINT(y + r * ystride, (size_t)SF_VW * NV, 1);
}
/* dw_body's: per input row present, W voxels Cin apart read R floats from each; the group's dy rows
 * (W voxels gstride apart, vw*NV floats each); R gradient rows of vw*NV floats, read and written. */
static void dw_footprint(float *dwb, size_t dstride, const float *const *xrows, const float *dy, size_t gstride,
                         int nrows, int W, int Cin, int R, int NV)
{
  for (int i = 0; i < nrows && W > 0; i++) {
    if (!xrows[i]) continue;
    SF_FOOTPRINT(xrows[i], (size_t)(W - 1) * Cin + R, 0);
    SF_FOOTPRINT(dy + (size_t)i * W * gstride, (size_t)(W - 1) * gstride + SF_VW * NV, 0);
  }
  for (int r = 0; r < R; r++) SF_FOOTPRINT(dwb + r * dstride, (size_t)SF_VW * NV, 1);
}
/* tap_body's: R input voxels of kc channels, kc weight rows, R output voxels (read and written) */
static void tap_footprint(float *y, const size_t *yoff, const float *x, const size_t *xoff, const float *wb, int kc,
                          int R, int NV)
{
  for (int r = 0; r < R; r++) {
    SF_FOOTPRINT(x + xoff[r], (size_t)kc, 0);
    SF_FOOTPRINT(y + yoff[r], (size_t)SF_VW * NV, 1);
  }
  SF_FOOTPRINT(wb, (size_t)kc * SF_VW * NV, 0);
}
/* dwp_body's: the two packed panels, R gradient rows (read and written) */
static void dwp_footprint(float *dwb, size_t dstride, const float *xp, const float *gp, int m, int R, int NV)
{
  SF_FOOTPRINT(xp, (size_t)m * R, 0);
  SF_FOOTPRINT(gp, (size_t)m * SF_VW * NV, 0);
  for (int r = 0; r < R; r++) SF_FOOTPRINT(dwb + r * dstride, (size_t)SF_VW * NV, 1);
}
#define SF_TILE_FOOTPRINT(...) tile_footprint(__VA_ARGS__)
#define SF_DWP_FOOTPRINT(...) dwp_footprint(__VA_ARGS__)
#define SF_TAP_FOOTPRINT(...) tap_footprint(__VA_ARGS__)
#define SF_DW_FOOTPRINT(...) dw_footprint(__VA_ARGS__)
#else
#define SF_TILE_FOOTPRINT(...) ((void)0)
#define SF_TAP_FOOTPRINT(...) ((void)0)
#define SF_DWP_FOOTPRINT(...) ((void)0)
#define SF_DW_FOOTPRINT(...) ((void)0)
#endif

#define SF_DEF_BLOCK(R, NV)                                                                                     \
  SF_VTARGET SF_NO_ASAN static void tile_##R##_##NV(float *y, size_t ystride, const float *const *rows, int x0,  \
                                                    const float *wb, int K)                                    \
  {                                                                                                           \
    SF_TILE_FOOTPRINT(y, ystride, rows, x0, wb, K, R, NV);                                                    \
    tile_body(y, ystride, rows, x0, wb, K, R, NV);                                                            \
  }                                                                                                           \
  SF_VTARGET SF_NO_ASAN static void tap_##R##_##NV(float *y, const size_t *yoff, const float *x,               \
                                                   const size_t *xoff, const float *wb, int kc)               \
  {                                                                                                           \
    SF_TAP_FOOTPRINT(y, yoff, x, xoff, wb, kc, R, NV);                                                        \
    tap_body(y, yoff, x, xoff, wb, kc, R, NV);                                                                \
  }                                                                                                           \
  SF_VTARGET SF_NO_ASAN static void dwp_##R##_##NV(float *dwb, size_t dstride, const float *xp, const float *gp, \
                                                   int m)                                                     \
  {                                                                                                           \
    SF_DWP_FOOTPRINT(dwb, dstride, xp, gp, m, R, NV);                                                         \
    dwp_body(dwb, dstride, xp, gp, m, R, NV);                                                                 \
  }                                                                                                           \
  SF_VTARGET SF_NO_ASAN static void dw_##R##_##NV(float *dwb, size_t dstride, const float *const *xrows,          \
                                                  const float *dy, size_t gstride, int nrows, int W, int Cin)   \
  {                                                                                                           \
    SF_DW_FOOTPRINT(dwb, dstride, xrows, dy, gstride, nrows, W, Cin, R, NV);                                  \
    dw_body(dwb, dstride, xrows, dy, gstride, nrows, W, Cin, R, NV);                                          \
  }
#define SF_DEF_BLOCKS6(NV)                                                                                      \
  SF_DEF_BLOCK(1, NV) SF_DEF_BLOCK(2, NV) SF_DEF_BLOCK(3, NV) SF_DEF_BLOCK(4, NV) SF_DEF_BLOCK(5, NV)           \
  SF_DEF_BLOCK(6, NV)
#define SF_DEF_BLOCKS12(NV)                                                                                     \
  SF_DEF_BLOCKS6(NV) SF_DEF_BLOCK(7, NV) SF_DEF_BLOCK(8, NV) SF_DEF_BLOCK(9, NV) SF_DEF_BLOCK(10, NV)            \
  SF_DEF_BLOCK(11, NV) SF_DEF_BLOCK(12, NV)
#define SF_LIST6(f, NV) f##_1_##NV, f##_2_##NV, f##_3_##NV, f##_4_##NV, f##_5_##NV, f##_6_##NV
#define SF_LIST12(f, NV)                                                                                        \
  SF_LIST6(f, NV), f##_7_##NV, f##_8_##NV, f##_9_##NV, f##_10_##NV, f##_11_##NV, f##_12_##NV

#if SF_VMAX_R == 12
SF_DEF_BLOCKS12(1)
SF_DEF_BLOCKS12(2)
const sf_direct_kernels SF_DIRECT_TABLE = {SF_VW, 12,
                                           {{SF_LIST12(tile, 1)}, {SF_LIST12(tile, 2)}},
                                           {{SF_LIST12(tap, 1)}, {SF_LIST12(tap, 2)}},
                                           {{SF_LIST12(dw, 1)}, {SF_LIST12(dw, 2)}},
                                           {{SF_LIST12(dwp, 1)}, {SF_LIST12(dwp, 2)}}};
#elif SF_VMAX_R == 6
SF_DEF_BLOCKS6(1)
SF_DEF_BLOCKS6(2)
const sf_direct_kernels SF_DIRECT_TABLE = {SF_VW, 6,
                                           {{SF_LIST6(tile, 1)}, {SF_LIST6(tile, 2)}},
                                           {{SF_LIST6(tap, 1)}, {SF_LIST6(tap, 2)}},
                                           {{SF_LIST6(dw, 1)}, {SF_LIST6(dw, 2)}},
                                           {{SF_LIST6(dwp, 1)}, {SF_LIST6(dwp, 2)}}};
#else
#error "SF_VMAX_R must be 6 or 12"
#endif
