/* CUDA wrappers of the optimizer codelets (codelets/optim.c): per-tensor gradient sum of squares, the
 * clip task (fixed-order total, then [coefficient, norm], same float operations as the CPU) and Adam,
 * SGD and RMSprop with the coefficient read on the device. */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

/* buffers: [part (1) double, g] */
void sf_sumsq_cuda(void *buffers[], void *cl_arg)
{
  cudaStream_t s = SF_CU_STREAM;
  double *acc = sf_vec_d(buffers[0]);
  sf_cu_check(cudaMemsetAsync(acc, 0, sizeof(double), s), "cudaMemsetAsync(sumsq)");
  sf_cuda_sumsq_partial(s, acc, sf_vec_f(buffers[1]), sf_vec_n(buffers[1]));
}

/* buffers: [clip (2) double, part_0 .. part_{P-1}] */
void sf_clip_coef_cuda(void *buffers[], void *cl_arg)
{
  const sf_clip_args *a = SF_CU_ARGS(sf_clip_args, "clip_coef", cl_arg);
  int nparts = sf_task_nbuffers() - 1;
  const double *parts[256];
  SF_ASSERT(nparts >= 0 && nparts <= 256);
  for (int k = 0; k < nparts; k++) parts[k] = sf_vec_d(buffers[1 + k]);
  sf_cuda_clip_coef(SF_CU_STREAM, sf_vec_d(buffers[0]), parts, nparts, a->max_norm);
}

/* buffers: [w, m, v, g, clip?] */
void sf_adam_cuda(void *buffers[], void *cl_arg)
{
  const sf_adam_args *a = SF_CU_ARGS(sf_adam_args, "adam", cl_arg);
  sf_cuda_adam_step_coef(SF_CU_STREAM, sf_vec_f(buffers[0]), sf_vec_f(buffers[1]), sf_vec_f(buffers[2]),
                         sf_vec_f(buffers[3]), sf_vec_n(buffers[0]), a->lr, a->beta1, a->beta2, a->eps, a->step,
                         a->has_clip ? sf_vec_d(buffers[4]) : NULL);
}

/* buffers: [w, g, clip?] */
void sf_sgd_cuda(void *buffers[], void *cl_arg)
{
  const sf_sgd_args *a = SF_CU_ARGS(sf_sgd_args, "sgd", cl_arg);
  sf_cuda_sgd_step(SF_CU_STREAM, sf_vec_f(buffers[0]), sf_vec_f(buffers[1]), sf_vec_n(buffers[0]), a->lr,
                   a->has_clip ? sf_vec_d(buffers[2]) : NULL);
}

/* buffers: [w, sq, g, clip?] */
void sf_rmsprop_cuda(void *buffers[], void *cl_arg)
{
  const sf_rmsprop_args *a = SF_CU_ARGS(sf_rmsprop_args, "rmsprop", cl_arg);
  sf_cuda_rmsprop_step(SF_CU_STREAM, sf_vec_f(buffers[0]), sf_vec_f(buffers[1]), sf_vec_f(buffers[2]),
                       sf_vec_n(buffers[0]), a->lr, a->alpha, a->eps, a->has_clip ? sf_vec_d(buffers[3]) : NULL);
}

#endif
