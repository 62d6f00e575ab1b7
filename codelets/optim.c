/* StarPU glue for the optimizer part of a step (spec §6.1): per-tensor gradient sum of squares, one
 * clip task that reads every partial in a fixed order and writes [clip coefficient, total norm],
 * and one optimizer task (torch.optim.Adam, SGD or RMSprop) per parameter tensor reading that
 * coefficient. CPU =
 * src/kernels/elementwise/optim.c. */
#include <math.h>
#include <string.h>

#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

/* buffers: [part (1) double, g] */
static void sumsq_cpu(void *buffers[], void *cl_arg)
{
  double *acc = sf_vec_d(buffers[0]);
  *acc = 0;
  sf_sumsq_partial(acc, sf_vec_f(buffers[1]), sf_vec_n(buffers[1]));
}

/* buffers: [clip (2) double, part_0 .. part_{P-1}] */
static void clip_coef_cpu(void *buffers[], void *cl_arg)
{
  const sf_clip_args *a = cl_arg;
  int nparts = sf_task_nbuffers() - 1;
  double total = 0;
  for (int k = 0; k < nparts; k++) total += sf_vec_d(buffers[1 + k])[0];
  double *clip = sf_vec_d(buffers[0]);
  clip[0] = sf_clip_coef(total, a->max_norm);
  clip[1] = sqrt(total);
}

/* buffers: [w, m, v, g, clip?] */
static void adam_cpu(void *buffers[], void *cl_arg)
{
  const sf_adam_args *a = cl_arg;
  float scale = a->has_clip ? (float)sf_vec_d(buffers[4])[0] : 1.0f;
  sf_adam_step(sf_vec_f(buffers[0]), sf_vec_f(buffers[1]), sf_vec_f(buffers[2]), sf_vec_f(buffers[3]),
               sf_vec_n(buffers[0]), a->lr, a->beta1, a->beta2, a->eps, a->step, scale);
}

/* buffers: [w, g, clip?] */
static void sgd_cpu(void *buffers[], void *cl_arg)
{
  const sf_sgd_args *a = cl_arg;
  float scale = a->has_clip ? (float)sf_vec_d(buffers[2])[0] : 1.0f;
  sf_sgd_step(sf_vec_f(buffers[0]), sf_vec_f(buffers[1]), sf_vec_n(buffers[0]), a->lr, scale);
}

/* buffers: [w, sq, g, clip?] */
static void rmsprop_cpu(void *buffers[], void *cl_arg)
{
  const sf_rmsprop_args *a = cl_arg;
  float scale = a->has_clip ? (float)sf_vec_d(buffers[3])[0] : 1.0f;
  sf_rmsprop_step(sf_vec_f(buffers[0]), sf_vec_f(buffers[1]), sf_vec_f(buffers[2]), sf_vec_n(buffers[0]), a->lr,
                  a->alpha, a->eps, scale);
}

SF_CODELET(sumsq, v1, sumsq_cpu, sf_sumsq_cuda, sf_sumsq_opencl);
SF_CODELET(clip_coef, v1, clip_coef_cpu, sf_clip_coef_cuda, sf_clip_coef_opencl);
SF_CODELET(adam, v1, adam_cpu, sf_adam_cuda, sf_adam_opencl);
SF_OPENCL_CODELET(sumsq, SF_OCL_EXACT_IEEE); /* float*float is exact in double: fma-proof */
SF_OPENCL_CODELET(clip_coef, SF_OCL_EXACT_IEEE);
SF_OPENCL_CODELET(adam, SF_OCL_EXACT_IEEE);
SF_CODELET(sgd, v1, sgd_cpu, sf_sgd_cuda, sf_sgd_opencl);
SF_CODELET(rmsprop, v1, rmsprop_cpu, sf_rmsprop_cuda, sf_rmsprop_opencl);
SF_OPENCL_CODELET(sgd, SF_OCL_EXACT_IEEE);
SF_OPENCL_CODELET(rmsprop, SF_OCL_EXACT_IEEE);

void insert_task_sumsq(const sf_topt *o, sf_handle part, sf_handle g)
{
  sf_buf b = {.n = 0};
  sf_buf_add(&b, part, STARPU_W);
  sf_buf_add(&b, g, STARPU_R);
  sf_submit(&cl_sumsq, o, NULL, 0, &b, 2.0 * (double)sf_vector_nx(g));
}

void insert_task_clip_coef(const sf_topt *o, sf_handle clip, const sf_handle *parts, int nparts, float max_norm)
{
  sf_clip_args a = {max_norm};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, clip, STARPU_W);
  for (int k = 0; k < nparts; k++) sf_buf_add(&b, parts[k], STARPU_R);
  sf_submit(&cl_clip_coef, o, &a, sizeof a, &b, (double)nparts);
}

void insert_task_adam(const sf_topt *o, sf_handle w, sf_handle m, sf_handle v, sf_handle g, sf_handle clip,
                      double lr, double beta1, double beta2, double eps, long step)
{
  sf_adam_args a = {lr, beta1, beta2, eps, step, clip != NULL};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, w, STARPU_RW);
  sf_buf_add(&b, m, STARPU_RW);
  sf_buf_add(&b, v, STARPU_RW);
  sf_buf_add(&b, g, STARPU_R);
  if (clip) sf_buf_add(&b, clip, STARPU_R);
  sf_submit(&cl_adam, o, &a, sizeof a, &b, 12.0 * (double)sf_vector_nx(w));
}

void insert_task_sgd(const sf_topt *o, sf_handle w, sf_handle g, sf_handle clip, double lr)
{
  sf_sgd_args a = {lr, clip != NULL};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, w, STARPU_RW);
  sf_buf_add(&b, g, STARPU_R);
  if (clip) sf_buf_add(&b, clip, STARPU_R);
  sf_submit(&cl_sgd, o, &a, sizeof a, &b, 3.0 * (double)sf_vector_nx(w));
}

void insert_task_rmsprop(const sf_topt *o, sf_handle w, sf_handle sq, sf_handle g, sf_handle clip, double lr,
                         double alpha, double eps)
{
  sf_rmsprop_args a = {lr, alpha, eps, clip != NULL};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, w, STARPU_RW);
  sf_buf_add(&b, sq, STARPU_RW);
  sf_buf_add(&b, g, STARPU_R);
  if (clip) sf_buf_add(&b, clip, STARPU_R);
  sf_submit(&cl_rmsprop, o, &a, sizeof a, &b, 9.0 * (double)sf_vector_nx(w));
}
