/* Transposed convolution, kernel 2, stride 2, with bias (the Up path) on the GPU. Each input voxel v
 * feeds the 8 output voxels (2d+a, 2h+p, 2w+q), so per chunk of input voxels:
 *   forward: Z: (rows, 8*Cout) = x . w (w: (Cin, 8*Cout)), then scatter Z + b into y
 *   dX:      G: (rows, 8*Cout) gathered from dy, dx = G . w^T
 *   dW:      dw += x^T . G;  db += column sums of dy (all output voxels)
 * (cuBLAS column-major: Z^T = w^T x^T etc.). H, W are INPUT sizes; Z/G chunks are at most
 * SF_GPU_COL_BYTES. SF_GPU_BF16 runs the GEMMs on bf16 operands with fp32 accumulation. */
#include "gpu_blas.h"
#include "gpu_common.h"

/* y[2d+a][2h+p][2w+q][co] = Z[r][k*Cout+co] + b[co] for input voxels v0+r, r < rows (k = a*4+p*2+q). */
static __global__ void up_scatter_kernel(float *__restrict__ y, const float *__restrict__ Z, const float *__restrict__ b,
                                         int v0, int rows, int H, int W, int Cout)
{
  const unsigned total = (unsigned)rows * 8u * (unsigned)Cout;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const unsigned t = i / (unsigned)Cout;
    const int co = (int)(i - t * (unsigned)Cout), k = (int)(t & 7u), r = (int)(t >> 3);
    const int v = v0 + r, w = v % W, u = v / W, h = u % H, d = u / H;
    const size_t o = ((((size_t)2 * d + (k >> 2)) * 2 * H + 2 * h + ((k >> 1) & 1)) * 2 * W + 2 * w + (k & 1)) * Cout + co;
    y[o] = Z[i] + b[co];
  }
}

/* G[r][k*Cout+co] = dy[2d+a][2h+p][2w+q][co] for input voxels v0+r (G of T: float or bf16 bits). */
template <typename T>
static __global__ void up_gather_kernel(T *__restrict__ G, const float *__restrict__ dy, int v0, int rows, int H, int W,
                                        int Cout)
{
  const unsigned total = (unsigned)rows * 8u * (unsigned)Cout;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const unsigned t = i / (unsigned)Cout;
    const int co = (int)(i - t * (unsigned)Cout), k = (int)(t & 7u), r = (int)(t >> 3);
    const int v = v0 + r, w = v % W, u = v / W, h = u % H, d = u / H;
    const size_t o = ((((size_t)2 * d + (k >> 2)) * 2 * H + 2 * h + ((k >> 1) & 1)) * 2 * W + 2 * w + (k & 1)) * Cout + co;
    G[i] = sf_cvt<T>(dy[o]);
  }
}

static int chunk_rows(int Cout, size_t elem, size_t nvox)
{
  size_t r = SF_GPU_COL_BYTES / ((size_t)8 * Cout * elem);
  const size_t cap = ((size_t)1 << 31) / ((size_t)8 * Cout);
  if (r > cap) r = cap;
  if (r < 1) r = 1;
  return (int)(r < nvox ? r : nvox);
}

static const void *at(const void *p, int bf16, size_t elems)
{
  return bf16 ? (const void *)((const uint16_t *)p + elems) : (const void *)((const float *)p + elems);
}

static int sizes_ok(int nd, int H, int W, int Cin, int Cout)
{
  if (nd < 0 || H <= 0 || W <= 0 || Cin <= 0 || Cout <= 0 || (size_t)nd * H * W >= ((size_t)1 << 31))
    sf_gpu_fail(__FILE__, __LINE__, "upconv3d", "bad sizes (need H, W, Cin, Cout > 0 and nd*H*W < 2^31)");
  return nd > 0;
}

static void gather(void *G, int bf16, const float *dy, int v0, int r, int H, int W, int Cout, cudaStream_t s)
{
  const unsigned nb = sf_gpu_blocks((size_t)r * 8 * Cout);
  if (bf16) up_gather_kernel<uint16_t><<<nb, SF_GPU_THREADS, 0, s>>>((uint16_t *)G, dy, v0, r, H, W, Cout);
  else up_gather_kernel<float><<<nb, SF_GPU_THREADS, 0, s>>>((float *)G, dy, v0, r, H, W, Cout);
  SF_LAUNCH_CHECK(up_gather_kernel);
}

extern "C" void sf_cuda_upconv3d_forward(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *y, const float *x,
                                         const float *w, const float *b, int nd, int H, int W, int Cin, int Cout)
{
  if (!sizes_ok(nd, H, W, Cin, Cout)) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  const size_t nvox = (size_t)nd * H * W;
  const int N8 = 8 * Cout, rows = chunk_rows(Cout, 4, nvox);
  const void *xa = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_BF16_A, x, nvox * Cin, s) : x;
  const void *wa = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_WEIGHTS, w, (size_t)Cin * N8, s) : w;
  float *Z = (float *)sf_gpu_ws(SF_WS_COL, (size_t)rows * N8 * sizeof(float), s);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    int r = (int)(nvox - v0 < (size_t)rows ? nvox - v0 : (size_t)rows);
    sf_gpu_gemm((cublasHandle_t)h, s, prec, CUBLAS_OP_N, CUBLAS_OP_N, N8, r, Cin, wa, N8, at(xa, bf16, v0 * Cin), Cin,
                0.0f, Z, N8);
    up_scatter_kernel<<<sf_gpu_blocks((size_t)r * N8), SF_GPU_THREADS, 0, s>>>(y, Z, b, (int)v0, r, H, W, Cout);
    SF_LAUNCH_CHECK(up_scatter_kernel);
  }
}

extern "C" void sf_cuda_upconv3d_backward_data(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dx,
                                               const float *dy, const float *w, int nd, int H, int W, int Cin, int Cout)
{
  if (!sizes_ok(nd, H, W, Cin, Cout)) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  const size_t nvox = (size_t)nd * H * W, elem = bf16 ? 2 : 4;
  const int N8 = 8 * Cout, rows = chunk_rows(Cout, elem, nvox);
  const void *wa = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_WEIGHTS, w, (size_t)Cin * N8, s) : w;
  void *G = sf_gpu_ws(SF_WS_COL, (size_t)rows * N8 * elem, s);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    int r = (int)(nvox - v0 < (size_t)rows ? nvox - v0 : (size_t)rows);
    gather(G, bf16, dy, (int)v0, r, H, W, Cout, s);
    sf_gpu_gemm((cublasHandle_t)h, s, prec, CUBLAS_OP_T, CUBLAS_OP_N, Cin, r, N8, wa, N8, G, N8, 0.0f, dx + v0 * Cin,
                Cin);
  }
}

extern "C" void sf_cuda_upconv3d_backward_weights(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dw,
                                                  float *db, const float *x, const float *dy, int nd, int H, int W,
                                                  int Cin, int Cout)
{
  if (!sizes_ok(nd, H, W, Cin, Cout)) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  const size_t nvox = (size_t)nd * H * W, elem = bf16 ? 2 : 4;
  const int N8 = 8 * Cout, rows = chunk_rows(Cout, elem, nvox);
  const void *xa = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_BF16_A, x, nvox * Cin, s) : x;
  void *G = sf_gpu_ws(SF_WS_COL, (size_t)rows * N8 * elem, s);
  for (size_t v0 = 0; v0 < nvox; v0 += rows) {
    int r = (int)(nvox - v0 < (size_t)rows ? nvox - v0 : (size_t)rows);
    gather(G, bf16, dy, (int)v0, r, H, W, Cout, s);
    sf_gpu_gemm((cublasHandle_t)h, s, prec, CUBLAS_OP_N, CUBLAS_OP_T, N8, Cin, r, G, N8, at(xa, bf16, v0 * Cin), Cin,
                1.0f, dw, N8);
  }
  sf_gpu_colsum_add(db, dy, 8 * nvox, Cout, s);
}
