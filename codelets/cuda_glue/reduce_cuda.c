/* CUDA wrappers of the fixed-order reductions and fills (codelets/reduce.c): out = parts[0] + parts[1]
 * + ... in part order (bitwise the CPU sum), and zeroing a vector of any element size. */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

/* buffers: [out (float vector), part_0 .. part_{S-1}] */
void sf_sum_f_cuda(void *buffers[], void *cl_arg)
{
  int nparts = sf_task_nbuffers() - 1;
  const float *parts[256];
  SF_ASSERT(nparts >= 1 && nparts <= 256);
  for (int k = 0; k < nparts; k++) parts[k] = sf_vec_f(buffers[1 + k]);
  sf_cuda_sum_parts_f(SF_CU_STREAM, sf_vec_f(buffers[0]), parts, nparts, sf_vec_n(buffers[0]));
}

/* buffers: [out (double vector), part_0 .. part_{S-1}] */
void sf_sum_d_cuda(void *buffers[], void *cl_arg)
{
  int nparts = sf_task_nbuffers() - 1;
  const double *parts[256];
  SF_ASSERT(nparts >= 1 && nparts <= 256);
  for (int k = 0; k < nparts; k++) parts[k] = sf_vec_d(buffers[1 + k]);
  sf_cuda_sum_parts_d(SF_CU_STREAM, sf_vec_d(buffers[0]), parts, nparts, sf_vec_n(buffers[0]));
}

/* buffers: [h (vector)] */
void sf_zero_cuda(void *buffers[], void *cl_arg)
{
  sf_cu_check(cudaMemsetAsync((void *)STARPU_VECTOR_GET_PTR(buffers[0]), 0,
                              sf_vec_n(buffers[0]) * STARPU_VECTOR_GET_ELEMSIZE(buffers[0]), SF_CU_STREAM),
              "cudaMemsetAsync(zero)");
}

#endif
