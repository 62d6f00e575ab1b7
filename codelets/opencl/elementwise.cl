/* OpenCL C: the data-movement and elementwise ops of the U-Net, device twins of src/kernels/elementwise/relu.c,
 * maxpool3d.c and concat.c: standalone ReLU, MaxPool 2x2x2 (PyTorch's first-maximum / NaN rule,
 * argmax saved as a*4+p*2+q in a uint8), and the channel concatenation [skip, upsampled] with its
 * backward split. One work-item per output element. Shapes in NDHWC order. */
#pragma OPENCL FP_CONTRACT OFF

/* y: (n) written = max(0, x) (NaN propagates); y may be x */
__kernel void sf_relu_fwd(__global float *y, ulong y_off, __global const float *x, ulong x_off, ulong n)
{
  ulong i = get_global_id(0);
  if (i >= n) return;
  float v = x[x_off + i];
  y[y_off + i] = v < 0.0f ? 0.0f : v;
}

/* dx: (n) written = dy * (y > 0) */
__kernel void sf_relu_bwd(__global float *dx, ulong dx_off, __global const float *dy, ulong dy_off,
                          __global const float *y, ulong y_off, ulong n)
{
  ulong i = get_global_id(0);
  if (i >= n) return;
  dx[dx_off + i] = y[y_off + i] > 0.0f ? dy[dy_off + i] : 0.0f;
}

/* x: (2nd,2H,2W,C); y, idx: (nd,H,W,C) written. H, W are OUTPUT sizes. The window is scanned in
 * (a,p,q) order from -inf; a value wins when v > max || isnan(v). */
__kernel void sf_maxpool3d_fwd(__global float *y, ulong y_off, __global uchar *idx, ulong idx_off,
                               __global const float *x, ulong x_off, int nd, int H, int W, int C)
{
  ulong gid = get_global_id(0);
  if (gid >= (ulong)nd * H * W * C) return;
  int c = (int)(gid % C);
  ulong v = gid / C;
  int w = (int)(v % W);
  v /= W;
  int h = (int)(v % H);
  int d = (int)(v / H);
  ulong sw = (ulong)C, sh = 2 * (ulong)W * sw, sd = 2 * (ulong)H * sh;
  __global const float *base = x + x_off + 2 * (ulong)d * sd + 2 * (ulong)h * sh + 2 * (ulong)w * sw + c;
  float m = -INFINITY;
  int best = 0;
  for (int k = 0; k < 8; k++) {
    float val = base[(ulong)(k >> 2) * sd + (ulong)((k >> 1) & 1) * sh + (ulong)(k & 1) * sw];
    if (val > m || isnan(val)) {
      m = val;
      best = k;
    }
  }
  y[y_off + gid] = m;
  idx[idx_off + gid] = (uchar)best;
}

/* dx: (2nd,2H,2W,C) written = dy at each window's argmax, 0 elsewhere, + add (same shape as dx) when
 * has_add. dy, idx: (nd,H,W,C). H, W are the OUTPUT (coarse) sizes. One work-item per dx element. */
__kernel void sf_maxpool3d_bwd(__global float *dx, ulong dx_off, __global const float *dy, ulong dy_off,
                               __global const uchar *idx, ulong idx_off, __global const float *add, ulong add_off,
                               int has_add, int nd, int H, int W, int C)
{
  ulong gid = get_global_id(0);
  if (gid >= (ulong)8 * nd * H * W * C) return;
  int c = (int)(gid % C);
  ulong v = gid / C;
  int X = (int)(v % (2 * W));
  v /= 2 * W;
  int Y = (int)(v % (2 * H));
  int Z = (int)(v / (2 * H));
  int k = (Z & 1) * 4 + (Y & 1) * 2 + (X & 1);
  ulong o = (((ulong)(Z >> 1) * H + (Y >> 1)) * W + (X >> 1)) * C + c;
  float r = idx[idx_off + o] == k ? dy[dy_off + o] : 0.0f;
  if (has_add) r += add[add_off + gid];
  dx[dx_off + gid] = r;
}

/* y: (n, Ca+Cb) written from a: (n,Ca) and b: (n,Cb) */
__kernel void sf_concat_fwd(__global float *y, ulong y_off, __global const float *a, ulong a_off,
                            __global const float *b, ulong b_off, ulong n, int Ca, int Cb)
{
  ulong gid = get_global_id(0);
  int C = Ca + Cb;
  if (gid >= n * C) return;
  int c = (int)(gid % C);
  ulong i = gid / C;
  y[y_off + gid] = c < Ca ? a[a_off + i * Ca + c] : b[b_off + i * Cb + (c - Ca)];
}

/* da: (n,Ca), db: (n,Cb) written from dy: (n, Ca+Cb). One work-item per dy element. */
__kernel void sf_concat_bwd(__global float *da, ulong da_off, __global float *db, ulong db_off,
                            __global const float *dy, ulong dy_off, ulong n, int Ca, int Cb)
{
  ulong gid = get_global_id(0);
  int C = Ca + Cb;
  if (gid >= n * C) return;
  int c = (int)(gid % C);
  ulong i = gid / C;
  float v = dy[dy_off + gid];
  if (c < Ca)
    da[da_off + i * Ca + c] = v;
  else
    db[db_off + i * Cb + (c - Ca)] = v;
}
