/* BLAS half of the GPU vendor header: cuBLAS names used by the GEMM-based kernels (conv3d, conv1,
 * upconv3d), mapped to hipBLAS under SF_USE_HIP (ROCm 5.x hipBLAS API: hipblasDatatype_t types and
 * compute type). Include after gpu_vendor.h. sf_gpu_gemm (gpu_common.h) is the only caller. */
#ifndef SF_GPU_BLAS_H
#define SF_GPU_BLAS_H

#include "scaffold/gpu_vendor.h"

#ifdef SF_USE_HIP
#include <hipblas/hipblas.h>
#define cublasHandle_t hipblasHandle_t
#define cublasStatus_t hipblasStatus_t
#define CUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define cublasOperation_t hipblasOperation_t
#define CUBLAS_OP_N HIPBLAS_OP_N
#define CUBLAS_OP_T HIPBLAS_OP_T
#define cublasSetStream hipblasSetStream
#define cublasSgemm hipblasSgemm
#define cublasGemmEx hipblasGemmEx
#define SF_BLAS_R_16BF HIPBLAS_R_16B
#define SF_BLAS_R_32F HIPBLAS_R_32F
#define SF_BLAS_COMPUTE_32F HIPBLAS_R_32F
#define SF_BLAS_COMPUTE_32F_TF32 HIPBLAS_R_32F /* no TF32 on this path: plain fp32 */
#define SF_BLAS_GEMM_DEFAULT HIPBLAS_GEMM_DEFAULT
#else
#include <cublas_v2.h>
#define SF_BLAS_R_16BF CUDA_R_16BF
#define SF_BLAS_R_32F CUDA_R_32F
#define SF_BLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define SF_BLAS_COMPUTE_32F_TF32 CUBLAS_COMPUTE_32F_FAST_TF32
#define SF_BLAS_GEMM_DEFAULT CUBLAS_GEMM_DEFAULT
#endif

/* Reports a failed BLAS call like SF_CUDA_CHECK (the status number and name). */
__attribute__((noreturn)) void sf_gpu_blas_fail(const char *file, int line, const char *call, int status);
#define SF_BLAS_CHECK(call)                                                                           \
  do {                                                                                                \
    cublasStatus_t sf_b_ = (call);                                                                    \
    if (sf_b_ != CUBLAS_STATUS_SUCCESS) sf_gpu_blas_fail(__FILE__, __LINE__, #call, (int)sf_b_);      \
  } while (0)

/* Column-major C: (m,n) fp32 = op(A) . op(B) + beta*C with alpha 1, queued on s. prec (gpu_common.h):
 * SF_PREC_FP32: A, B fp32, cublasSgemm (strict fp32 unless the handle's math mode says otherwise);
 * SF_PREC_BF16: A, B bf16 bits, cublasGemmEx with fp32 accumulation; SF_PREC_TF32: A, B fp32,
 * cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32. Binds h to s. */
void sf_gpu_gemm(cublasHandle_t h, cudaStream_t s, int prec, cublasOperation_t ta, cublasOperation_t tb, int m,
                 int n, int k, const void *A, int lda, const void *B, int ldb, float beta, float *C, int ldc);

#endif
