/* StarPU glue for the fixed-order reductions and fills of the step graph: out = parts[0] + parts[1]
 * + ... summed in that order (so the result never depends on which worker ran which part: the
 * more_determinism scheme for weight gradients, and always for statistics, loss and Dice sums), and
 * zeroing a gradient before RW|COMMUTE accumulation. The loops are trivial, so they live here. */
#include <string.h>

#include "codelet_common.h"
#include "scaffold/opencl.h"

/* buffers: [out (float vector), part_0 .. part_{S-1}] */
static void sum_f_cpu(void *buffers[], void *cl_arg)
{
  float *out = sf_vec_f(buffers[0]);
  size_t n = sf_vec_n(buffers[0]);
  int nparts = sf_task_nbuffers() - 1;
  memcpy(out, sf_vec_f(buffers[1]), n * sizeof(float));
  for (int k = 1; k < nparts; k++) {
    const float *restrict p = sf_vec_f(buffers[1 + k]);
    for (size_t i = 0; i < n; i++) out[i] += p[i];
  }
}

/* buffers: [out (double vector), part_0 .. part_{S-1}] */
static void sum_d_cpu(void *buffers[], void *cl_arg)
{
  double *out = sf_vec_d(buffers[0]);
  size_t n = sf_vec_n(buffers[0]);
  int nparts = sf_task_nbuffers() - 1;
  memcpy(out, sf_vec_d(buffers[1]), n * sizeof(double));
  for (int k = 1; k < nparts; k++) {
    const double *restrict p = sf_vec_d(buffers[1 + k]);
    for (size_t i = 0; i < n; i++) out[i] += p[i];
  }
}

/* buffers: [h (vector)] */
static void zero_cpu(void *buffers[], void *cl_arg)
{
  memset((void *)STARPU_VECTOR_GET_PTR(buffers[0]), 0, sf_vec_n(buffers[0]) * STARPU_VECTOR_GET_ELEMSIZE(buffers[0]));
}

SF_CODELET(sum_f, v1, sum_f_cpu, sf_sum_f_cuda, sf_sum_f_opencl);
SF_CODELET(sum_d, v1, sum_d_cpu, sf_sum_d_cuda, sf_sum_d_opencl);
SF_CODELET(zero, v1, zero_cpu, sf_zero_cuda, sf_zero_opencl);
SF_OPENCL_CODELET(sum_f, SF_OCL_EXACT_IEEE);
SF_OPENCL_CODELET(sum_d, SF_OCL_EXACT);
SF_OPENCL_CODELET(zero, SF_OCL_EXACT);

static void sum(struct starpu_codelet *cl, const sf_topt *o, sf_handle out, const sf_handle *parts, int nparts)
{
  SF_ASSERT(nparts >= 1);
  sf_buf b = {.n = 0};
  sf_buf_add(&b, out, STARPU_W);
  for (int k = 0; k < nparts; k++) sf_buf_add(&b, parts[k], STARPU_R);
  sf_submit(cl, o, NULL, 0, &b, (double)(nparts - 1) * sf_vector_nx(out));
}

void insert_task_sum_f(const sf_topt *o, sf_handle out, const sf_handle *parts, int nparts)
{
  sum(&cl_sum_f, o, out, parts, nparts);
}

void insert_task_sum_d(const sf_topt *o, sf_handle out, const sf_handle *parts, int nparts)
{
  sum(&cl_sum_d, o, out, parts, nparts);
}

void insert_task_zero(const sf_topt *o, sf_handle h)
{
  sf_buf b = {.n = 0};
  sf_buf_add(&b, h, STARPU_W);
  sf_submit(&cl_zero, o, NULL, 0, &b, 0.0);
}
