/* 1x1x1 convolution with bias (OutConv) on the GPU: a plain GEMM over voxels in NDHWC, seen column-
 * major by cuBLAS (row-major y: (n,Cout) is column-major y^T):
 *   forward: y^T = w^T x^T + b      -> gemm(N,N, Cout, n, Cin, w, x) after filling y with b
 *   dX:      dx^T = w dy^T          -> gemm(T,N, Cin, n, Cout, w, dy)
 *   dW:      dw^T += dy^T x         -> gemm(N,T, Cout, Cin, n, dy, x);  db += column sums of dy
 * Rows go in chunks of at most 2^30 elements so cuBLAS's int sizes never overflow. SF_GPU_BF16
 * converts the GEMM operands to bf16 first (fp32 accumulation and output). */
#include "gpu_blas.h"
#include "gpu_common.h"

/* y: (n,C) = b: (C) broadcast; flat loop with the channel tracked incrementally (no division). */
static __global__ void bias_fill_kernel(float *__restrict__ y, const float *__restrict__ b, size_t n, int C)
{
  const size_t total = n * C, start = (size_t)blockIdx.x * blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
  if (start >= total) return;
  int c = (int)(start % C);
  const int dc = (int)(step % C);
  for (size_t i = start; i < total; i += step) {
    y[i] = b[c];
    c += dc;
    if (c >= C) c -= C;
  }
}

/* Operand pointer `elems` elements into an fp32 or bf16 array. */
static const void *at(const void *p, int bf16, size_t elems)
{
  return bf16 ? (const void *)((const uint16_t *)p + elems) : (const void *)((const float *)p + elems);
}

static size_t chunk(size_t n, int Cin, int Cout)
{
  size_t c = ((size_t)1 << 30) / (size_t)(Cin > Cout ? Cin : Cout);
  return c < n ? c : n;
}

extern "C" void sf_cuda_conv1_forward(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *y, const float *x,
                                      const float *w, const float *b, size_t n, int Cin, int Cout)
{
  if (n == 0) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  bias_fill_kernel<<<sf_gpu_blocks(n * Cout), SF_GPU_THREADS, 0, s>>>(y, b, n, Cout);
  SF_LAUNCH_CHECK(bias_fill_kernel);
  const void *xa = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_BF16_A, x, n * Cin, s) : x;
  const void *wa = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_WEIGHTS, w, (size_t)Cin * Cout, s) : w;
  const size_t rows = chunk(n, Cin, Cout);
  for (size_t r0 = 0; r0 < n; r0 += rows) {
    int r = (int)(n - r0 < rows ? n - r0 : rows);
    sf_gpu_gemm((cublasHandle_t)h, s, prec, CUBLAS_OP_N, CUBLAS_OP_N, Cout, r, Cin, wa, Cout, at(xa, bf16, r0 * Cin),
                Cin, 1.0f, y + r0 * Cout, Cout);
  }
}

extern "C" void sf_cuda_conv1_backward_data(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dx,
                                            const float *dy, const float *w, size_t n, int Cin, int Cout)
{
  if (n == 0) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  const void *ga = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_BF16_A, dy, n * Cout, s) : dy;
  const void *wa = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_WEIGHTS, w, (size_t)Cin * Cout, s) : w;
  const size_t rows = chunk(n, Cin, Cout);
  for (size_t r0 = 0; r0 < n; r0 += rows) {
    int r = (int)(n - r0 < rows ? n - r0 : rows);
    sf_gpu_gemm((cublasHandle_t)h, s, prec, CUBLAS_OP_T, CUBLAS_OP_N, Cin, r, Cout, wa, Cout,
                at(ga, bf16, r0 * Cout), Cout, 0.0f, dx + r0 * Cin, Cin);
  }
}

extern "C" void sf_cuda_conv1_backward_weights(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dw,
                                               float *db, const float *x, const float *dy, size_t n, int Cin,
                                               int Cout)
{
  if (n == 0) return;
  const int prec = sf_gpu_prec(flags), bf16 = prec == SF_PREC_BF16;
  const void *xa = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_BF16_A, x, n * Cin, s) : x;
  const void *ga = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_BF16_B, dy, n * Cout, s) : dy;
  const size_t rows = chunk(n, Cin, Cout);
  for (size_t r0 = 0; r0 < n; r0 += rows) {
    int r = (int)(n - r0 < rows ? n - r0 : rows);
    sf_gpu_gemm((cublasHandle_t)h, s, prec, CUBLAS_OP_N, CUBLAS_OP_T, Cout, Cin, r, at(ga, bf16, r0 * Cout), Cout,
                at(xa, bf16, r0 * Cin), Cin, 1.0f, dw, Cout);
  }
  sf_gpu_colsum_add(db, dy, n, Cout, s);
}
