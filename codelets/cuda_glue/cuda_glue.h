/* Private header of the GPU wrappers in codelets/cuda_glue/<op>_cuda.c (declared in
 * scaffold/codelets_cuda.h): the worker's stream and BLAS handle, the cl_arg check, contiguous-block
 * accessors; the cl_arg structs are the codelets' own (scaffold/codelet_args.h). The wrappers are
 * written against CUDA names and serve CUDA workers (StarPU with CUDA, SF_HAVE_CUDA_CODELETS) or, the
 * same source compiled with SF_USE_HIP, HIP workers (StarPU >= 1.4 with HIP and hipBLAS,
 * SF_HAVE_HIP_CODELETS): scaffold/gpu_vendor.h maps the CUDA runtime names they use to HIP. Both
 * macros are set by cmake/Cuda.cmake, never together; without either the .c files compile to nothing. */
#ifndef SF_CUDA_GLUE_H
#define SF_CUDA_GLUE_H

#include "../codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/codelets_cuda.h"

#if defined(SF_HAVE_CUDA_CODELETS) && defined(SF_HAVE_HIP_CODELETS)
#error "SF_HAVE_CUDA_CODELETS and SF_HAVE_HIP_CODELETS: one GPU vendor per build (cmake/Cuda.cmake)"
#endif

#if defined(STARPU_USE_CUDA) && defined(SF_HAVE_CUDA_CODELETS)
#define SF_CUDA_GLUE 1
#define SF_CU_VENDOR "CUDA"
#include <starpu_cublas_v2.h>

#include "scaffold/ops_cuda.h"

#define SF_CU_STREAM starpu_cuda_get_local_stream()
#define SF_CU_BLAS starpu_cublas_get_local_handle()

#elif defined(STARPU_USE_HIP) && defined(SF_HAVE_HIP_CODELETS)
#ifndef SF_USE_HIP
#error "SF_HAVE_HIP_CODELETS needs SF_USE_HIP (cmake/Cuda.cmake defines both)"
#endif
#define SF_CUDA_GLUE 1
#define SF_CU_VENDOR "HIP"
#include <starpu_hip.h>
#include <starpu_hipblas.h>

#include "scaffold/gpu_vendor.h"
#include "scaffold/ops_cuda.h"

#define SF_CU_STREAM starpu_hip_get_local_stream()
#define SF_CU_BLAS sf_hip_blas()
/* The HIP worker's hipBLAS handle (starpu_hipblas_get_local_handle); aborts when there is none, i.e.
 * when starpu_hipblas_init was not called after starpu_init. */
sf_gpu_blas_t sf_hip_blas(void);
#endif

#ifdef SF_CUDA_GLUE
/* cl_arg of the running task, checked to be `size` bytes (sizeof the op's struct in scaffold/codelet_args.h) */
const void *sf_cu_args(const char *codelet, void *cl_arg, size_t size);
#define SF_CU_ARGS(type, codelet, cl_arg) ((const type *)sf_cu_args(codelet, cl_arg, sizeof(type)))
/* Device pointer of a block buffer, which must be contiguous (StarPU allocates CUDA blocks so). */
float *sf_cu_blk(void *iface, const char *what);
/* Aborts with the CUDA (HIP) call and message unless e == cudaSuccess. */
void sf_cu_check(cudaError_t e, const char *call);

#endif
#endif
