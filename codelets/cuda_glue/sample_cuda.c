/* CUDA wrapper of the sample-loading codelet (codelets/sample.c): the host sample (which the caller
 * keeps valid until the step has run) is copied straight into the device copy of the handle. */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

/* buffers: [dst] */
void sf_sample_load_cuda(void *buffers[], void *cl_arg)
{
  const sf_sample_args *a = SF_CU_ARGS(sf_sample_args, "sample_load", cl_arg);
  cudaStream_t s = SF_CU_STREAM;
  void *iface = buffers[0];
  if (!a->is_block) {
    sf_cu_check(cudaMemcpyAsync((void *)STARPU_VECTOR_GET_PTR(iface), a->src, a->bytes, cudaMemcpyHostToDevice, s),
                "cudaMemcpyAsync(sample vector)");
    return;
  }
  size_t es = STARPU_BLOCK_GET_ELEMSIZE(iface), nx = STARPU_BLOCK_GET_NX(iface);
  size_t ny = STARPU_BLOCK_GET_NY(iface), nz = STARPU_BLOCK_GET_NZ(iface);
  size_t ldy = STARPU_BLOCK_GET_LDY(iface), ldz = STARPU_BLOCK_GET_LDZ(iface);
  char *dst = (char *)STARPU_BLOCK_GET_PTR(iface);
  const char *src = a->src;
  if (ldy == nx && ldz == nx * ny) {
    sf_cu_check(cudaMemcpyAsync(dst, src, a->bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync(sample block)");
    return;
  }
  for (size_t z = 0; z < nz; z++) /* plane by plane, so any leading dimensions work */
    sf_cu_check(cudaMemcpy2DAsync(dst + z * ldz * es, ldy * es, src + z * nx * ny * es, nx * es, nx * es, ny,
                                  cudaMemcpyHostToDevice, s),
                "cudaMemcpy2DAsync(sample block)");
}

#endif
