/* OpenCL C: 3x3x3 convolution (padding 1, stride 1, no bias) on a depth slab with halo planes, the
 * device twin of src/kernels/conv3d/conv3d_ref.c. One work-item per output element, double accumulators,
 * summed in the reference's (kd,kh,kw,ci) / voxel order so results match sf_conv3d_*_ref closely.
 * Every buffer comes as (pointer, element offset); a missing halo (volume face) has has_lo/has_hi 0
 * and is zero padding. Shapes in NDHWC order. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* Plane dd (slab-relative, -1..nd) of a slab with halos, or 0 when it is zero padding. */
static __global const float *sf_plane(__global const float *lo, int has_lo, __global const float *mid,
                                      __global const float *hi, int has_hi, int dd, int nd, ulong plane)
{
  if (dd < 0) return has_lo ? lo : 0;
  if (dd >= nd) return has_hi ? hi : 0;
  return mid + (ulong)dd * plane;
}

/* y: (nd,H,W,Cout) written; x: (nd,H,W,Cin); lo, hi: (H,W,Cin) planes d0-1, d0+nd; w: (3,3,3,Cin,Cout).
 * One work-item per y element. */
__kernel void sf_conv3d_fwd(__global float *y, ulong y_off, __global const float *x, ulong x_off,
                            __global const float *lo, ulong lo_off, int has_lo, __global const float *hi,
                            ulong hi_off, int has_hi, __global const float *w, ulong w_off, int nd, int H, int W,
                            int Cin, int Cout)
{
  ulong gid = get_global_id(0);
  if (gid >= (ulong)nd * H * W * Cout) return;
  int co = (int)(gid % Cout);
  ulong v = gid / Cout;
  int x0 = (int)(v % W);
  v /= W;
  int h = (int)(v % H);
  int d = (int)(v / H);
  x += x_off;
  lo += lo_off;
  hi += hi_off;
  w += w_off;
  ulong plane = (ulong)H * W * Cin;
  double acc = 0.0;
  for (int kd = 0; kd < 3; kd++) {
    __global const float *p = sf_plane(lo, has_lo, x, hi, has_hi, d + kd - 1, nd, plane);
    if (!p) continue;
    for (int kh = 0; kh < 3; kh++) {
      int hh = h + kh - 1;
      if (hh < 0 || hh >= H) continue;
      for (int kw = 0; kw < 3; kw++) {
        int ww = x0 + kw - 1;
        if (ww < 0 || ww >= W) continue;
        __global const float *xi = p + ((ulong)hh * W + ww) * Cin;
        __global const float *wk = w + (ulong)((kd * 3 + kh) * 3 + kw) * Cin * Cout + co;
        for (int ci = 0; ci < Cin; ci++) acc += (double)xi[ci] * wk[(ulong)ci * Cout];
      }
    }
  }
  y[y_off + gid] = (float)acc;
}

/* dx: (nd,H,W,Cin) written; dy: (nd,H,W,Cout) with halo planes lo, hi: (H,W,Cout); w: (3,3,3,Cin,Cout).
 * dx[i] = sum_k dy[i-k+1] * w[k]. One work-item per dx element. */
__kernel void sf_conv3d_bwd_data(__global float *dx, ulong dx_off, __global const float *dy, ulong dy_off,
                                 __global const float *lo, ulong lo_off, int has_lo, __global const float *hi,
                                 ulong hi_off, int has_hi, __global const float *w, ulong w_off, int nd, int H,
                                 int W, int Cin, int Cout)
{
  ulong gid = get_global_id(0);
  if (gid >= (ulong)nd * H * W * Cin) return;
  int ci = (int)(gid % Cin);
  ulong v = gid / Cin;
  int x0 = (int)(v % W);
  v /= W;
  int h = (int)(v % H);
  int d = (int)(v / H);
  dy += dy_off;
  lo += lo_off;
  hi += hi_off;
  w += w_off;
  ulong plane = (ulong)H * W * Cout;
  double acc = 0.0;
  for (int kd = 0; kd < 3; kd++) {
    __global const float *p = sf_plane(lo, has_lo, dy, hi, has_hi, d - kd + 1, nd, plane);
    if (!p) continue;
    for (int kh = 0; kh < 3; kh++) {
      int hh = h - kh + 1;
      if (hh < 0 || hh >= H) continue;
      for (int kw = 0; kw < 3; kw++) {
        int ww = x0 - kw + 1;
        if (ww < 0 || ww >= W) continue;
        __global const float *g = p + ((ulong)hh * W + ww) * Cout;
        __global const float *wk = w + ((ulong)((kd * 3 + kh) * 3 + kw) * Cin + ci) * Cout;
        for (int co = 0; co < Cout; co++) acc += (double)g[co] * wk[co];
      }
    }
  }
  dx[dx_off + gid] = (float)acc;
}

/* dw: (3,3,3,Cin,Cout) += (accumulate) or := the slab's contribution sum_v x[v+k-1][ci] * dy[v][co];
 * x with halos as in the forward; dy: (nd,H,W,Cout). One work-item per dw element, looping over the
 * slab's voxels. */
__kernel void sf_conv3d_bwd_weights(__global float *dw, ulong dw_off, int accumulate, __global const float *x,
                                    ulong x_off, __global const float *lo, ulong lo_off, int has_lo,
                                    __global const float *hi, ulong hi_off, int has_hi, __global const float *dy,
                                    ulong dy_off, int nd, int H, int W, int Cin, int Cout)
{
  ulong gid = get_global_id(0);
  if (gid >= (ulong)27 * Cin * Cout) return;
  int co = (int)(gid % Cout);
  int ci = (int)((gid / Cout) % Cin);
  int k = (int)(gid / ((ulong)Cout * Cin));
  int kd = k / 9, kh = (k / 3) % 3, kw = k % 3;
  x += x_off;
  lo += lo_off;
  hi += hi_off;
  dy += dy_off;
  ulong plane = (ulong)H * W * Cin;
  double acc = 0.0;
  for (int d = 0; d < nd; d++) {
    __global const float *p = sf_plane(lo, has_lo, x, hi, has_hi, d + kd - 1, nd, plane);
    if (!p) continue;
    for (int h = 0; h < H; h++) {
      int hh = h + kh - 1;
      if (hh < 0 || hh >= H) continue;
      for (int x0 = 0; x0 < W; x0++) {
        int ww = x0 + kw - 1;
        if (ww < 0 || ww >= W) continue;
        acc += (double)p[((ulong)hh * W + ww) * Cin + ci] * dy[(((ulong)d * H + h) * W + x0) * Cout + co];
      }
    }
  }
  float base = accumulate ? dw[dw_off + gid] : 0.0f;
  dw[dw_off + gid] = base + (float)acc;
}
