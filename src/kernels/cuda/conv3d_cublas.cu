/* 3x3x3 convolution (padding 1, stride 1, no bias) on a depth slab with halo planes, on the GPU as
 * im2col into a device workspace + one cuBLAS GEMM per chunk of voxels (NDHWC, column-major view):
 *   forward: y[v][Cout] = col(x)[v][27*Cin] . w[27*Cin][Cout]      -> y^T = w^T col^T
 *   dX:      dx = forward conv of dy (with its halos) by wf[k][co][ci] = w[26-k][ci][co]
 *   dW:      dw[27*Cin][Cout] += col(x)^T . dy                       -> dw^T += dy^T col
 * col rows hold the 27 neighbours of a voxel in (kd,kh,kw,c) order (zeros outside the volume), like
 * the weights. The col buffer of a chunk is at most SF_GPU_COL_BYTES. SF_GPU_BF16 writes col (and
 * converts weights / dy) in bf16 and runs cublasGemmEx with fp32 accumulation and fp32 output;
 * SF_GPU_TF32 keeps fp32 data and lets the GEMM use TF32 tensor cores.
 * SF_GPU_CUDNN hands the call to conv3d_cudnn.cu instead. */
#include "gpu_blas.h"
#include "gpu_common.h"

/* col: (rows, 27*C) of T for voxels [v0, v0+rows) of the slab x: (nd,H,W,C) with halo planes lo, hi:
 * (H,W,C) (NULL = zero padding). V channels per thread (V = 4 needs C % 4 == 0 and 16-byte pointers). */
template <typename T, int V>
static __global__ void im2col_kernel(T *__restrict__ col, const float *lo, const float *x, const float *hi, int v0,
                                     int rows, int nd, int H, int W, int C)
{
  const int CV = C / V, KV = 27 * CV;
  const unsigned total = (unsigned)rows * (unsigned)KV;
  const size_t plane = (size_t)H * W * C;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int r = (int)(i / (unsigned)KV), kv = (int)(i - (unsigned)r * (unsigned)KV);
    const int k = kv / CV, c = (kv - k * CV) * V;
    const int v = v0 + r, w = v % W, t = v / W, h = t % H, d = t / H;
    const int dd = d + k / 9 - 1, hh = h + (k / 3) % 3 - 1, ww = w + k % 3 - 1;
    const float *p = NULL;
    if (hh >= 0 && hh < H && ww >= 0 && ww < W) p = dd < 0 ? lo : dd >= nd ? hi : x + (size_t)dd * plane;
    T *dst = col + (size_t)i * V;
    if (V == 4) {
      float4 q = make_float4(0.f, 0.f, 0.f, 0.f);
      if (p) q = *(const float4 *)(p + ((size_t)hh * W + ww) * C + c);
      if (sizeof(T) == 4) {
        *(float4 *)dst = q;
      } else {
        uint2 b;
        b.x = (uint32_t)sf_f2bf(q.x) | ((uint32_t)sf_f2bf(q.y) << 16);
        b.y = (uint32_t)sf_f2bf(q.z) | ((uint32_t)sf_f2bf(q.w) << 16);
        *(uint2 *)dst = b;
      }
    } else {
      dst[0] = sf_cvt<T>(p ? p[((size_t)hh * W + ww) * C + c] : 0.0f);
    }
  }
}

/* wf: (3,3,3,Cout,Cin) of T = w: (3,3,3,Cin,Cout) flipped (k -> 26-k) with channels transposed. */
template <typename T>
static __global__ void flip_weights_kernel(T *__restrict__ wf, const float *__restrict__ w, int Cin, int Cout)
{
  const size_t n = (size_t)27 * Cin * Cout;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    int ci = (int)(i % Cin);
    size_t t = i / Cin;
    int co = (int)(t % Cout), k = (int)(t / Cout);
    wf[i] = sf_cvt<T>(w[((size_t)(26 - k) * Cin + ci) * Cout + co]);
  }
}

static int aligned16(const void *p) { return p == NULL || ((uintptr_t)p & 15u) == 0; }

/* Launches im2col of voxels [v0, v0+rows) into col (float or bf16 bits). */
static void im2col(void *col, int bf16, const float *lo, const float *x, const float *hi, int v0, int rows, int nd,
                   int H, int W, int C, cudaStream_t s)
{
  const int vec = C % 4 == 0 && aligned16(lo) && aligned16(x) && aligned16(hi);
  const size_t work = (size_t)rows * 27 * (vec ? C / 4 : C);
  const unsigned nb = sf_gpu_blocks(work);
  if (bf16) {
    if (vec) im2col_kernel<uint16_t, 4><<<nb, SF_GPU_THREADS, 0, s>>>((uint16_t *)col, lo, x, hi, v0, rows, nd, H, W, C);
    else im2col_kernel<uint16_t, 1><<<nb, SF_GPU_THREADS, 0, s>>>((uint16_t *)col, lo, x, hi, v0, rows, nd, H, W, C);
  } else {
    if (vec) im2col_kernel<float, 4><<<nb, SF_GPU_THREADS, 0, s>>>((float *)col, lo, x, hi, v0, rows, nd, H, W, C);
    else im2col_kernel<float, 1><<<nb, SF_GPU_THREADS, 0, s>>>((float *)col, lo, x, hi, v0, rows, nd, H, W, C);
  }
  SF_LAUNCH_CHECK(im2col_kernel);
}

/* Voxels per chunk so that a (rows, 27*C) col of `elem`-byte values fits SF_GPU_COL_BYTES. */
static int chunk_rows(int C, size_t elem, size_t nvox)
{
  size_t row = (size_t)27 * C * elem, r = SF_GPU_COL_BYTES / row;
  const size_t cap = ((size_t)1 << 31) / ((size_t)27 * C); /* keeps the kernel's 32-bit index in range */
  if (r > cap) r = cap;
  if (r < 1) r = 1;
  return (int)(r < nvox ? r : nvox);
}

/* y: (nd,H,W,Cout) written = conv of x (with halos) by wmat: (27*Cin, Cout), fp32 or bf16 bits. */
static void conv_gemm(cublasHandle_t hb, cudaStream_t s, int prec, float *y, const float *lo, const float *x,
                      const float *hi, const void *wmat, int nd, int H, int W, int Cin, int Cout)
{
  const int bf16 = prec == SF_PREC_BF16;
  const size_t nvox = (size_t)nd * H * W, elem = bf16 ? 2 : 4;
  const int K = 27 * Cin, rows = chunk_rows(Cin, elem, nvox);
  void *col = sf_gpu_ws(SF_WS_COL, (size_t)rows * K * elem, s);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    int r = (int)(nvox - v0 < (size_t)rows ? nvox - v0 : (size_t)rows);
    im2col(col, bf16, lo, x, hi, (int)v0, r, nd, H, W, Cin, s);
    sf_gpu_gemm(hb, s, prec, CUBLAS_OP_N, CUBLAS_OP_N, Cout, r, K, wmat, Cout, col, K, 0.0f, y + v0 * Cout, Cout);
  }
}

static int check_sizes(int nd, int H, int W, int Cin, int Cout)
{
  if (nd < 0 || H <= 0 || W <= 0 || Cin <= 0 || Cout <= 0 || (size_t)nd * H * W >= ((size_t)1 << 31))
    sf_gpu_fail(__FILE__, __LINE__, "conv3d", "bad sizes (need H, W, Cin, Cout > 0 and nd*H*W < 2^31)");
  return nd > 0;
}

static void require_cudnn(void)
{
#ifndef SF_HAVE_CUDNN
  sf_gpu_fail(__FILE__, __LINE__, "conv3d", "SF_GPU_CUDNN requested but sf_cuda_kernels was built without cuDNN");
#endif
}

extern "C" void sf_cuda_conv3d_forward(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *y,
                                       const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                                       int H, int W, int Cin, int Cout)
{
  if (!check_sizes(nd, H, W, Cin, Cout)) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  if (flags & SF_GPU_CUDNN) {
    require_cudnn();
#ifdef SF_HAVE_CUDNN
    if (sf_gpu_conv3d_cudnn(SF_CONV_FWD, s, prec, y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout) == 0) return;
#endif
  }
  const void *wm = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_WEIGHTS, w, (size_t)27 * Cin * Cout, s) : w;
  conv_gemm((cublasHandle_t)h, s, prec, y, x_lo, x, x_hi, wm, nd, H, W, Cin, Cout);
}

extern "C" void sf_cuda_conv3d_backward_data(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dx,
                                             const float *dy_lo, const float *dy, const float *dy_hi, const float *w,
                                             int nd, int H, int W, int Cin, int Cout)
{
  if (!check_sizes(nd, H, W, Cin, Cout)) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  if (flags & SF_GPU_CUDNN) {
    require_cudnn();
#ifdef SF_HAVE_CUDNN
    if (sf_gpu_conv3d_cudnn(SF_CONV_BWD_DATA, s, prec, dx, dy_lo, dy, dy_hi, w, nd, H, W, Cin, Cout) == 0) return;
#endif
  }
  const size_t nw = (size_t)27 * Cin * Cout;
  void *wf = sf_gpu_ws(SF_WS_WEIGHTS, nw * (bf16 ? 2 : 4), s);
  if (bf16) flip_weights_kernel<uint16_t><<<sf_gpu_blocks(nw), SF_GPU_THREADS, 0, s>>>((uint16_t *)wf, w, Cin, Cout);
  else flip_weights_kernel<float><<<sf_gpu_blocks(nw), SF_GPU_THREADS, 0, s>>>((float *)wf, w, Cin, Cout);
  SF_LAUNCH_CHECK(flip_weights_kernel);
  conv_gemm((cublasHandle_t)h, s, prec, dx, dy_lo, dy, dy_hi, wf, nd, H, W, Cout, Cin);
}

extern "C" void sf_cuda_conv3d_backward_weights(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dw,
                                                const float *x_lo, const float *x, const float *x_hi,
                                                const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  if (!check_sizes(nd, H, W, Cin, Cout)) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  if (flags & SF_GPU_CUDNN) {
    require_cudnn();
#ifdef SF_HAVE_CUDNN
    if (sf_gpu_conv3d_cudnn(SF_CONV_BWD_WEIGHTS, s, prec, dw, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout) == 0) return;
#endif
  }
  const size_t nvox = (size_t)nd * H * W, elem = bf16 ? 2 : 4;
  const int K = 27 * Cin, rows = chunk_rows(Cin, elem, nvox);
  void *col = sf_gpu_ws(SF_WS_COL, (size_t)rows * K * elem, s);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    int r = (int)(nvox - v0 < (size_t)rows ? nvox - v0 : (size_t)rows);
    im2col(col, bf16, x_lo, x, x_hi, (int)v0, r, nd, H, W, Cin, s);
    const void *g = dy + v0 * Cout;
    if (bf16) g = sf_gpu_bf16_copy(SF_WS_BF16_A, dy + v0 * Cout, (size_t)r * Cout, s);
    sf_gpu_gemm((cublasHandle_t)h, s, prec, CUBLAS_OP_N, CUBLAS_OP_T, Cout, K, r, g, Cout, col, K, 1.0f, dw, Cout);
  }
}
