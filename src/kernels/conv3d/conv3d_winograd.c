/* 3x3x3 convolution (padding 1, stride 1, no bias) by Winograd F(2x2x2, 3x3x3), forward and dX (a
 * forward conv of dy with the taps mirrored and the channels transposed), for the wide layers where
 * it beats the direct kernels (the rule is in conv3d.c, the family's entry).
 * The stages (transforms and the 64 GEMMs, per CPU kernel set) are in conv3d_winograd_tiles.h;
 * this file transforms the weights once per call and walks the slab's 2x2x2 output tiles in
 * blocks whose transformed inputs and products stay in L2. NDHWC activations, (27,Cin,Cout)
 * weights, as the other conv3d kernels (scaffold/ops.h).
 * Accuracy: F(2,3)'s transforms have coefficients 0, +-1/2, +-1, so the result differs from the
 * direct sum only by rounding, a few times fp32's epsilon relative to the largest term
 * (tests/kernels_conv/test_conv_winograd.c bounds it).
 * The bf16 forward, dX and dW at the end run the same stages with the GEMMs on VDPBF16PS (torch_amp: 1
 * without AMX; conv3d_winograd_bf16_tiles.h and conv3d_winograd_bf16_dw_tiles.h, their accuracy there). */
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "conv3d_variants.h"
#include "conv3d_winograd_internal.h"

/* Workspace slots: the direct kernels' slots (idle while this runs) */
#define SF_WINO_U_SLOT 0
#define SF_WINO_V_SLOT 1 /* also the mirrored weights of dX, consumed before V is written */
#define SF_WINO_M_SLOT 2
#define SF_WINO_ZERO_SLOT 3
#ifndef SF_WINO_BLOCK_BYTES
#define SF_WINO_BLOCK_BYTES ((size_t)1 << 20) /* V + M of one block of tiles ... */
#endif
#ifndef SF_WINO_MIN_TB
#define SF_WINO_MIN_TB 32 /* ... but at least this many tiles, each U point serves */
#endif
#define SF_WINO_PAD 16 /* floats past tb*K, tb*N between points (conv3d_winograd_internal.h) */
#ifndef SF_WINO_MAX_KN
#define SF_WINO_MAX_KN (128 * 128) /* U is 64*K*N floats: 4 MiB at 128 x 128 */
#endif

static const sf_wino_kernels *wino_kernels(void)
{
  switch (sf_cpu_isa_active()) {
#if defined(__x86_64__) && defined(__GNUC__)
  case SF_ISA_AVX512: return &sf_wino_kernels_avx512;
  case SF_ISA_AVX2: return &sf_wino_kernels_avx2;
#endif
  case SF_ISA_C: return &sf_wino_kernels_c;
  default: SF_ABORT("Winograd conv3d kernels called with the kernel set off (SF_CONV_DIRECT=0)");
  }
}

static size_t wino_tiles(int nd, int H, int W) { return (size_t)(nd / 2) * (H / 2) * (W / 2); }

int sf_conv3d_winograd_fits(int nd, int H, int W, int K, int N)
{
  if (sf_cpu_isa_active() == SF_ISA_NONE) return 0;
  int vw = wino_kernels()->vw;
  return nd > 0 && nd % 2 == 0 && H % 2 == 0 && W % 2 == 0 && H > 0 && W > 0 && K % vw == 0 && N % vw == 0 &&
         (size_t)K * N <= SF_WINO_MAX_KN;
}

/* U (conv3d_winograd_internal.h) of w: (27, K, N), in this thread's workspace */
static const float *wino_transform_weights(const float *w, int K, int N)
{
  float *U = sf_workspace_floats(SF_WINO_U_SLOT, (size_t)64 * K * N);
  wino_kernels()->weights(U, w, K, N);
  return U;
}

/* j: the input slab x: (nd,H,W,K) (halo planes lo, hi), N output channels, the tile block size and
 * the V (bf16: Vb), M and zero-row scratch */
static void wino_job(sf_wino_job *j, const float *lo, const float *x, const float *hi, int nd, int H, int W, int K,
                     int N, int bf16)
{
  size_t vbytes = bf16 ? sizeof(uint16_t) : sizeof(float);
  size_t tb = SF_WINO_BLOCK_BYTES / ((size_t)64 * (vbytes * K + sizeof(float) * N));
  tb = sf_max_sz(1, sf_min_sz(sf_max_sz(tb, SF_WINO_MIN_TB), wino_tiles(nd, H, W)));
  *j = (sf_wino_job){.lo = lo, .x = x, .hi = hi, .nd = nd, .H = H, .W = W, .K = K, .N = N, .tb = (int)tb,
                     .vs = tb * K + SF_WINO_PAD * sizeof(float) / vbytes, .ms = tb * N + SF_WINO_PAD};
  if (bf16)
    j->Vb = (uint16_t *)sf_workspace_floats(SF_WINO_V_SLOT, (64 * j->vs + 1) / 2);
  else
    j->V = sf_workspace_floats(SF_WINO_V_SLOT, 64 * j->vs);
  j->M = sf_workspace_floats(SF_WINO_M_SLOT, 64 * j->ms);
  float *zero = sf_workspace_floats(SF_WINO_ZERO_SLOT, (size_t)W * K);
  memset(zero, 0, sizeof(float) * W * K);
  j->zero = zero;
}

/* y: (nd,H,W,N) = the conv of x: (nd,H,W,K) (halo planes lo, hi) with the weights U transforms */
static void wino_conv(float *y, const float *lo, const float *x, const float *hi, const float *U, int nd, int H,
                      int W, int K, int N)
{
  sf_wino_job j;
  wino_job(&j, lo, x, hi, nd, H, W, K, N, 0);
  j.y = y;
  j.U = U;
  const sf_wino_kernels *ks = wino_kernels();
  size_t tiles = wino_tiles(nd, H, W);
  for (size_t t0 = 0; t0 < tiles; t0 += j.tb) ks->block(&j, t0, (int)sf_min_sz(j.tb, tiles - t0));
}

void sf_conv3d_forward_winograd(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w,
                                int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_conv3d_winograd_fits(nd, H, W, Cin, Cout));
  wino_conv(y, x_lo, x, x_hi, wino_transform_weights(w, Cin, Cout), nd, H, W, Cin, Cout);
}

void sf_conv3d_backward_data_winograd(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                      const float *w, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_conv3d_winograd_fits(nd, H, W, Cout, Cin));
  float *wt = sf_workspace_floats(SF_WINO_V_SLOT, (size_t)27 * Cin * Cout); /* consumed before V is written */
  sf_conv3d_mirror_weights(wt, w, Cin, Cout);
  wino_conv(dx, dy_lo, dy, dy_hi, wino_transform_weights(wt, Cout, Cin), nd, H, W, Cout, Cin);
}

/* dw: (27, Cin, Cout) += the weight gradient of the slab: Wt (64, Cin, Cout) sums the tiles' products
 * block by block, then G^T takes it back to the 27 taps */
void sf_conv3d_backward_weights_winograd(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                         const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_conv3d_winograd_fits(nd, H, W, Cin, Cout));
  const sf_wino_kernels *ks = wino_kernels();
  sf_wino_job j;
  wino_job(&j, x_lo, x, x_hi, nd, H, W, Cin, Cout, 0);
  j.dy = dy;
  j.Wt = sf_workspace_floats(SF_WINO_U_SLOT, (size_t)64 * Cin * Cout);
  memset(j.Wt, 0, sizeof(float) * 64 * Cin * Cout);
  size_t tiles = wino_tiles(nd, H, W);
  for (size_t t0 = 0; t0 < tiles; t0 += j.tb) ks->dw_block(&j, t0, (int)sf_min_sz(j.tb, tiles - t0));
  ks->dw_finish(dw, j.Wt, Cin, Cout, 0, 27);
}

/* ---- the GEMMs in bf16 (VDPBF16PS; conv3d_winograd_bf16_tiles.h) ---- */
#ifndef SF_WINO_BF16_MAX_KN
#define SF_WINO_BF16_MAX_KN (256 * 256) /* Ub is 64*K*N bf16: 8 MiB at 256 x 256 (staged as 16 MiB of fp32) */
#endif

int sf_conv3d_winograd_bf16_fits(int nd, int H, int W, int K, int N)
{
#if defined(__x86_64__) && defined(__GNUC__)
  return sf_cpu_isa_active() == SF_ISA_AVX512 && sf_cpu_bf16_supported() && nd > 0 && nd % 2 == 0 && H > 0 &&
         W > 0 && H % 2 == 0 && W % 2 == 0 && K % 16 == 0 && N % 16 == 0 && (size_t)K * N <= SF_WINO_BF16_MAX_KN;
#else
  (void)nd, (void)H, (void)W, (void)K, (void)N;
  return 0;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
/* y: (nd,H,W,N) = the conv of x: (nd,H,W,K) (halo planes lo, hi) with w: (27, K, N): the AVX-512 set's
 * fp32 weight transform (staged in the M slot, consumed before M is written), rounded to Ub */
static void wino_conv_bf16(float *y, const float *lo, const float *x, const float *hi, const float *w, int nd, int H,
                           int W, int K, int N)
{
  const sf_wino_kernels *ks = &sf_wino_kernels_avx512;
  float *U = sf_workspace_floats(SF_WINO_M_SLOT, (size_t)64 * K * N);
  ks->weights(U, w, K, N);
  uint16_t *Ub = (uint16_t *)sf_workspace_floats(SF_WINO_U_SLOT, (size_t)32 * K * N);
  ks->bf16_weights(Ub, U, K, N);
  sf_wino_job j;
  wino_job(&j, lo, x, hi, nd, H, W, K, N, 1);
  j.y = y;
  j.Ub = Ub;
  size_t tiles = wino_tiles(nd, H, W);
  for (size_t t0 = 0; t0 < tiles; t0 += j.tb) ks->bf16_block(&j, t0, (int)sf_min_sz(j.tb, tiles - t0));
}
#endif

void sf_conv3d_forward_winograd_bf16(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w,
                                     int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_conv3d_winograd_bf16_fits(nd, H, W, Cin, Cout));
#if defined(__x86_64__) && defined(__GNUC__)
  wino_conv_bf16(y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout);
#else
  (void)y, (void)x_lo, (void)x, (void)x_hi, (void)w;
#endif
}

void sf_conv3d_backward_data_winograd_bf16(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                           const float *w, int nd, int H, int W, int Cin, int Cout)
{
  SF_ASSERT(sf_conv3d_winograd_bf16_fits(nd, H, W, Cout, Cin));
#if defined(__x86_64__) && defined(__GNUC__)
  float *wt = sf_workspace_floats(SF_WINO_V_SLOT, (size_t)27 * Cin * Cout); /* consumed before V is written */
  sf_conv3d_mirror_weights(wt, w, Cin, Cout);
  wino_conv_bf16(dx, dy_lo, dy, dy_hi, wt, nd, H, W, Cout, Cin);
#else
  (void)dx, (void)dy_lo, (void)dy, (void)dy_hi, (void)w;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The points (bit xi) that G^T reads for the taps [t0, t1): per axis, tap 0 from points 0..2, tap 1 from 1..2,
 * tap 2 from 1..3 (wino_gt) */
static uint64_t wino_dw_points(int t0, int t1)
{
  static const unsigned axis[3] = {0x7, 0x6, 0xe};
  uint64_t pts = 0;
  for (int t = t0; t < t1; t++)
    for (int xi = 0; xi < 64; xi++)
      if (axis[t / 9] >> (xi / 16) & axis[t / 3 % 3] >> (xi / 4 % 4) & axis[t % 3] >> (xi % 4) & 1)
        pts |= (uint64_t)1 << xi;
  return pts;
}

#ifndef SF_WINO_BF16_DW_BLOCK_BYTES
#define SF_WINO_BF16_DW_BLOCK_BYTES SF_WINO_BLOCK_BYTES /* Vb + Mb of one block of tiles */
#endif

/* j for the bf16 dW of x: (nd,H,W,K) (halo planes lo, hi) and dy: (nd,H,W,N), taps [t0, t1): an even block of
 * tiles whose Vb and Mb (tile pairs, conv3d_winograd_internal.h) take SF_WINO_BF16_DW_BLOCK_BYTES; Wt zero at
 * the points the taps skip (the first block stores the others) */
static void wino_dw_bf16_job(sf_wino_job *j, const float *lo, const float *x, const float *hi, const float *dy,
                             int nd, int H, int W, int K, int N, int t0, int t1)
{
  size_t tb = SF_WINO_BF16_DW_BLOCK_BYTES / ((size_t)64 * sizeof(uint16_t) * (K + N));
  tb = sf_max_sz(2, sf_min_sz(sf_max_sz(tb, SF_WINO_MIN_TB), wino_tiles(nd, H, W) + 1)) & ~(size_t)1;
  size_t pad = SF_WINO_PAD * sizeof(float) / sizeof(uint16_t);
  *j = (sf_wino_job){.lo = lo, .x = x, .hi = hi, .dy = dy, .nd = nd, .H = H, .W = W, .K = K, .N = N, .tb = (int)tb,
                     .vs = tb * K + pad, .ms = tb * N + pad};
  j->Vb = (uint16_t *)sf_workspace_floats(SF_WINO_V_SLOT, (64 * j->vs + 1) / 2);
  j->Mb = (uint16_t *)sf_workspace_floats(SF_WINO_M_SLOT, (64 * j->ms + 1) / 2);
  float *zero = sf_workspace_floats(SF_WINO_ZERO_SLOT, (size_t)W * K);
  memset(zero, 0, sizeof(float) * W * K);
  j->zero = zero;
  j->Wt = sf_workspace_floats(SF_WINO_U_SLOT, (size_t)64 * K * N);
  j->pts = wino_dw_points(t0, t1);
  for (int xi = 0; xi < 64; xi++)
    if (!(j->pts >> xi & 1)) memset(j->Wt + (size_t)xi * K * N, 0, sizeof(float) * K * N);
}
#endif

/* dw: (t1 - t0, Cin, Cout) += the rows of taps [t0, t1) of the weight gradient of the slab, the GEMMs in bf16:
 * Wt (64, Cin, Cout) sums the tiles' products at the points those taps read, then G^T takes it to the taps */
void sf_conv3d_backward_weights_winograd_bf16(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                              const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                              int Cout)
{
  SF_ASSERT(sf_conv3d_winograd_bf16_fits(nd, H, W, Cin, Cout) && 0 <= t0 && t0 <= t1 && t1 <= 27);
#if defined(__x86_64__) && defined(__GNUC__)
  if (t0 == t1) return;
  const sf_wino_kernels *ks = &sf_wino_kernels_avx512;
  sf_wino_job j;
  wino_dw_bf16_job(&j, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout, t0, t1);
  size_t tiles = wino_tiles(nd, H, W);
  for (size_t s = 0; s < tiles; s += j.tb) {
    j.wt_first = s == 0;
    ks->bf16_dw_block(&j, s, (int)sf_min_sz(j.tb, tiles - s));
  }
  ks->dw_finish(dw, j.Wt, Cin, Cout, t0, t1);
#else
  (void)dw, (void)x_lo, (void)x, (void)x_hi, (void)dy;
#endif
}
