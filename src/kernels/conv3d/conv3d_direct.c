/* 3x3x3 convolution (padding 1, stride 1, no bias) computed directly, without im2col, with the
 * register blocks of the active CPU kernel set (AVX-512, AVX2 or portable C: scaffold/cpu_isa.h,
 * conv3d_direct_tiles.h). NDHWC activations, (27,Cin,Cout) weights, as the other conv3d kernels
 * (scaffold/ops.h).
 *
 * Register block: R consecutive output voxels of one row (R <= 12 with AVX-512, 6 with AVX2/C)
 * times NV vectors of output channels (NV = 2, or 1 for a last block of one vector) live in R*NV
 * vector accumulators for the whole 27*Cin reduction. For each (tap, input channel) the NV weight
 * vectors are loaded once and each of the R input values is broadcast once, so the loop is
 * FMA-bound, where im2col + sgemm spends time writing and re-reading the 27x larger column matrix.
 * A last channel block narrower than a vector is computed zero-padded and copied out, so any
 * channel count works (the dispatch only picks channel counts that fill the vectors).
 * Input planes are copied once into a ring of three W-padded planes (a zero voxel at each end of a
 * row), so the kw taps never test borders; rows outside the volume (h or d) are skipped whole.
 * The weight gradient's driver is in conv3d_direct_dw.c, the rule that chooses them in conv3d.c. */
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "conv3d_direct_internal.h"
#include "conv3d_variants.h"

static void direct_row(const sf_direct_kernels *ks, float *y, int N, const float *const *rows, const float *wb,
                       int W, int K, int nv, int nb, float *tail)
{
  int width = nv * ks->vw, ntiles = (W + ks->max_r - 1) / ks->max_r, tbase = W / ntiles, tlong = W % ntiles;
  float *dst = nb < width ? tail : y;
  size_t stride = nb < width ? (size_t)width : (size_t)N;
  for (int t = 0, x0 = 0; t < ntiles; t++) {
    int r = tbase + (t < tlong);
    ks->tile[nv - 1][r - 1](dst + (size_t)x0 * stride, stride, rows, x0, wb, K);
    x0 += r;
  }
  if (nb < width)
    for (int x0 = 0; x0 < W; x0++) memcpy(y + (size_t)x0 * N, tail + (size_t)x0 * width, sizeof(float) * nb);
}

/* y: (nd,H,W,N) = conv of x: (nd,H,W,K) with halo planes x_lo/x_hi (NULL = zero), where
 * (K, N) = (Cin, Cout) for the forward (flip 0) and (Cout, Cin) for dX (flip 1, x = dy, y = dx).
 * One block of two vectors of output channels at a time, so only that block's weights are packed
 * (27*K*32 floats with AVX-512: 1.7 MiB at 512 channels, where packing all would take 57 MiB). */
static void direct_conv(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                        int H, int W, int Cin, int Cout, int flip)
{
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout;
  const sf_direct_kernels *ks = sf_direct_kernels_for(N);
  if (sf_direct_blocked_pays(ks, H, W, K, N)) {
    sf_direct_conv_blocked(ks, y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout, flip);
    return;
  }
  int vw = ks->vw;
  size_t prow = (size_t)(W + 2) * K;
  float *ring = sf_workspace_floats(SF_DIRECT_RING_SLOT, 3 * H * prow);
  float *wb = sf_workspace_floats(SF_DIRECT_PACK_SLOT, (size_t)27 * K * 2 * vw);
  float *tail = N % vw ? sf_workspace_floats(SF_DIRECT_TAIL_SLOT, (size_t)W * 2 * vw) : NULL;
  for (int co = 0; co < N; co += 2 * vw) {
    int nb = N - co < 2 * vw ? N - co : 2 * vw, nv = (nb + vw - 1) / vw;
    sf_direct_pack_weights(wb, w, Cin, Cout, flip, co, nb, nv * vw);
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
        direct_row(ks, y + ((size_t)d * H + h) * W * N + co, N, rows, wb, W, K, nv, nb, tail);
      }
    }
  }
}

void sf_conv3d_forward_direct(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                              int H, int W, int Cin, int Cout)
{
  direct_conv(y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout, 0);
}

void sf_conv3d_backward_data_direct(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                    const float *w, int nd, int H, int W, int Cin, int Cout)
{
  direct_conv(dx, dy_lo, dy, dy_hi, w, nd, H, W, Cin, Cout, 1);
}
