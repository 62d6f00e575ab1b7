/* OpenCL launchers of the GroupNorm codelets (codelets/groupnorm.c): per-slab statistics, normalize
 * (+ fused ReLU), backward per-slab sums, the fixed-order backward reduce that also writes dgamma /
 * dbeta, and the per-slab dx. Same buffers and cl_arg as the CPU functions; kernels in groupnorm.cl
 * and reduce.cl. Partial-sum buffers are written (the task's W mode), as the CPU code zeroes them. */
#include "ocl_internal.h"

#ifdef STARPU_USE_OPENCL

/* cl_arg fields passed straight to the kernels of groupnorm.cl (ntotal and relu are converted) */
SF_OCL_FIELD_IS(sf_groupnorm_args, C, cl_int);
SF_OCL_FIELD_IS(sf_groupnorm_args, G, cl_int);
SF_OCL_FIELD_IS(sf_groupnorm_args, eps, cl_float);

#define ARGS(name) (sf_ocl_check_args(name, sizeof(sf_groupnorm_args)), (const sf_groupnorm_args *)cl_arg)

/* buffers: [stats_part (G,2) double, x] */
void sf_groupnorm_stats_opencl(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = ARGS("groupnorm_stats");
  sf_ocl_buf part = sf_ocl_vector(buffers[0], 8, "groupnorm_stats part");
  sf_ocl_buf x = sf_ocl_block(buffers[1], 4, "groupnorm_stats x");
  if (STARPU_VECTOR_GET_NX(buffers[0]) != (uint32_t)(2 * a->G))
    SF_ABORT("OpenCL groupnorm_stats: partial has %u doubles, expected 2G = %d", STARPU_VECTOR_GET_NX(buffers[0]),
             2 * a->G);
  cl_ulong n = sf_ocl_vox(buffers[1], a->C);
  cl_int accumulate = 0;
  SF_OCL_LAUNCH(SF_OCL_K_gn_stats, (size_t)a->G, SF_OCL_BUF(part), SF_OCL_ARG(accumulate), SF_OCL_BUF(x),
                SF_OCL_ARG(n), SF_OCL_ARG(a->C), SF_OCL_ARG(a->G));
  sf_ocl_done();
}

/* buffers: [y, x, stats, gamma, beta] */
void sf_groupnorm_fwd_opencl(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = ARGS("groupnorm_fwd");
  sf_ocl_buf y = sf_ocl_block(buffers[0], 4, "groupnorm_fwd y"), x = sf_ocl_block(buffers[1], 4, "groupnorm_fwd x");
  sf_ocl_buf stats = sf_ocl_vector(buffers[2], 8, "groupnorm_fwd stats");
  sf_ocl_buf gamma = sf_ocl_vector(buffers[3], 4, "groupnorm_fwd gamma");
  sf_ocl_buf beta = sf_ocl_vector(buffers[4], 4, "groupnorm_fwd beta");
  cl_ulong n = sf_ocl_vox(buffers[1], a->C), ntotal = a->ntotal;
  cl_int relu = a->relu;
  SF_OCL_LAUNCH(SF_OCL_K_gn_fwd, (size_t)n * a->C, SF_OCL_BUF(y), SF_OCL_BUF(x), SF_OCL_BUF(stats),
                SF_OCL_BUF(gamma), SF_OCL_BUF(beta), SF_OCL_ARG(n), SF_OCL_ARG(ntotal), SF_OCL_ARG(a->C),
                SF_OCL_ARG(a->G), SF_OCL_ARG(a->eps), SF_OCL_ARG(relu));
  sf_ocl_done();
}

/* buffers: [bwd_part (2G+2C) double, dy, y, x, stats, gamma] */
void sf_groupnorm_bwd_stats_opencl(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = ARGS("groupnorm_bwd_stats");
  sf_ocl_buf part = sf_ocl_vector(buffers[0], 8, "groupnorm_bwd_stats part");
  if (STARPU_VECTOR_GET_NX(buffers[0]) != (uint32_t)(2 * a->G + 2 * a->C))
    SF_ABORT("OpenCL groupnorm_bwd_stats: partial has %u doubles, expected 2G+2C = %d",
             STARPU_VECTOR_GET_NX(buffers[0]), 2 * a->G + 2 * a->C);
  sf_ocl_buf dy = sf_ocl_block(buffers[1], 4, "groupnorm_bwd_stats dy");
  sf_ocl_buf y = sf_ocl_block(buffers[2], 4, "groupnorm_bwd_stats y");
  sf_ocl_buf x = sf_ocl_block(buffers[3], 4, "groupnorm_bwd_stats x");
  sf_ocl_buf stats = sf_ocl_vector(buffers[4], 8, "groupnorm_bwd_stats stats");
  sf_ocl_buf gamma = sf_ocl_vector(buffers[5], 4, "groupnorm_bwd_stats gamma");
  cl_ulong n = sf_ocl_vox(buffers[3], a->C), ntotal = a->ntotal;
  cl_int relu = a->relu, accumulate = 0;
  SF_OCL_LAUNCH(SF_OCL_K_gn_bwd_stats, (size_t)a->G, SF_OCL_BUF(part), SF_OCL_ARG(accumulate), SF_OCL_BUF(dy),
                SF_OCL_BUF(y), SF_OCL_BUF(x), SF_OCL_BUF(stats), SF_OCL_BUF(gamma), SF_OCL_ARG(n),
                SF_OCL_ARG(ntotal), SF_OCL_ARG(a->C), SF_OCL_ARG(a->G), SF_OCL_ARG(a->eps), SF_OCL_ARG(relu));
  sf_ocl_done();
}

/* buffers: [bwd_sum (2G+2C) double, dgamma, dbeta, part_0 .. part_{S-1}]: sum = part_0 + part_1 + ...
 * in that order, then dgamma, dbeta := the float of the reduced dgb */
void sf_groupnorm_bwd_reduce_opencl(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = ARGS("groupnorm_bwd_reduce");
  sf_ocl_buf sum = sf_ocl_vector(buffers[0], 8, "groupnorm_bwd_reduce sum");
  sf_ocl_buf dgamma = sf_ocl_vector(buffers[1], 4, "groupnorm_bwd_reduce dgamma");
  sf_ocl_buf dbeta = sf_ocl_vector(buffers[2], 4, "groupnorm_bwd_reduce dbeta");
  cl_ulong n = STARPU_VECTOR_GET_NX(buffers[0]);
  int nparts = sf_ocl_nbuffers() - 3;
  if (nparts == 0) sf_ocl_fill_zero(sum, n, 8);
  for (int k = 0; k < nparts; k++) {
    sf_ocl_buf p = sf_ocl_vector(buffers[3 + k], 8, "groupnorm_bwd_reduce part");
    if (k == 0)
      sf_ocl_copy(sum, p, n, 8);
    else
      SF_OCL_LAUNCH(SF_OCL_K_add_d, (size_t)n, SF_OCL_BUF(sum), SF_OCL_BUF(p), SF_OCL_ARG(n));
  }
  sf_ocl_buf dgb = sum;
  dgb.off += (cl_ulong)(2 * a->G);
  cl_int accumulate = 0;
  SF_OCL_LAUNCH(SF_OCL_K_gn_param_grads, (size_t)a->C, SF_OCL_BUF(dgamma), SF_OCL_BUF(dbeta), SF_OCL_ARG(accumulate),
                SF_OCL_BUF(dgb), SF_OCL_ARG(a->C));
  sf_ocl_done();
}

/* buffers: [dx, dy, y, x, stats, bwd_sum, gamma] */
void sf_groupnorm_bwd_data_opencl(void *buffers[], void *cl_arg)
{
  const sf_groupnorm_args *a = ARGS("groupnorm_bwd_data");
  sf_ocl_buf dx = sf_ocl_block(buffers[0], 4, "groupnorm_bwd_data dx");
  sf_ocl_buf dy = sf_ocl_block(buffers[1], 4, "groupnorm_bwd_data dy");
  sf_ocl_buf y = sf_ocl_block(buffers[2], 4, "groupnorm_bwd_data y");
  sf_ocl_buf x = sf_ocl_block(buffers[3], 4, "groupnorm_bwd_data x");
  sf_ocl_buf stats = sf_ocl_vector(buffers[4], 8, "groupnorm_bwd_data stats");
  sf_ocl_buf gsums = sf_ocl_vector(buffers[5], 8, "groupnorm_bwd_data bwd_sum");
  sf_ocl_buf gamma = sf_ocl_vector(buffers[6], 4, "groupnorm_bwd_data gamma");
  cl_ulong n = sf_ocl_vox(buffers[3], a->C), ntotal = a->ntotal;
  cl_int relu = a->relu;
  SF_OCL_LAUNCH(SF_OCL_K_gn_bwd_data, (size_t)n * a->C, SF_OCL_BUF(dx), SF_OCL_BUF(dy), SF_OCL_BUF(y), SF_OCL_BUF(x),
                SF_OCL_BUF(stats), SF_OCL_BUF(gsums), SF_OCL_BUF(gamma), SF_OCL_ARG(n), SF_OCL_ARG(ntotal),
                SF_OCL_ARG(a->C), SF_OCL_ARG(a->G), SF_OCL_ARG(a->eps), SF_OCL_ARG(relu));
  sf_ocl_done();
}

#endif /* STARPU_USE_OPENCL */
