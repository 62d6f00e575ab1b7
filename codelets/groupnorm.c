/* StarPU glue for GroupNorm (+ fused ReLU), exact over the whole volume although the volume is split
 * into slabs (docs/architecture.md §5): per-slab partial statistics (reduced in slab order by sum_d), per-slab
 * normalize; backward per-slab partial sums, one reduce task that also writes dgamma/dbeta, then
 * per-slab dx. CPU = the vector kernels of src/kernels/groupnorm/groupnorm.c. */
#include <string.h>

#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

/* buffers: [stats_part (G,2) double, x] */
static void groupnorm_stats_cpu(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = cl_arg;
  double *part = sf_vec_d(buffers[0]);
  memset(part, 0, sf_vec_n(buffers[0]) * sizeof(double));
  sf_groupnorm_stats(part, sf_blk_f(buffers[1]), sf_blk_vox(buffers[1], a->C), a->C, a->G);
}

/* buffers: [y, x, stats, gamma, beta] */
static void groupnorm_fwd_cpu(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = cl_arg;
  sf_groupnorm_forward(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), sf_vec_d(buffers[2]), sf_vec_f(buffers[3]),
                       sf_vec_f(buffers[4]), sf_blk_vox(buffers[1], a->C), a->ntotal, a->C, a->G, a->eps, a->relu);
}

/* buffers: [bwd_part (2G+2C) double, dy, y, x, stats, gamma] */
static void groupnorm_bwd_stats_cpu(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = cl_arg;
  double *part = sf_vec_d(buffers[0]);
  memset(part, 0, sf_vec_n(buffers[0]) * sizeof(double));
  sf_groupnorm_backward_stats(part, part + 2 * a->G, sf_blk_f(buffers[1]), sf_blk_f(buffers[2]), sf_blk_f(buffers[3]),
                              sf_vec_d(buffers[4]), sf_vec_f(buffers[5]), sf_blk_vox(buffers[3], a->C), a->ntotal,
                              a->C, a->G, a->eps, a->relu);
}

/* buffers: [bwd_sum, dgamma, dbeta, part_0 .. part_{S-1}]: fixed-order sum, then the parameter
 * gradients (written: each step's gradient is fresh) */
static void groupnorm_bwd_reduce_cpu(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = cl_arg;
  double *sum = sf_vec_d(buffers[0]);
  size_t n = sf_vec_n(buffers[0]);
  int nparts = sf_task_nbuffers() - 3;
  memset(sum, 0, n * sizeof(double));
  for (int k = 0; k < nparts; k++) {
    const double *p = sf_vec_d(buffers[3 + k]);
    for (size_t i = 0; i < n; i++) sum[i] += p[i];
  }
  float *dgamma = sf_vec_f(buffers[1]), *dbeta = sf_vec_f(buffers[2]);
  memset(dgamma, 0, (size_t)a->C * sizeof(float));
  memset(dbeta, 0, (size_t)a->C * sizeof(float));
  sf_groupnorm_param_grads(dgamma, dbeta, sum + 2 * a->G, a->C);
}

/* buffers: [dx, dy, y, x, stats, bwd_sum, gamma] */
static void groupnorm_bwd_data_cpu(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = cl_arg;
  sf_groupnorm_backward_data(sf_blk_f(buffers[0]), sf_blk_f(buffers[1]), sf_blk_f(buffers[2]), sf_blk_f(buffers[3]),
                             sf_vec_d(buffers[4]), sf_vec_d(buffers[5]), sf_vec_f(buffers[6]),
                             sf_blk_vox(buffers[3], a->C), a->ntotal, a->C, a->G, a->eps, a->relu);
}

SF_CODELET(groupnorm_stats, v1, groupnorm_stats_cpu, sf_groupnorm_stats_cuda, sf_groupnorm_stats_opencl);
SF_CODELET(groupnorm_fwd, v1, groupnorm_fwd_cpu, sf_groupnorm_fwd_cuda, sf_groupnorm_fwd_opencl);
SF_CODELET(groupnorm_bwd_stats, v1, groupnorm_bwd_stats_cpu, sf_groupnorm_bwd_stats_cuda, sf_groupnorm_bwd_stats_opencl);
SF_CODELET(groupnorm_bwd_reduce, v1, groupnorm_bwd_reduce_cpu, sf_groupnorm_bwd_reduce_cuda, sf_groupnorm_bwd_reduce_opencl);
SF_CODELET(groupnorm_bwd_data, v1, groupnorm_bwd_data_cpu, sf_groupnorm_bwd_data_cuda, sf_groupnorm_bwd_data_opencl);
SF_OPENCL_CODELET(groupnorm_stats, SF_OCL_EXACT_IEEE); /* float*float is exact in double: fma-proof */
SF_OPENCL_CODELET(groupnorm_fwd, SF_OCL_INEXACT);
SF_OPENCL_CODELET(groupnorm_bwd_stats, SF_OCL_INEXACT);
SF_OPENCL_CODELET(groupnorm_bwd_reduce, SF_OCL_EXACT_IEEE);
SF_OPENCL_CODELET(groupnorm_bwd_data, SF_OCL_INEXACT);

static double elems(sf_handle slab)
{
  return (double)sf_block_nx(slab) * sf_block_ny(slab) * sf_block_nz(slab);
}

void insert_task_groupnorm_stats(const sf_topt *o, sf_handle stats_part, sf_handle x, int C, int G)
{
  sf_groupnorm_args a = {.C = C, .G = G};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, stats_part, STARPU_W);
  sf_buf_add(&b, x, STARPU_R);
  sf_submit(&cl_groupnorm_stats, o, &a, sizeof a, &b, 3.0 * elems(x));
}

void insert_task_groupnorm_forward(const sf_topt *o, sf_handle y, sf_handle x, sf_handle stats, sf_handle gamma,
                                   sf_handle beta, size_t ntotal, int C, int G, float eps, int relu)
{
  sf_groupnorm_args a = {.ntotal = ntotal, .C = C, .G = G, .relu = relu, .eps = eps};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, y, STARPU_W);
  sf_buf_add(&b, x, STARPU_R);
  sf_buf_add(&b, stats, STARPU_R);
  sf_buf_add(&b, gamma, STARPU_R);
  sf_buf_add(&b, beta, STARPU_R);
  sf_submit(&cl_groupnorm_fwd, o, &a, sizeof a, &b, (relu ? 3.0 : 2.0) * elems(x));
}

void insert_task_groupnorm_backward_stats(const sf_topt *o, sf_handle bwd_part, sf_handle dy, sf_handle y,
                                          sf_handle x, sf_handle stats, sf_handle gamma, size_t ntotal, int C,
                                          int G, float eps, int relu)
{
  sf_groupnorm_args a = {.ntotal = ntotal, .C = C, .G = G, .relu = relu, .eps = eps};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, bwd_part, STARPU_W);
  sf_buf_add(&b, dy, STARPU_R);
  sf_buf_add(&b, y, STARPU_R);
  sf_buf_add(&b, x, STARPU_R);
  sf_buf_add(&b, stats, STARPU_R);
  sf_buf_add(&b, gamma, STARPU_R);
  sf_submit(&cl_groupnorm_bwd_stats, o, &a, sizeof a, &b, 4.0 * elems(x));
}

void insert_task_groupnorm_backward_reduce(const sf_topt *o, sf_handle bwd_sum, sf_handle dgamma, sf_handle dbeta,
                                           const sf_handle *parts, int nparts, int C, int G)
{
  sf_groupnorm_args a = {.C = C, .G = G};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, bwd_sum, STARPU_W);
  sf_buf_add(&b, dgamma, STARPU_W);
  sf_buf_add(&b, dbeta, STARPU_W);
  for (int k = 0; k < nparts; k++) sf_buf_add(&b, parts[k], STARPU_R);
  sf_submit(&cl_groupnorm_bwd_reduce, o, &a, sizeof a, &b, (double)nparts * (2 * G + 2 * C));
}

void insert_task_groupnorm_backward_data(const sf_topt *o, sf_handle dx, sf_handle dy, sf_handle y, sf_handle x,
                                         sf_handle stats, sf_handle bwd_sum, sf_handle gamma, size_t ntotal, int C,
                                         int G, float eps, int relu)
{
  sf_groupnorm_args a = {.ntotal = ntotal, .C = C, .G = G, .relu = relu, .eps = eps};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dx, STARPU_W);
  sf_buf_add(&b, dy, STARPU_R);
  sf_buf_add(&b, y, STARPU_R);
  sf_buf_add(&b, x, STARPU_R);
  sf_buf_add(&b, stats, STARPU_R);
  sf_buf_add(&b, bwd_sum, STARPU_R);
  sf_buf_add(&b, gamma, STARPU_R);
  sf_submit(&cl_groupnorm_bwd_data, o, &a, sizeof a, &b, 4.0 * elems(x));
}
