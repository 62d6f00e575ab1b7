/* OpenCL C: transposed convolution, kernel 2, stride 2, with bias (the Up path), the device twin of
 * src/kernels/upconv3d/upconv3d_ref.c. Every fine output voxel (2d+a, 2h+p, 2w+q) reads exactly the coarse
 * voxel (d,h,w) through weight tap k = a*4+p*2+q, so slabs need no halo. H, W are the COARSE
 * (input) sizes. One work-item per output element, double accumulators in the reference's order. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* Offset of fine voxel (2d+a, 2h+p, 2w+q) in a (2nd,2H,2W,C) tensor. */
static ulong sf_up_index(int d, int h, int w, int a, int p, int q, int H, int W, int C)
{
  return ((((ulong)2 * d + a) * 2 * H + 2 * h + p) * 2 * W + 2 * w + q) * C;
}

/* y: (2nd,2H,2W,Cout) written; x: (nd,H,W,Cin); w: (Cin,2,2,2,Cout); b: (Cout) */
__kernel void sf_upconv3d_fwd(__global float *y, ulong y_off, __global const float *x, ulong x_off,
                              __global const float *w, ulong w_off, __global const float *b, ulong b_off, int nd,
                              int H, int W, int Cin, int Cout)
{
  ulong gid = get_global_id(0);
  if (gid >= (ulong)8 * nd * H * W * Cout) return;
  int co = (int)(gid % Cout);
  ulong v = gid / Cout;
  int X = (int)(v % (2 * W));
  v /= 2 * W;
  int Y = (int)(v % (2 * H));
  int Z = (int)(v / (2 * H));
  int k = (Z & 1) * 4 + (Y & 1) * 2 + (X & 1);
  __global const float *xi = x + x_off + (((ulong)(Z >> 1) * H + (Y >> 1)) * W + (X >> 1)) * Cin;
  w += w_off;
  double acc = b[b_off + co];
  for (int ci = 0; ci < Cin; ci++) acc += (double)xi[ci] * w[((ulong)ci * 8 + k) * Cout + co];
  y[y_off + gid] = (float)acc;
}

/* dx: (nd,H,W,Cin) written = sum over the 8 children and co of dy * w */
__kernel void sf_upconv3d_bwd_data(__global float *dx, ulong dx_off, __global const float *dy, ulong dy_off,
                                   __global const float *w, ulong w_off, int nd, int H, int W, int Cin, int Cout)
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
  w += w_off;
  double acc = 0.0;
  for (int k = 0; k < 8; k++) {
    __global const float *g = dy + sf_up_index(d, h, x0, k >> 2, (k >> 1) & 1, k & 1, H, W, Cout);
    __global const float *wk = w + ((ulong)ci * 8 + k) * Cout;
    for (int co = 0; co < Cout; co++) acc += (double)g[co] * wk[co];
  }
  dx[dx_off + gid] = (float)acc;
}

/* dw: (Cin,2,2,2,Cout), db: (Cout) += (accumulate) or := the slab's contribution. Work-items
 * 0 .. 8*Cin*Cout-1 own a dw element, the next Cout own a db element; each loops over the coarse
 * voxels in order. */
__kernel void sf_upconv3d_bwd_weights(__global float *dw, ulong dw_off, __global float *db, ulong db_off,
                                      int accumulate, __global const float *x, ulong x_off,
                                      __global const float *dy, ulong dy_off, int nd, int H, int W, int Cin, int Cout)
{
  ulong gid = get_global_id(0);
  ulong nw = (ulong)Cin * 8 * Cout;
  if (gid >= nw + Cout) return;
  x += x_off;
  dy += dy_off;
  double acc = 0.0;
  if (gid < nw) {
    int co = (int)(gid % Cout);
    int k = (int)((gid / Cout) % 8);
    int ci = (int)(gid / ((ulong)8 * Cout));
    for (int d = 0; d < nd; d++)
      for (int h = 0; h < H; h++)
        for (int x0 = 0; x0 < W; x0++)
          acc += (double)x[(((ulong)d * H + h) * W + x0) * Cin + ci] *
                 dy[sf_up_index(d, h, x0, k >> 2, (k >> 1) & 1, k & 1, H, W, Cout) + co];
    float base = accumulate ? dw[dw_off + gid] : 0.0f;
    dw[dw_off + gid] = base + (float)acc;
  } else {
    int co = (int)(gid - nw);
    for (int d = 0; d < nd; d++)
      for (int h = 0; h < H; h++)
        for (int x0 = 0; x0 < W; x0++)
          for (int k = 0; k < 8; k++) acc += dy[sf_up_index(d, h, x0, k >> 2, (k >> 1) & 1, k & 1, H, W, Cout) + co];
    float base = accumulate ? db[db_off + co] : 0.0f;
    db[db_off + co] = base + (float)acc;
  }
}
