/* Private header of the CUDA wrappers in codelets/cuda_glue/<op>_cuda.c (declared in
 * scaffold/codelets_cuda.h): the worker's stream and cuBLAS handle, the cl_arg check, contiguous-block
 * accessors, and mirrors of the codelets' private cl_arg structs (same fields in the same order as in
 * codelets/<op>.c; a size mismatch aborts naming the codelet). Only meaningful when StarPU has CUDA and
 * the kernels are linked (SF_HAVE_CUDA_CODELETS); the .c files compile to nothing otherwise. */
#ifndef SF_CUDA_GLUE_H
#define SF_CUDA_GLUE_H

#include "../codelet_common.h"
#include "scaffold/codelets_cuda.h"

#if defined(STARPU_USE_CUDA) && defined(SF_HAVE_CUDA_CODELETS)
#define SF_CUDA_GLUE 1
#include <starpu_cublas_v2.h>

#include "scaffold/ops_cuda.h"

#define SF_CU_STREAM starpu_cuda_get_local_stream()
#define SF_CU_BLAS starpu_cublas_get_local_handle()

/* cl_arg of the running task, checked to be `size` bytes (the mirror below matches the codelet's struct) */
const void *sf_cu_args(const char *codelet, void *cl_arg, size_t size);
#define SF_CU_ARGS(type, codelet, cl_arg) ((const type *)sf_cu_args(codelet, cl_arg, sizeof(type)))
/* Device pointer of a block buffer, which must be contiguous (StarPU allocates CUDA blocks so). */
float *sf_cu_blk(void *iface, const char *what);
/* Aborts with the CUDA call and message unless e == cudaSuccess. */
void sf_cu_check(cudaError_t e, const char *call);

/* ---- cl_arg mirrors ---- */
typedef struct {
  int H, W, Cin, Cout;
  int has_lo, has_hi;
  int overwrite;
} sf_cu_conv3d_args; /* codelets/conv3d.c cl_conv3d_args */
typedef struct {
  int Cin, Cout;
  int overwrite;
} sf_cu_conv_args; /* codelets/conv1.c cl_conv1_args, codelets/upconv3d.c cl_upconv3d_args */
typedef struct {
  size_t ntotal;
  int C, G, relu;
  float eps;
} sf_cu_groupnorm_args; /* codelets/groupnorm.c cl_groupnorm_args */
typedef struct {
  int C;
  int has_add;
} sf_cu_maxpool3d_args; /* codelets/maxpool3d.c */
typedef struct {
  int Ca, Cb;
} sf_cu_concat_args; /* codelets/concat.c */
typedef struct {
  int K;
  float scale;
  int batch;
  int accumulate;
} sf_cu_loss_args; /* codelets/loss.c */
typedef struct {
  int K;
} sf_cu_dice_args; /* codelets/dice.c */
typedef struct {
  float max_norm;
} sf_cu_clip_args; /* codelets/optim.c cl_clip_args */
typedef struct {
  double lr, beta1, beta2, eps;
  long step;
  int has_clip;
} sf_cu_adam_args; /* codelets/optim.c cl_adam_args */
typedef struct {
  const void *src;
  size_t bytes;
  int is_block;
} sf_cu_sample_args; /* codelets/sample.c cl_sample_args */

#endif
#endif
