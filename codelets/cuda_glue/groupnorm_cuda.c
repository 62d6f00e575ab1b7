/* CUDA wrappers of the GroupNorm (+ fused ReLU) codelets (codelets/groupnorm.c): per-slab partial
 * statistics (zeroed, then accumulated), normalize, backward partial sums, the fixed-order reduce that
 * also writes dgamma/dbeta, and dx. Statistics and partial sums are device doubles. */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

#define GN_ARGS(name) SF_CU_ARGS(sf_groupnorm_args, name, cl_arg)

/* buffers: [stats_part (G,2) double, x] */
void sf_groupnorm_stats_cuda(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = GN_ARGS("groupnorm_stats");
  cudaStream_t s = SF_CU_STREAM;
  double *part = sf_vec_d(buffers[0]);
  sf_cu_check(cudaMemsetAsync(part, 0, sf_vec_n(buffers[0]) * sizeof(double), s), "cudaMemsetAsync(stats)");
  sf_cuda_groupnorm_stats(s, part, sf_cu_blk(buffers[1], "groupnorm_stats x"), sf_blk_vox(buffers[1], a->C), a->C,
                          a->G);
}

/* buffers: [y, x, stats, gamma, beta] */
void sf_groupnorm_fwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = GN_ARGS("groupnorm_fwd");
  sf_cuda_groupnorm_forward(SF_CU_STREAM, sf_cu_blk(buffers[0], "groupnorm_fwd y"),
                            sf_cu_blk(buffers[1], "groupnorm_fwd x"), sf_vec_d(buffers[2]), sf_vec_f(buffers[3]),
                            sf_vec_f(buffers[4]), sf_blk_vox(buffers[1], a->C), a->ntotal, a->C, a->G, a->eps, a->relu);
}

/* buffers: [bwd_part (2G+2C) double, dy, y, x, stats, gamma] */
void sf_groupnorm_bwd_stats_cuda(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = GN_ARGS("groupnorm_bwd_stats");
  cudaStream_t s = SF_CU_STREAM;
  double *part = sf_vec_d(buffers[0]);
  sf_cu_check(cudaMemsetAsync(part, 0, sf_vec_n(buffers[0]) * sizeof(double), s), "cudaMemsetAsync(bwd_part)");
  sf_cuda_groupnorm_backward_stats(s, part, part + 2 * a->G, sf_cu_blk(buffers[1], "groupnorm_bwd_stats dy"),
                                   sf_cu_blk(buffers[2], "groupnorm_bwd_stats y"),
                                   sf_cu_blk(buffers[3], "groupnorm_bwd_stats x"), sf_vec_d(buffers[4]),
                                   sf_vec_f(buffers[5]), sf_blk_vox(buffers[3], a->C), a->ntotal, a->C, a->G, a->eps,
                                   a->relu);
}

/* buffers: [bwd_sum, dgamma, dbeta, part_0 .. part_{S-1}]: fixed-order sum, then the parameter
 * gradients (written) */
void sf_groupnorm_bwd_reduce_cuda(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = GN_ARGS("groupnorm_bwd_reduce");
  cudaStream_t s = SF_CU_STREAM;
  int nparts = sf_task_nbuffers() - 3;
  const double *parts[256];
  SF_ASSERT(nparts >= 1 && nparts <= 256);
  for (int k = 0; k < nparts; k++) parts[k] = sf_vec_d(buffers[3 + k]);
  double *sum = sf_vec_d(buffers[0]);
  sf_cuda_sum_parts_d(s, sum, parts, nparts, sf_vec_n(buffers[0]));
  float *dgamma = sf_vec_f(buffers[1]), *dbeta = sf_vec_f(buffers[2]);
  sf_cu_check(cudaMemsetAsync(dgamma, 0, (size_t)a->C * sizeof(float), s), "cudaMemsetAsync(dgamma)");
  sf_cu_check(cudaMemsetAsync(dbeta, 0, (size_t)a->C * sizeof(float), s), "cudaMemsetAsync(dbeta)");
  sf_cuda_groupnorm_param_grads(s, dgamma, dbeta, sum + 2 * a->G, a->C);
}

/* buffers: [dx, dy, y, x, stats, bwd_sum, gamma] */
void sf_groupnorm_bwd_data_cuda(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = GN_ARGS("groupnorm_bwd_data");
  sf_cuda_groupnorm_backward_data(SF_CU_STREAM, sf_cu_blk(buffers[0], "groupnorm_bwd_data dx"),
                                  sf_cu_blk(buffers[1], "groupnorm_bwd_data dy"),
                                  sf_cu_blk(buffers[2], "groupnorm_bwd_data y"),
                                  sf_cu_blk(buffers[3], "groupnorm_bwd_data x"), sf_vec_d(buffers[4]),
                                  sf_vec_d(buffers[5]), sf_vec_f(buffers[6]), sf_blk_vox(buffers[3], a->C), a->ntotal,
                                  a->C, a->G, a->eps, a->relu);
}

#endif
