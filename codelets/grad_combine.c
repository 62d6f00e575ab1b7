/* StarPU glue for the gradient all-reduce (src/comm/allreduce.c): the combine step
 * acc = (acc + received) * scale, and a gate task that holds a receive buffer until this rank's
 * gradient is complete. Trivial loops, so the CPU code lives here. */
#include "codelet_common.h"

typedef struct {
  float scale;
} cl_combine_args;

/* buffers: [acc (float vector) RW, other (float vector) R] */
static void grad_combine_cpu(void *buffers[], void *cl_arg)
{
  const cl_combine_args *a = cl_arg;
  float *restrict acc = sf_vec_f(buffers[0]);
  const float *restrict o = sf_vec_f(buffers[1]);
  size_t n = sf_vec_n(buffers[0]);
  const float s = a->scale;
  if (s == 1.0f)
    for (size_t i = 0; i < n; i++) acc[i] += o[i];
  else
    for (size_t i = 0; i < n; i++) acc[i] = (acc[i] + o[i]) * s; /* as the host's batch mean: sum, then scale */
}

SF_CODELET(grad_combine, v1, grad_combine_cpu, SF_NONE, SF_NONE);

/* runs nowhere: only its data dependencies matter */
static struct starpu_codelet cl_gate = {.where = STARPU_NOWHERE, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "sf_gate"};

void insert_task_gate(const sf_topt *o, sf_handle gate, sf_handle after)
{
  sf_buf b = {.n = 0};
  sf_buf_add(&b, gate, STARPU_RW);
  sf_buf_add(&b, after, STARPU_R);
  sf_submit(&cl_gate, o, NULL, 0, &b, 0.0);
}

void insert_task_grad_combine(const sf_topt *o, sf_handle acc, sf_handle other, float scale)
{
  cl_combine_args a = {scale};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, acc, STARPU_RW);
  sf_buf_add(&b, other, STARPU_R);
  sf_submit(&cl_grad_combine, o, &a, sizeof a, &b, (double)sf_vector_nx(acc) * (scale == 1.0f ? 1 : 2));
}
