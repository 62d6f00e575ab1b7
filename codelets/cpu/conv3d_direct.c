/* 3x3x3 convolution (padding 1, stride 1, no bias) computed directly with AVX-512, without im2col.
 * NDHWC activations, (27,Cin,Cout) weights, as the other conv3d kernels (scaffold/ops.h).
 *
 * Register block: R consecutive output voxels of one row (R <= 12) times 16*NV output channels
 * (NV = 2, or 1 for a last block of 16) live in R*NV zmm accumulators for the whole 27*Cin
 * reduction. For each (tap, input channel) the NV weight vectors are loaded once and each of the R
 * input values is broadcast once: 24 FMAs per 14 loads, so the loop is FMA-bound, where im2col +
 * sgemm spends time writing and re-reading the 27x larger column matrix.
 * Input planes are copied once into a ring of three W-padded planes (a zero voxel at each end of a
 * row), so the kw taps never test borders; rows outside the volume (h or d) are skipped whole.
 * The kernel set is chosen at run time (scaffold/cpu_isa.h), so the file builds everywhere and
 * sf_conv3d_direct_available() says whether it may be called. The weight gradient's kernel is in
 * conv3d_direct_dw.c. */
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "conv3d_direct_internal.h"

#if SF_HAVE_DIRECT
#define SF_DIRECT_PACK_SLOT 3

/* One register block: y[r][0 .. 16*NV) for r < R (y already offset to the block's first channel,
 * rows Cout apart), rows[t9] the padded input row of tap (kd,kh) = (t9/3, t9%3) at this output row
 * (NULL: outside the volume), x0 the first output voxel, wb: (27*Cin, 16*NV) the block's weights. */
typedef void (*tile_fn)(float *y, const float *const *rows, int x0, const float *wb, int Cin, int Cout);

SF_RB_INLINE void tile_body(float *y, const float *const *rows, int x0, const float *wb, int Cin, int Cout,
                            const int R, const int NV)
{
  __m512 acc[SF_DIRECT_MAX_R][2];
  sf_rb_load(acc, NULL, 0, R, NV);
  for (int t9 = 0; t9 < 9; t9++) {
    if (!rows[t9]) continue;
    for (int kw = 0; kw < 3; kw++) {
      const float *xp = rows[t9] + (size_t)(x0 + kw) * Cin; /* padded index of voxel x0 + kw - 1 */
      const float *wp = wb + (size_t)(t9 * 3 + kw) * Cin * 16 * NV;
      for (int ci = 0; ci < Cin; ci++) sf_rb_update(acc, xp + ci, Cin, wp + (size_t)ci * 16 * NV, R, NV);
    }
  }
  sf_rb_store(y, Cout, acc, R, NV);
}

#define SF_DEF_TILE(R, NV)                                                                                      \
  SF_AVX512 static void tile_##R##_##NV(float *y, const float *const *rows, int x0, const float *wb, int Cin,  \
                                        int Cout)                                                             \
  {                                                                                                           \
    tile_body(y, rows, x0, wb, Cin, Cout, R, NV);                                                             \
  }
#define SF_DEF_TILES(NV)                                                                                        \
  SF_DEF_TILE(1, NV) SF_DEF_TILE(2, NV) SF_DEF_TILE(3, NV) SF_DEF_TILE(4, NV) SF_DEF_TILE(5, NV)                \
  SF_DEF_TILE(6, NV) SF_DEF_TILE(7, NV) SF_DEF_TILE(8, NV) SF_DEF_TILE(9, NV) SF_DEF_TILE(10, NV)              \
  SF_DEF_TILE(11, NV) SF_DEF_TILE(12, NV)
SF_DEF_TILES(1)
SF_DEF_TILES(2)

static const tile_fn tiles[2][SF_DIRECT_MAX_R] = {
    {tile_1_1, tile_2_1, tile_3_1, tile_4_1, tile_5_1, tile_6_1, tile_7_1, tile_8_1, tile_9_1, tile_10_1,
     tile_11_1, tile_12_1},
    {tile_1_2, tile_2_2, tile_3_2, tile_4_2, tile_5_2, tile_6_2, tile_7_2, tile_8_2, tile_9_2, tile_10_2,
     tile_11_2, tile_12_2},
};

/* dst: (H, W+2, C) = src: (H,W,C) with a zero voxel before and after every row */
static void pad_plane(float *dst, const float *src, int H, int W, int C)
{
  size_t row = (size_t)W * C;
  for (int h = 0; h < H; h++, dst += row + 2 * (size_t)C, src += row) {
    memset(dst, 0, sizeof(float) * C);
    memcpy(dst + C, src, sizeof(float) * row);
    memset(dst + C + row, 0, sizeof(float) * C);
  }
}

void sf_direct_ring_planes(const float *pl[3], float *ring, int held[3], int d, const float *lo, const float *x,
                           const float *hi, int nd, int H, int W, int C)
{
  size_t plane = (size_t)H * W * C, pplane = (size_t)H * (W + 2) * C;
  for (int kd = 0; kd < 3; kd++) {
    int e = d + kd - 1, s = (e + 3) % 3;
    const float *src = e < 0 ? lo : e >= nd ? hi : x + (size_t)e * plane;
    pl[kd] = src ? ring + (size_t)s * pplane : NULL;
    if (src && held[s] != e) pad_plane(ring + (size_t)s * pplane, src, H, W, C), held[s] = e;
  }
}

/* wp: (27*K, nb) = the weights of output channels [c0, c0+nb) (nb = 32 or 16), contiguous so a
 * register block streams them sequentially; K is the input channel count of the conv being run.
 * Forward (flip == 0): wp[k][c][j] = w[k][c][c0+j], w: (27, Cin=K, Cout).
 * dX (flip == 1), a forward conv of dy: wp[k][co][j] = w[26-k][c0+j][co], w: (27, Cin, Cout=K), the
 *   taps mirrored and the channels transposed. */
static void pack_weights(float *wp, const float *w, int Cin, int Cout, int flip, int c0, int nb)
{
  int K = flip ? Cout : Cin;
  for (int k = 0; k < 27; k++) {
    const float *src = w + (size_t)(flip ? 26 - k : k) * Cin * Cout;
    for (int c = 0; c < K; c++, wp += nb)
      if (!flip)
        memcpy(wp, src + (size_t)c * Cout + c0, sizeof(float) * nb);
      else
        for (int j = 0; j < nb; j++) wp[j] = src[(size_t)(c0 + j) * Cout + c];
  }
}

int sf_conv3d_direct_available(void) { return sf_cpu_isa_active() == SF_ISA_AVX512; }

/* y: (nd,H,W,N) = conv of x: (nd,H,W,K) with halo planes x_lo/x_hi (NULL = zero), where
 * (K, N) = (Cin, Cout) for the forward (flip 0) and (Cout, Cin) for dX (flip 1, x = dy, y = dx).
 * One block of 32 output channels at a time, so only that block's weights are packed (27*K*32
 * floats: 1.7 MiB at 512 channels, where packing all would take 57 MiB per worker). */
static void direct_conv(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                        int H, int W, int Cin, int Cout, int flip)
{
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout;
  size_t prow = (size_t)(W + 2) * K;
  float *ring = sf_workspace_floats(SF_DIRECT_RING_SLOT, 3 * H * prow);
  float *wb = sf_workspace_floats(SF_DIRECT_PACK_SLOT, (size_t)27 * K * 32);
  /* balanced tiles along a row: ceil(W/12) tiles of W/ntiles voxels, the first W%ntiles one longer */
  int ntiles = (W + SF_DIRECT_MAX_R - 1) / SF_DIRECT_MAX_R, tbase = W / ntiles, tlong = W % ntiles;
  for (int co = 0; co < N; co += 32) {
    int nv = N - co >= 32 ? 2 : 1;
    pack_weights(wb, w, Cin, Cout, flip, co, 16 * nv);
    int held[3] = {-2, -2, -2}; /* input plane (slab-relative, -1..nd) in each ring slot */
    for (int d = 0; d < nd; d++) {
      const float *pl[3];
      sf_direct_ring_planes(pl, ring, held, d, x_lo, x, x_hi, nd, H, W, K);
      for (int h = 0; h < H; h++) {
        const float *rows[9];
        for (int t9 = 0; t9 < 9; t9++) {
          int kd = t9 / 3, hh = h + t9 % 3 - 1;
          rows[t9] = (pl[kd] && hh >= 0 && hh < H) ? pl[kd] + (size_t)hh * prow : NULL;
        }
        float *yrow = y + ((size_t)d * H + h) * W * N + co;
        for (int t = 0, x0 = 0; t < ntiles; t++) {
          int r = tbase + (t < tlong);
          tiles[nv - 1][r - 1](yrow + (size_t)x0 * N, rows, x0, wb, K, N);
          x0 += r;
        }
      }
    }
  }
}

#else /* not x86-64 GCC/Clang: never available, so the wrappers below assert before getting here */
int sf_conv3d_direct_available(void) { return 0; }
static void direct_conv(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                        int H, int W, int Cin, int Cout, int flip)
{
  (void)y, (void)x_lo, (void)x, (void)x_hi, (void)w, (void)nd, (void)H, (void)W, (void)Cin, (void)Cout, (void)flip;
  SF_ABORT("direct conv3d kernels: no AVX-512 build on this platform");
}
#endif

void sf_conv3d_forward_direct(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                              int H, int W, int Cin, int Cout)
{
  SF_ASSERT(Cout % 16 == 0 && sf_conv3d_direct_available());
  direct_conv(y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout, 0);
}

void sf_conv3d_backward_data_direct(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                    const float *w, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(Cin % 16 == 0 && sf_conv3d_direct_available());
  direct_conv(dx, dy_lo, dy, dy_hi, w, nd, H, W, Cin, Cout, 1);
}

#ifndef SF_CONV_DIRECT_MIN_W
/* Rows shorter than this leave too few voxels per register block to amortise the weight stream:
 * at 4^3 x 512 channels the direct kernel ran at 42 GFLOP/s against im2col + sgemm's 73; from 8^3
 * up it ran at 102-122 against 78-92 (1 thread, this EPYC). */
#define SF_CONV_DIRECT_MIN_W 8
#endif
#ifndef SF_CONV_DIRECT_DW_MIN_W
/* The weight gradient is read and written once per group of rows of one plane, so small planes make
 * it stream the whole gradient for few voxels: 8^3 x 256 ran at 77 GFLOP/s against 90; from 16^2
 * planes up at 106-116 against 81-93. */
#define SF_CONV_DIRECT_DW_MIN_W 16
#endif

int sf_conv3d_direct_wins(int W, int nout)
{
  return nout % 16 == 0 && W >= SF_CONV_DIRECT_MIN_W && sf_conv3d_direct_available();
}

int sf_conv3d_direct_dw_wins(int W, int Cout)
{
  return Cout % 16 == 0 && W >= SF_CONV_DIRECT_DW_MIN_W && sf_conv3d_direct_available();
}
