/* OpenCL C: 1x1x1 convolution with bias (OutConv), the device twin of the _ref kernels of
 * src/kernels/conv1/conv1.c: a matrix product over voxels, y (n,Cout) = x (n,Cin) . w (Cin,Cout) + b.
 * One work-item per output element, double accumulators in the reference's order. Buffers come as
 * (pointer, element offset). */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* y: (n,Cout) written; x: (n,Cin); w: (Cin,Cout); b: (Cout) */
__kernel void sf_conv1_fwd(__global float *y, ulong y_off, __global const float *x, ulong x_off,
                           __global const float *w, ulong w_off, __global const float *b, ulong b_off, ulong n,
                           int Cin, int Cout)
{
  ulong gid = get_global_id(0);
  if (gid >= n * Cout) return;
  int co = (int)(gid % Cout);
  ulong i = gid / Cout;
  __global const float *xi = x + x_off + i * Cin;
  w += w_off;
  double acc = b[b_off + co];
  for (int ci = 0; ci < Cin; ci++) acc += (double)xi[ci] * w[(ulong)ci * Cout + co];
  y[y_off + gid] = (float)acc;
}

/* dx: (n,Cin) written = dy: (n,Cout) . w^T */
__kernel void sf_conv1_bwd_data(__global float *dx, ulong dx_off, __global const float *dy, ulong dy_off,
                                __global const float *w, ulong w_off, ulong n, int Cin, int Cout)
{
  ulong gid = get_global_id(0);
  if (gid >= n * Cin) return;
  int ci = (int)(gid % Cin);
  ulong i = gid / Cin;
  __global const float *g = dy + dy_off + i * Cout;
  __global const float *wr = w + w_off + (ulong)ci * Cout;
  double acc = 0.0;
  for (int co = 0; co < Cout; co++) acc += (double)g[co] * wr[co];
  dx[dx_off + gid] = (float)acc;
}

/* dw: (Cin,Cout) and db: (Cout) += (accumulate) or := x^T . dy and the column sums of dy.
 * Work-items 0 .. Cin*Cout-1 own a dw element, the next Cout own a db element. */
__kernel void sf_conv1_bwd_weights(__global float *dw, ulong dw_off, __global float *db, ulong db_off,
                                   int accumulate, __global const float *x, ulong x_off, __global const float *dy,
                                   ulong dy_off, ulong n, int Cin, int Cout)
{
  ulong gid = get_global_id(0);
  ulong nw = (ulong)Cin * Cout;
  if (gid >= nw + Cout) return;
  x += x_off;
  dy += dy_off;
  double acc = 0.0;
  if (gid < nw) {
    int ci = (int)(gid / Cout), co = (int)(gid % Cout);
    for (ulong i = 0; i < n; i++) acc += (double)x[i * Cin + ci] * dy[i * Cout + co];
    float base = accumulate ? dw[dw_off + gid] : 0.0f;
    dw[dw_off + gid] = base + (float)acc;
  } else {
    int co = (int)(gid - nw);
    for (ulong i = 0; i < n; i++) acc += dy[i * Cout + co];
    float base = accumulate ? db[db_off + co] : 0.0f;
    db[db_off + co] = base + (float)acc;
  }
}
