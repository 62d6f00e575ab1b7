/* The 3x3x3 convolution (padding 1, stride 1, no bias; NDHWC, (27, Cin, Cout) weights, scaffold/ops.h) for
 * layers of a few channels, as 27 shifted vector multiply-adds per channel pair.
 *
 * The slab with its halo planes is copied, one channel at a time (SoA), into a zero-padded volume of
 * (nd+2) x (H+2) x (W+2) voxels, flattened. In that array the input voxel a tap reads lies at a constant
 * offset from the output voxel, off = kd*(H+2)*(W+2) + kh*(W+2) + kw, for every voxel of the slab, so one output
 * channel is sum over (tap, input channel) of weight x (the padded input shifted by off): contiguous runs of L
 * floats (L = the span from the first to the last output voxel in the padded layout, border voxels included
 * and dropped afterwards), no bounds tests, no im2col matrix, no BLAS call. The runs are summed in blocks of
 * SMALL_JB floats held in registers. dX is the same sum over dy with the taps mirrored and each tap's matrix
 * transposed; dW dots the shifted padded input with dy laid out the same way (zero at the border voxels).
 * At 1-4 channels a call does its few hundred multiply-adds in a few hundred nanoseconds where im2col + sgemm
 * pays ~1-2 us of fixed cost and the register-blocked kernels fill 8-16 lanes of channels with one; past
 * ~8 channels they win (the rule and its measurement: conv3d.c). Channels up to SF_CONV_SMALL_MAX_C. */
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/workspace.h"

#include "conv3d_small.h"

#define SMALL_JB 32 /* floats per block of a run: four vectors of 8 (GCC vector extensions, any target) */
typedef float v8 __attribute__((vector_size(32)));

static inline v8 load8(const float *p)
{
  v8 v;
  memcpy(&v, p, sizeof v);
  return v;
}
#define SLOT 0      /* one workspace slot: the padded input, the runs, the packed weights */

typedef struct {
  int nd, H, W;
  size_t pp, per, L, lpad; /* padded plane; per-channel stride of the padded input; run, rounded up to SMALL_JB */
} geom;

static geom geom_of(int nd, int H, int W)
{
  geom g = {nd, H, W, (size_t)(H + 2) * (W + 2), 0, 0, 0};
  g.L = (size_t)(nd - 1) * g.pp + (size_t)(H - 1) * (W + 2) + (size_t)W;
  g.lpad = (g.L + SMALL_JB - 1) / SMALL_JB * SMALL_JB;
  g.per = (size_t)(nd + 2) * g.pp + SMALL_JB; /* the last tap's run ends at (nd+2)*pp: lpad - L spare */
  return g;
}

/* off[tap]: where the input voxel of each tap lies relative to the output voxel, in the padded layout */
static void tap_offsets(const geom *g, size_t off[27])
{
  for (int tap = 0; tap < 27; tap++) off[tap] = (size_t)(tap / 9) * g->pp + (size_t)(tap / 3 % 3) * (g->W + 2) + tap % 3;
}

/* Position of voxel (d, h, w) in an output run (0 = voxel (0,0,0)) */
static size_t run_pos(const geom *g, int d, int h, int w) { return (size_t)d * g->pp + (size_t)h * (g->W + 2) + w; }

/* This thread's buffers of a call: the padded input (C channels), then `runs` floats, then `wts` floats */
static float *buffers(const geom *g, int C, size_t runs, size_t wts)
{
  return sf_workspace_floats(SLOT, g->per * C + runs + wts);
}

/* xp[k * per + padded index]: the slab with its halo planes (NULL: zeros), C channels, zero border */
static void pad_soa(float *xp, const geom *g, const float *lo, const float *mid, const float *hi, int C)
{
  memset(xp, 0, sizeof(float) * g->per * C);
  size_t plane = (size_t)g->H * g->W * C, per = g->per;
  for (int e = -1; e <= g->nd; e++) {
    const float *src = e < 0 ? lo : e == g->nd ? hi : mid + (size_t)e * plane;
    if (!src) continue;
    float *dst = xp + (size_t)(e + 1) * g->pp + (g->W + 2) + 1;
    for (int h = 0; h < g->H; h++, dst += g->W + 2, src += (size_t)g->W * C)
      if (C == 1)
        memcpy(dst, src, sizeof(float) * g->W);
      else
        for (int w = 0; w < g->W; w++)
          for (int c = 0; c < C; c++) dst[c * per + w] = src[w * C + c];
  }
}

/* a[0..3] += the K input channels' runs of 32 floats from xs (channel stride per) times their weights wk[k * N] */
static inline void madd4(v8 a[4], const float *xs, const float *wk, int K, int N, size_t per)
{
  for (int k = 0; k < K; k++, xs += per) {
    float c = wk[(size_t)k * N];
    for (int v = 0; v < 4; v++) a[v] += c * load8(xs + 8 * v);
  }
}

/* y: (nd,H,W,N) = conv of the padded input xp (K channels) with wp: (27, K, N) */
static void shifted_sums(float *y, const geom *g, const float *xp, const float *wp, float *acc, int K, int N)
{
  size_t off[27], per = g->per, lpad = g->lpad;
  tap_offsets(g, off);
  for (int n = 0; n < N; n++)
    for (size_t j0 = 0; j0 < lpad; j0 += SMALL_JB) {
      /* eight chains of multiply-adds (four vectors, even and odd taps), so that latency does not bound it */
      v8 a[4] = {0}, b[4] = {0};
      for (int tap = 0; tap < 26; tap += 2) {
        madd4(a, xp + off[tap] + j0, wp + (size_t)tap * K * N + n, K, N, per);
        madd4(b, xp + off[tap + 1] + j0, wp + (size_t)(tap + 1) * K * N + n, K, N, per);
      }
      madd4(a, xp + off[26] + j0, wp + (size_t)26 * K * N + n, K, N, per);
      for (int v = 0; v < 4; v++) {
        v8 sum = a[v] + b[v];
        memcpy(acc + (size_t)n * lpad + j0 + 8 * v, &sum, sizeof sum);
      }
    }
  for (int d = 0; d < g->nd; d++)
    for (int h = 0; h < g->H; h++)
      for (int w = 0; w < g->W; w++, y += N)
        for (int n = 0; n < N; n++) y[n] = acc[(size_t)n * g->lpad + run_pos(g, d, h, w)];
}

static void small_conv(float *y, const float *lo, const float *in, const float *hi, const float *w, int nd, int H,
                       int W, int Cin, int Cout, int flip)
{
  SF_ASSERT(Cin <= SF_CONV_SMALL_MAX_C && Cout <= SF_CONV_SMALL_MAX_C);
  int K = flip ? Cout : Cin, N = flip ? Cin : Cout;
  if ((size_t)nd * H * W == 0) return;
  geom g = geom_of(nd, H, W);
  float *xp = buffers(&g, K, g.lpad * N, flip ? (size_t)27 * K * N : 0), *acc = xp + g.per * K, *wf = acc + g.lpad * N;
  if (flip) /* wf[tap][k][n]: dX mirrors the taps and transposes each (Cin, Cout); the forward's w is that already */
    for (int tap = 0; tap < 27; tap++)
      for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++) wf[((size_t)tap * K + k) * N + n] = w[((size_t)(26 - tap) * Cin + n) * Cout + k];
  const float *wp = flip ? wf : w;
  pad_soa(xp, &g, lo, in, hi, K);
  shifted_sums(y, &g, xp, wp, acc, K, N);
}

void sf_conv3d_forward_small(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                             int H, int W, int Cin, int Cout)
{
  small_conv(y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout, 0);
}

void sf_conv3d_backward_data_small(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                   const float *w, int nd, int H, int W, int Cin, int Cout)
{
  small_conv(dx, dy_lo, dy, dy_hi, w, nd, H, W, Cin, Cout, 1);
}

/* dw[tap][ci][co] += the dot of the padded input channel ci shifted by the tap's offset with dy's channel co
 * laid out as an output run (zero at the border positions, so only the slab's voxels count) */
void sf_conv3d_backward_weights_small(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                      const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(Cin <= SF_CONV_SMALL_MAX_C && Cout <= SF_CONV_SMALL_MAX_C);
  if ((size_t)nd * H * W == 0) return;
  geom g = geom_of(nd, H, W);
  float *xp = buffers(&g, Cin, g.lpad * Cout, 0), *gp = xp + g.per * Cin;
  pad_soa(xp, &g, x_lo, x, x_hi, Cin);
  memset(gp, 0, sizeof(float) * g.lpad * Cout);
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++, dy += Cout)
        for (int co = 0; co < Cout; co++) gp[(size_t)co * g.lpad + run_pos(&g, d, h, w)] = dy[co];
  size_t off[27];
  tap_offsets(&g, off);
  for (int tap = 0; tap < 27; tap++)
    for (int ci = 0; ci < Cin; ci++) {
      const float *xs = xp + (size_t)ci * g.per + off[tap];
      for (int co = 0; co < Cout; co++) {
        const float *gs = gp + (size_t)co * g.lpad;
        v8 a[4] = {{0}};
        for (size_t j0 = 0; j0 < g.lpad; j0 += SMALL_JB)
          for (int v = 0; v < 4; v++) a[v] += load8(xs + j0 + 8 * v) * load8(gs + j0 + 8 * v);
        v8 sum = (a[0] + a[1]) + (a[2] + a[3]);
        float s = 0;
        for (int j = 0; j < 8; j++) s += sum[j];
        dw[((size_t)tap * Cin + ci) * Cout + co] += s;
      }
    }
}
