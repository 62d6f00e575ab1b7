/* Helpers shared by the GPU wrappers (cuda_glue.h): the cl_arg size check, the contiguous-block
 * accessor, the CUDA (HIP) error check and, on HIP workers, the hipBLAS handle. */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

const void *sf_cu_args(const char *codelet, void *cl_arg, size_t size)
{
  struct starpu_task *t = starpu_task_get_current();
  if (!t || !cl_arg || t->cl_arg_size != size)
    SF_ABORT(SF_CU_VENDOR " wrapper of %s: cl_arg has %zu bytes, expected %zu (the op's struct in "
             "scaffold/codelet_args.h)",
             codelet, t && cl_arg ? t->cl_arg_size : (size_t)0, size);
  return cl_arg;
}

float *sf_cu_blk(void *iface, const char *what)
{
  size_t nx = STARPU_BLOCK_GET_NX(iface), ny = STARPU_BLOCK_GET_NY(iface);
  if (STARPU_BLOCK_GET_LDY(iface) != nx || STARPU_BLOCK_GET_LDZ(iface) != nx * ny)
    SF_ABORT(SF_CU_VENDOR " wrapper: block %s is not contiguous (nx %zu ny %zu ldy %u ldz %u)", what, nx, ny,
             (unsigned)STARPU_BLOCK_GET_LDY(iface), (unsigned)STARPU_BLOCK_GET_LDZ(iface));
  return (float *)STARPU_BLOCK_GET_PTR(iface);
}

void sf_cu_check(cudaError_t e, const char *call)
{
  if (e != cudaSuccess) SF_ABORT(SF_CU_VENDOR " error in %s: %s", call, cudaGetErrorString(e));
}

#ifdef SF_USE_HIP
sf_gpu_blas_t sf_hip_blas(void)
{
  sf_gpu_blas_t h = starpu_hipblas_get_local_handle();
  if (!h)
    SF_ABORT("HIP wrapper: this worker has no hipBLAS handle (starpu_hipblas_init was not called after "
             "starpu_init)");
  return h;
}
#endif

#endif
