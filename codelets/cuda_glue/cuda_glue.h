/* Private header of the CUDA wrappers in codelets/cuda_glue/<op>_cuda.c (declared in
 * scaffold/codelets_cuda.h): the worker's stream and cuBLAS handle, the cl_arg check, contiguous-block
 * accessors; the cl_arg structs are the codelets' own (scaffold/codelet_args.h). Only meaningful when
 * StarPU has CUDA and the kernels are linked (SF_HAVE_CUDA_CODELETS); the .c files compile to nothing
 * otherwise. */
#ifndef SF_CUDA_GLUE_H
#define SF_CUDA_GLUE_H

#include "../codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/codelets_cuda.h"

#if defined(STARPU_USE_CUDA) && defined(SF_HAVE_CUDA_CODELETS)
#define SF_CUDA_GLUE 1
#include <starpu_cublas_v2.h>

#include "scaffold/ops_cuda.h"

#define SF_CU_STREAM starpu_cuda_get_local_stream()
#define SF_CU_BLAS starpu_cublas_get_local_handle()

/* cl_arg of the running task, checked to be `size` bytes (sizeof the op's struct in scaffold/codelet_args.h) */
const void *sf_cu_args(const char *codelet, void *cl_arg, size_t size);
#define SF_CU_ARGS(type, codelet, cl_arg) ((const type *)sf_cu_args(codelet, cl_arg, sizeof(type)))
/* Device pointer of a block buffer, which must be contiguous (StarPU allocates CUDA blocks so). */
float *sf_cu_blk(void *iface, const char *what);
/* Aborts with the CUDA call and message unless e == cudaSuccess. */
void sf_cu_check(cudaError_t e, const char *call);

#endif
#endif
