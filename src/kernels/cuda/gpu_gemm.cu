/* The one GEMM entry point of the GPU kernels: column-major fp32 output from fp32 operands
 * (cublasSgemm, or TF32 math through cublasGemmEx) or bf16 operands with fp32 accumulation
 * (cublasGemmEx, CUBLAS_COMPUTE_32F), plus the
 * BLAS error report. Row-major callers swap operands (C^T = B^T A^T), see conv3d_cublas.cu. */
#include <stdio.h>
#include <stdlib.h>

#include "gpu_blas.h"
#include "gpu_common.h"

static const char *blas_status_name(int st)
{
#ifdef SF_USE_HIP
  return hipblasStatusToString((hipblasStatus_t)st);
#else
  return cublasGetStatusString((cublasStatus_t)st);
#endif
}

void sf_gpu_blas_fail(const char *file, int line, const char *call, int status)
{
  char msg[160];
  snprintf(msg, sizeof msg, "BLAS status %d (%s)", status, blas_status_name(status));
  sf_gpu_fail(file, line, call, msg);
}

void sf_gpu_gemm(cublasHandle_t h, cudaStream_t s, int prec, cublasOperation_t ta, cublasOperation_t tb, int m,
                 int n, int k, const void *A, int lda, const void *B, int ldb, float beta, float *C, int ldc)
{
  if (m <= 0 || n <= 0) return;
  const float one = 1.0f;
  SF_BLAS_CHECK(cublasSetStream(h, s));
  if (k < 0) k = 0; /* k == 0: C = beta*C, legal for both calls */
  if (prec == SF_PREC_BF16) {
    SF_BLAS_CHECK(cublasGemmEx(h, ta, tb, m, n, k, &one, A, SF_BLAS_R_16BF, lda, B, SF_BLAS_R_16BF, ldb, &beta, C,
                               SF_BLAS_R_32F, ldc, SF_BLAS_COMPUTE_32F, SF_BLAS_GEMM_DEFAULT));
  } else if (prec == SF_PREC_TF32) {
    SF_BLAS_CHECK(cublasGemmEx(h, ta, tb, m, n, k, &one, A, SF_BLAS_R_32F, lda, B, SF_BLAS_R_32F, ldb, &beta, C,
                               SF_BLAS_R_32F, ldc, SF_BLAS_COMPUTE_32F_TF32, SF_BLAS_GEMM_DEFAULT));
  } else {
    SF_BLAS_CHECK(cublasSgemm(h, ta, tb, m, n, k, &one, (const float *)A, lda, (const float *)B, ldb, &beta, C, ldc));
  }
}
