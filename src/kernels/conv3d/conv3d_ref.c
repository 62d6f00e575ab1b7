/* Naive 3x3x3 convolution (padding 1, stride 1, no bias) on a depth slab: the oracle that every
 * fast variant is tested against. Plain loops straight from the definition
 *   y[d][h][w][co] = sum_{kd,kh,kw,ci} x[d+kd-1][h+kh-1][w+kw-1][ci] * w[kd][kh][kw][ci][co]
 * with double accumulators. Planes d0-1 and d0+nd come from the halo arguments (NULL = zero
 * padding at a volume face). Speed is irrelevant here; keep it obviously correct.
 * Under AddressSanitizer the loops are not instrumented access by access; each entry point checks the
 * whole tensors of its contract (ops.h) instead (sanitize_footprint.h): the per-access checks made
 * these oracles 90 % of the sanitizer suite's golden-model tests. */
#include <stdlib.h>

#include "../common/sanitize_footprint.h"
#include "scaffold/common.h"
#include "scaffold/ops.h"

/* Plane dd (slab-relative, -1..nd) of a slab with halos, or NULL when it is zero padding. */
static const float *slab_plane(const float *lo, const float *mid, const float *hi, int dd, int nd,
                               size_t plane)
{
  if (dd < 0) return lo;
  if (dd >= nd) return hi;
  return mid + (size_t)dd * plane;
}

/* The footprint of one reference call (sanitize_footprint.h): the slab with halo planes it reads
 * (nd planes of `plane` floats, lo/hi one plane each when present), one more input of n_in floats and
 * the output of n_out floats (written; read too for dW, which accumulates). */
static void slab_footprint(const float *lo, const float *mid, const float *hi, int nd, size_t plane,
                           const float *in, size_t n_in, const float *out, size_t n_out)
{
  SF_FOOTPRINT(mid, nd * plane, 0);
  if (lo) SF_FOOTPRINT(lo, plane, 0);
  if (hi) SF_FOOTPRINT(hi, plane, 0);
  SF_FOOTPRINT(in, n_in, 0);
  SF_FOOTPRINT(out, n_out, 1);
}

/* y: (nd,H,W,Cout) written; x: (nd,H,W,Cin) with halo planes x_lo, x_hi: (H,W,Cin); w: (3,3,3,Cin,Cout) */
static SF_NO_ASAN void conv3d_forward_loops(float *y, const float *x_lo, const float *x, const float *x_hi,
                                            const float *w, int nd, int H, int W, int Cin, int Cout)
{
  size_t plane = (size_t)H * W * Cin;
  double *acc = sf_malloc(sizeof(double) * (size_t)Cout, "conv3d ref accumulators");
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int x0 = 0; x0 < W; x0++) {
        for (int co = 0; co < Cout; co++) acc[co] = 0.0;
        for (int kd = 0; kd < 3; kd++) {
          const float *p = slab_plane(x_lo, x, x_hi, d + kd - 1, nd, plane);
          if (!p) continue;
          for (int kh = 0; kh < 3; kh++) {
            int hh = h + kh - 1;
            if (hh < 0 || hh >= H) continue;
            for (int kw = 0; kw < 3; kw++) {
              int ww = x0 + kw - 1;
              if (ww < 0 || ww >= W) continue;
              const float *xi = p + ((size_t)hh * W + ww) * Cin;
              const float *wk = w + (size_t)((kd * 3 + kh) * 3 + kw) * Cin * Cout;
              for (int ci = 0; ci < Cin; ci++)
                for (int co = 0; co < Cout; co++) acc[co] += (double)xi[ci] * wk[(size_t)ci * Cout + co];
            }
          }
        }
        float *yo = y + (((size_t)d * H + h) * W + x0) * Cout;
        for (int co = 0; co < Cout; co++) yo[co] = (float)acc[co];
      }
  free(acc);
}

void sf_conv3d_forward_ref(float *y, const float *x_lo, const float *x, const float *x_hi,
                           const float *w, int nd, int H, int W, int Cin, int Cout)
{
  slab_footprint(x_lo, x, x_hi, nd, (size_t)H * W * Cin, w, (size_t)27 * Cin * Cout, y, (size_t)nd * H * W * Cout);
  conv3d_forward_loops(y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout);
}

/* dx: (nd,H,W,Cin) written; dy: (nd,H,W,Cout) with halo planes dy_lo, dy_hi: (H,W,Cout).
 * The transpose of the forward: dx[i] = sum_k dy[i-k+1] * w[k] (k = kd,kh,kw). */
static SF_NO_ASAN void conv3d_backward_data_loops(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                                  const float *w, int nd, int H, int W, int Cin, int Cout)
{
  size_t plane = (size_t)H * W * Cout;
  double *acc = sf_malloc(sizeof(double) * (size_t)Cin, "conv3d ref accumulators");
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int x0 = 0; x0 < W; x0++) {
        for (int ci = 0; ci < Cin; ci++) acc[ci] = 0.0;
        for (int kd = 0; kd < 3; kd++) {
          const float *p = slab_plane(dy_lo, dy, dy_hi, d - kd + 1, nd, plane);
          if (!p) continue;
          for (int kh = 0; kh < 3; kh++) {
            int hh = h - kh + 1;
            if (hh < 0 || hh >= H) continue;
            for (int kw = 0; kw < 3; kw++) {
              int ww = x0 - kw + 1;
              if (ww < 0 || ww >= W) continue;
              const float *g = p + ((size_t)hh * W + ww) * Cout;
              const float *wk = w + (size_t)((kd * 3 + kh) * 3 + kw) * Cin * Cout;
              for (int ci = 0; ci < Cin; ci++)
                for (int co = 0; co < Cout; co++) acc[ci] += (double)g[co] * wk[(size_t)ci * Cout + co];
            }
          }
        }
        float *o = dx + (((size_t)d * H + h) * W + x0) * Cin;
        for (int ci = 0; ci < Cin; ci++) o[ci] = (float)acc[ci];
      }
  free(acc);
}

void sf_conv3d_backward_data_ref(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                 const float *w, int nd, int H, int W, int Cin, int Cout)
{
  slab_footprint(dy_lo, dy, dy_hi, nd, (size_t)H * W * Cout, w, (size_t)27 * Cin * Cout, dx,
                 (size_t)nd * H * W * Cin);
  conv3d_backward_data_loops(dx, dy_lo, dy, dy_hi, w, nd, H, W, Cin, Cout);
}

/* dw: (3,3,3,Cin,Cout) += sum over the slab's output voxels of x[v+k-1][ci] * dy[v][co] */
static SF_NO_ASAN void conv3d_backward_weights_loops(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                                     const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  size_t plane = (size_t)H * W * Cin, nw = (size_t)27 * Cin * Cout;
  double *acc = sf_calloc(nw, sizeof(double), "conv3d ref weight-gradient accumulators");
  for (int d = 0; d < nd; d++)
    for (int h = 0; h < H; h++)
      for (int x0 = 0; x0 < W; x0++) {
        const float *g = dy + (((size_t)d * H + h) * W + x0) * Cout;
        for (int kd = 0; kd < 3; kd++) {
          const float *p = slab_plane(x_lo, x, x_hi, d + kd - 1, nd, plane);
          if (!p) continue;
          for (int kh = 0; kh < 3; kh++) {
            int hh = h + kh - 1;
            if (hh < 0 || hh >= H) continue;
            for (int kw = 0; kw < 3; kw++) {
              int ww = x0 + kw - 1;
              if (ww < 0 || ww >= W) continue;
              const float *xi = p + ((size_t)hh * W + ww) * Cin;
              double *ak = acc + (size_t)((kd * 3 + kh) * 3 + kw) * Cin * Cout;
              for (int ci = 0; ci < Cin; ci++)
                for (int co = 0; co < Cout; co++) ak[(size_t)ci * Cout + co] += (double)xi[ci] * g[co];
            }
          }
        }
      }
  for (size_t i = 0; i < nw; i++) dw[i] += (float)acc[i];
  free(acc);
}

void sf_conv3d_backward_weights_ref(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                    const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  slab_footprint(x_lo, x, x_hi, nd, (size_t)H * W * Cin, dy, (size_t)nd * H * W * Cout, dw, (size_t)27 * Cin * Cout);
  conv3d_backward_weights_loops(dw, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout);
}
