/* The slab-blocked driver of the direct 3x3x3 conv (forward and dX) for short rows with many
 * channels, an implicit GEMM blocked as BLAS blocks its products. There one output channel
 * block's packed weights (27*K*16 floats with AVX2: 884 KiB at 512 input channels) outgrow L2,
 * and the ring driver (conv3d_direct.c), which runs all 27 taps per register block of a few
 * voxels, streams them from L3 once per block: at 8^3 x 256 channels it lost to im2col + sgemm.
 * Here one tap and a chunk of SF_DIRECT_KC input channels at a time: the chunk's weights for one
 * block of 16 output channels (16 KiB at kc 256) stay in L1 while every register block of the slab
 * adds that tap's terms onto its output (the tap blocks of conv3d_direct_tiles.h); the output
 * slab (a few hundred voxels) stays in L2 across the taps. A tap's weights are packed for every
 * block in one sequential pass over w. The slab is copied once, W-padded as in the ring, with its
 * two halo planes; rows outside the volume are skipped.
 * NDHWC activations, (27,Cin,Cout) weights, as every conv3d kernel (scaffold/ops.h). */
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/workspace.h"

#include "conv3d_direct_internal.h"

#ifndef SF_DIRECT_KC
#define SF_DIRECT_KC 256 /* input channels per chunk: 16 KiB of weights per 16-channel block */
#endif
#ifndef SF_DIRECT_BLOCKED_MAX_W
#define SF_DIRECT_BLOCKED_MAX_W 8 /* rows up to this many voxels */
#endif
#ifndef SF_DIRECT_BLOCKED_L2
#define SF_DIRECT_BLOCKED_L2 (256u << 10) /* a block's packed weights above this: blocked */
#endif

int sf_direct_blocked_pays(const sf_direct_kernels *ks, int H, int W, int K, int N)
{
  (void)H;
  size_t block_weights = (size_t)27 * K * 2 * ks->vw * sizeof(float);
  return ks->vw == 8 && N % 8 == 0 && W <= SF_DIRECT_BLOCKED_MAX_W && block_weights > SF_DIRECT_BLOCKED_L2;
}

/* pad: (nd+2) planes of (H, W+2, K): padded plane e+1 = input plane e for e = -1..nd (the halos;
 * a NULL halo is left unfilled and never read) */
static void pad_slab(float *pad, const float *x_lo, const float *x, const float *x_hi, int nd, int H, int W, int K)
{
  size_t plane = (size_t)H * W * K, pplane = (size_t)H * (W + 2) * K;
  for (int e = -1; e <= nd; e++) {
    const float *src = e < 0 ? x_lo : e >= nd ? x_hi : x + (size_t)e * plane;
    if (src) sf_direct_pad_plane(pad + (size_t)(e + 1) * pplane, src, H, W, K);
  }
}

/* wt: tap t's weights for every output channel block of 16 (a last block of 8 when N is an odd
 * multiple of 8): block n0 (channels n0 .. n0+nb) at wt + n0*K holds [k][j], k < K, j < nb, the
 * values sf_direct_pack_weights gives (forward: w[t][k][n0+j]; dX: w[26-t][n0+j][k]). */
static void pack_tap(float *wt, const float *w, int Cin, int Cout, int flip, int t)
{
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout;
  const float *src = w + (size_t)(flip ? 26 - t : t) * Cin * Cout;
  if (!flip) { /* forward: row k of w[t] holds input channel k's Cout floats, for every block */
    for (int k = 0; k < K; k++) {
      const float *row = src + (size_t)k * Cout;
      for (int n0 = 0; n0 < N; n0 += 16) {
        if (N - n0 >= 16) /* a constant size: two vector moves, not a rep movs */
          memcpy(wt + (size_t)n0 * K + (size_t)k * 16, row + n0, sizeof(float) * 16);
        else
          memcpy(wt + (size_t)n0 * K + (size_t)k * 8, row + n0, sizeof(float) * 8);
      }
    }
    return;
  }
  for (int n0 = 0; n0 < N; n0 += 16) { /* dX: rows n0 .. n0+nb of w[26-t], read side by side */
    int nb = N - n0 < 16 ? N - n0 : 16;
    float *dst = wt + (size_t)n0 * K;
    for (int k = 0; k < K; k++, dst += nb)
      for (int j = 0; j < nb; j++) dst[j] = src[(size_t)(n0 + j) * Cout + k];
  }
}

/* The output voxels whose tap-t input lies in the volume (or a halo): yoff[i] their offset in y,
 * xoff[i] their input's in pad. Returns how many. */
static int tap_voxels(size_t *yoff, size_t *xoff, int t, int nd, int H, int W, int K, int N, int have_lo, int have_hi)
{
  int kd = t / 9, kh = t / 3 % 3, kw = t % 3, m = 0;
  size_t prow = (size_t)(W + 2) * K, pplane = (size_t)H * prow;
  for (int d = 0; d < nd; d++) {
    int e = d + kd - 1;
    if ((e < 0 && !have_lo) || (e >= nd && !have_hi)) continue;
    for (int h = 0; h < H; h++) {
      int hh = h + kh - 1;
      if (hh < 0 || hh >= H) continue;
      for (int w = 0; w < W; w++, m++) {
        yoff[m] = (((size_t)d * H + h) * W + w) * N;
        xoff[m] = (size_t)(e + 1) * pplane + (size_t)hh * prow + (size_t)(w + kw) * K;
      }
    }
  }
  return m;
}

void sf_direct_conv_blocked(const sf_direct_kernels *ks, float *y, const float *x_lo, const float *x,
                            const float *x_hi, const float *w, int nd, int H, int W, int Cin, int Cout, int flip)
{
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout;
  SF_ASSERT(ks->vw == 8 && N % 8 == 0 && W >= 1);
  size_t voxels = (size_t)nd * H * W;
  float *pad = sf_workspace_floats(SF_DIRECT_RING_SLOT, (size_t)(nd + 2) * H * (W + 2) * K);
  float *wt = sf_workspace_floats(SF_DIRECT_PACK_SLOT, (size_t)K * N);
  size_t *yoff = (size_t *)sf_workspace_floats(SF_DIRECT_TAIL_SLOT, 2 * voxels * sizeof(size_t) / sizeof(float));
  size_t *xoff = yoff + voxels;
  pad_slab(pad, x_lo, x, x_hi, nd, H, W, K);
  memset(y, 0, sizeof(float) * voxels * N);
  for (int t = 0; t < 27; t++) {
    int m = tap_voxels(yoff, xoff, t, nd, H, W, K, N, x_lo != NULL, x_hi != NULL);
    if (m == 0) continue;
    int ntiles = (m + ks->max_r - 1) / ks->max_r, tbase = m / ntiles, tlong = m % ntiles;
    pack_tap(wt, w, Cin, Cout, flip, t);
    for (int k0 = 0; k0 < K; k0 += SF_DIRECT_KC) {
      int kc = K - k0 < SF_DIRECT_KC ? K - k0 : SF_DIRECT_KC;
      for (int n0 = 0; n0 < N; n0 += 16) {
        int nb = N - n0 < 16 ? N - n0 : 16;
        const float *wb = wt + (size_t)n0 * K + (size_t)k0 * nb;
        for (int i = 0, v0 = 0; i < ntiles; i++) {
          int r = tbase + (i < tlong);
          ks->tap[nb / 8 - 1][r - 1](y + n0, yoff + v0, pad + k0, xoff + v0, wb, kc);
          v0 += r;
        }
      }
    }
  }
}
