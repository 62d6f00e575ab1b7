/* The im2col variant of the 3x3x3 convolution (padding 1, stride 1, no bias): implicit GEMM with OpenBLAS,
 * NDHWC, any shape (the entry, conv3d.c, takes it where neither Winograd nor the direct kernels win). col() is
 * im2col: row v holds the 27 neighbours of voxel v, ordered (kd,kh,kw,c) like the weights.
 *   forward: y[v][Cout] = col(x)[v][27*Cin] . w[27*Cin][Cout]
 *   dX:      dx[v][Cin] = col(dy)[v][27*Cout] . w'[27*Cout][Cin], w'[k][co][ci] = w[26-k][ci][co]: a
 *            forward conv of dy (gathering from its halo planes like the forward). w' is a copy
 *            (slot 1), or for big weights one GEMM per tap on w[26-k]^T; for few input and many
 *            output channels we scatter instead: dcol = dy . w^T, col2im-added into dx.
 *   dW:      dw[27*Cin][Cout] += col(x)^T . dy (for tiny Cout formed transposed in slot 1), or the
 *            rows of a range of taps (two workers sharing one layer's gradient).
 * Voxels go in chunks so the im2col buffer (slot 0) stays under SF_CONV_COL_BYTES whatever the
 * volume. Thresholds and sizes were chosen with scripts/bench-kernels (1 thread, 2-core EPYC). */
#include <cblas.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#include "conv3d_variants.h"

#ifndef SF_CONV_COL_BYTES
#define SF_CONV_COL_BYTES ((size_t)16 << 20) /* im2col chunk budget */
#endif
#ifndef SF_CONV_MAX_ROWS
/* Voxels per im2col chunk. 192 rows of 27*64 floats (1.3 MiB) stay near the 1 MiB L2 of this
 * EPYC, so the GEMM reads its packed panel from cache: in the training step (2 workers,
 * alternating builds) 5 % faster than 512 at ps 5 base 64 (0.86-0.92 vs 0.92-0.95 s), 2.6 % at
 * ps 6 base 64, and better at base 8/16; 128 and 256 were in between. */
#define SF_CONV_MAX_ROWS 192
#endif
#ifndef SF_CONV_DX_SCATTER_CIN
#define SF_CONV_DX_SCATTER_CIN 16 /* scatter dX when Cin < this and Cout >= SF_CONV_DX_SCATTER_COUT */
#endif
#ifndef SF_CONV_DX_SCATTER_COUT
#define SF_CONV_DX_SCATTER_COUT 32
#endif
#ifndef SF_CONV_DX_PERTAP_COUT
#define SF_CONV_DX_PERTAP_COUT 256 /* dX with one GEMM per tap (no weight copy) when Cout >= this */
#endif

static int chunk_rows(size_t row_floats, size_t nvox)
{
  size_t r = SF_CONV_COL_BYTES / (row_floats * sizeof(float));
  r = sf_max_sz(8, sf_min_sz(r, SF_CONV_MAX_ROWS));
  return (int)sf_min_sz(r, nvox);
}

static inline void copy_floats(float *restrict dst, const float *restrict src, size_t n)
{
  for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

/* col: (v1-v0, 27*C) written with the 3x3x3 neighbourhoods of voxels [v0, v1) of the slab
 * x: (nd,H,W,C) with halo planes lo, hi: (H,W,C) (NULL = zero padding). Works row by row. */
static void im2col(float *col, const float *lo, const float *x, const float *hi, size_t v0, size_t v1, int nd,
                   int H, int W, int C)
{
  size_t plane = (size_t)H * W * C, seg = (size_t)3 * C, rowlen = (size_t)27 * C;
  for (size_t v = v0; v < v1;) {
    int d = (int)(v / ((size_t)H * W)), h = (int)(v / W % H), wa = (int)(v % W);
    int wb = (int)sf_min_sz((size_t)W, wa + (v1 - v)); /* this chunk covers w in [wa, wb) of row (d,h) */
    float *base = col + (v - v0) * rowlen;
    for (int kd = 0; kd < 3; kd++) {
      int dd = d + kd - 1;
      const float *p = dd < 0 ? lo : dd >= nd ? hi : x + (size_t)dd * plane;
      for (int kh = 0; kh < 3; kh++) {
        int hh = h + kh - 1;
        float *dst = base + (size_t)(kd * 3 + kh) * seg;
        const float *row = (!p || hh < 0 || hh >= H) ? NULL : p + (size_t)hh * W * C;
        for (int w = wa; w < wb; w++, dst += rowlen) {
          if (!row) {
            memset(dst, 0, seg * sizeof(float));
          } else if (w > 0 && w < W - 1) {
            copy_floats(dst, row + (size_t)(w - 1) * C, seg);
          } else {
            for (int kw = 0; kw < 3; kw++) {
              int ww = w + kw - 1;
              if (ww < 0 || ww >= W)
                memset(dst + (size_t)kw * C, 0, (size_t)C * sizeof(float));
              else
                copy_floats(dst + (size_t)kw * C, row + (size_t)ww * C, C);
            }
          }
        }
      }
    }
    v += wb - wa;
  }
}

/* y: (nd,H,W,Cout) written = conv of x (with halos), x: (nd,H,W,Cin), by either
 *   wflip == NULL: wmat: (27*Cin, Cout), one GEMM per chunk; or
 *   wmat == NULL:  wflip: (27, Cout, Cin), tap k using wflip[26-k] transposed, 27 GEMMs per chunk
 *                  (the dX weights without a rearranged copy; each GEMM still has K = Cin). */
static void conv_gemm(float *y, const float *lo, const float *x, const float *hi, const float *wmat,
                      const float *wflip, int nd, int H, int W, int Cin, int Cout)
{
  size_t nvox = (size_t)nd * H * W, K = (size_t)27 * Cin;
  if (nvox == 0) return;
  int rows = chunk_rows(K, nvox);
  float *col = sf_workspace_floats(0, (size_t)rows * K);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    int m = (int)(sf_min_sz(nvox, v0 + rows) - v0);
    im2col(col, lo, x, hi, v0, v0 + m, nd, H, W, Cin);
    if (wmat)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, Cout, (int)K, 1.0f, col, (int)K, wmat, Cout, 0.0f,
                  y + v0 * Cout, Cout);
    else
      for (int k = 0; k < 27; k++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, Cout, Cin, 1.0f, col + (size_t)k * Cin, (int)K,
                    wflip + (size_t)(26 - k) * Cout * Cin, Cin, k ? 1.0f : 0.0f, y + v0 * Cout, Cout);
  }
}

void sf_conv3d_forward_im2col(float *y, const float *x_lo, const float *x, const float *x_hi,
                              const float *w, int nd, int H, int W, int Cin, int Cout)
{
  conv_gemm(y, x_lo, x, x_hi, w, NULL, nd, H, W, Cin, Cout);
}

/* dx: (nd,H,W,Cin) += the contributions of output-gradient planes [e0, e0+ne) (slab-relative, may be
 * -1 or nd for a halo plane) held in g: (ne,H,W,Cout). Contributions outside the slab are dropped. */
static void dx_scatter(float *dx, const float *g, int e0, int ne, const float *w, int nd, int H, int W, int Cin,
                       int Cout)
{
  size_t nv = (size_t)ne * H * W, N = (size_t)27 * Cin;
  int rows = chunk_rows(N, nv);
  float *dcol = sf_workspace_floats(0, (size_t)rows * N);
  for (size_t v0 = 0; v0 < nv; v0 += rows) {
    size_t v1 = sf_min_sz(nv, v0 + rows);
    /* dcol[v][k*Cin+ci] = sum_co g[v][co] * w[k*Cin+ci][co] */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(v1 - v0), (int)N, Cout, 1.0f, g + v0 * Cout, Cout,
                w, Cout, 0.0f, dcol, (int)N);
    for (size_t v = v0; v < v1; v++) { /* col2im: dx[v + k - 1] += dcol[v][k] */
      int e = e0 + (int)(v / ((size_t)H * W)), h = (int)(v / W % H), x0 = (int)(v % W);
      const float *src = dcol + (v - v0) * N;
      for (int k = 0; k < 27; k++, src += Cin) {
        int dd = e + k / 9 - 1, hh = h + k / 3 % 3 - 1, ww = x0 + k % 3 - 1;
        if (dd < 0 || dd >= nd || hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
        float *o = dx + (((size_t)dd * H + hh) * W + ww) * Cin;
        for (int ci = 0; ci < Cin; ci++) o[ci] += src[ci];
      }
    }
  }
}

/* spatially flipped (k -> 26-k), channels transposed, in 32x32 blocks so both sides stream through
 * cache lines */
void sf_conv3d_mirror_weights(float *wf, const float *w, int Cin, int Cout)
{
  for (int k = 0; k < 27; k++) {
    const float *src = w + (size_t)(26 - k) * Cin * Cout;
    float *dst = wf + (size_t)k * Cout * Cin;
    for (int c0 = 0; c0 < Cin; c0 += 32)
      for (int o0 = 0; o0 < Cout; o0 += 32)
        for (int co = o0; co < o0 + 32 && co < Cout; co++)
          for (int ci = c0; ci < c0 + 32 && ci < Cin; ci++) dst[(size_t)co * Cin + ci] = src[(size_t)ci * Cout + co];
  }
}

/* dx: (nd,H,W,Cin) written from dy: (nd,H,W,Cout) and its halo planes dy_lo, dy_hi. */
void sf_conv3d_backward_data_im2col(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                    const float *w, int nd, int H, int W, int Cin, int Cout)
{
  if (Cin < SF_CONV_DX_SCATTER_CIN && Cout >= SF_CONV_DX_SCATTER_COUT) {
    memset(dx, 0, sizeof(float) * nd * H * W * Cin);
    if (dy_lo) dx_scatter(dx, dy_lo, -1, 1, w, nd, H, W, Cin, Cout);
    dx_scatter(dx, dy, 0, nd, w, nd, H, W, Cin, Cout);
    if (dy_hi) dx_scatter(dx, dy_hi, nd, 1, w, nd, H, W, Cin, Cout);
    return;
  }
  if (Cout >= SF_CONV_DX_PERTAP_COUT) { /* big weights: no rearranged copy, one GEMM per tap */
    conv_gemm(dx, dy_lo, dy, dy_hi, NULL, w, nd, H, W, Cout, Cin);
    return;
  }
  float *wf = sf_workspace_floats(1, (size_t)27 * Cin * Cout);
  sf_conv3d_mirror_weights(wf, w, Cin, Cout);
  conv_gemm(dx, dy_lo, dy, dy_hi, wf, NULL, nd, H, W, Cout, Cin);
}

/* col: (v1-v0, (t1-t0)*C), the taps [t0, t1) (t = kd*9 + kh*3 + kw) of voxels [v0, v1)' im2col
 * rows: the columns t0*C .. t1*C of im2col() above, built directly. */
static void im2col_taps(float *col, const float *lo, const float *x, const float *hi, size_t v0, size_t v1, int nd,
                        int H, int W, int C, int t0, int t1)
{
  size_t plane = (size_t)H * W * C, rowlen = (size_t)(t1 - t0) * C;
  for (size_t v = v0; v < v1; v++) {
    int d = (int)(v / ((size_t)H * W)), h = (int)(v / W % H), w = (int)(v % W);
    float *dst = col + (v - v0) * rowlen;
    for (int t = t0; t < t1; t++, dst += C) {
      int dd = d + t / 9 - 1, hh = h + t / 3 % 3 - 1, ww = w + t % 3 - 1;
      const float *p = dd < 0 ? lo : dd >= nd ? hi : x + (size_t)dd * plane;
      if (!p || hh < 0 || hh >= H || ww < 0 || ww >= W)
        memset(dst, 0, (size_t)C * sizeof(float));
      else
        copy_floats(dst, p + ((size_t)hh * W + ww) * C, (size_t)C);
    }
  }
}

/* dw: the rows of taps [t0, t1) of (27*Cin, Cout), i.e. ((t1-t0)*Cin, Cout) at dw,
 * += col(x)[:, t0*Cin : t1*Cin]^T . dy, dy: (nd,H,W,Cout). Two tasks on disjoint tap ranges let
 * two workers share one layer's weight gradient; each builds only its taps' im2col columns.
 * Needs Cout >= SF_CONV_DW_T_COUT (the untransposed GEMM). */
void sf_conv3d_backward_weights_taps_im2col(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                            const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                            int Cout)
{
  size_t nvox = (size_t)nd * H * W, K = (size_t)(t1 - t0) * Cin;
  SF_ASSERT(0 <= t0 && t0 <= t1 && t1 <= 27 && Cout >= SF_CONV_DW_T_COUT);
  if (nvox == 0 || K == 0) return;
  int rows = chunk_rows((size_t)27 * Cin, nvox); /* the chunk of a whole-matrix call: same GEMM shape */
  float *col = sf_workspace_floats(0, (size_t)rows * K);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    size_t v1 = sf_min_sz(nvox, v0 + rows);
    im2col_taps(col, x_lo, x, x_hi, v0, v1, nd, H, W, Cin, t0, t1);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, Cout, (int)(v1 - v0), 1.0f, col, (int)K,
                dy + v0 * Cout, Cout, 1.0f, dw, Cout);
  }
}

/* dw: (27*Cin, Cout) += col(x)^T . dy, dy: (nd,H,W,Cout) */
void sf_conv3d_backward_weights_im2col(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                       const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  size_t nvox = (size_t)nd * H * W, K = (size_t)27 * Cin;
  if (nvox == 0) return;
  int rows = chunk_rows(K, nvox), transposed = Cout < SF_CONV_DW_T_COUT;
  float *col = sf_workspace_floats(0, (size_t)rows * K);
  float *dwt = transposed ? sf_workspace_floats(1, (size_t)Cout * K) : NULL; /* (Cout, 27*Cin) */
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    size_t v1 = sf_min_sz(nvox, v0 + rows);
    im2col(col, x_lo, x, x_hi, v0, v1, nd, H, W, Cin);
    if (transposed)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Cout, (int)K, (int)(v1 - v0), 1.0f, dy + v0 * Cout,
                  Cout, col, (int)K, v0 ? 1.0f : 0.0f, dwt, (int)K);
    else
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, Cout, (int)(v1 - v0), 1.0f, col, (int)K,
                  dy + v0 * Cout, Cout, 1.0f, dw, Cout);
  }
  if (transposed)
    for (size_t k = 0; k < K; k++)
      for (int co = 0; co < Cout; co++) dw[k * Cout + co] += dwt[(size_t)co * K + k];
}
