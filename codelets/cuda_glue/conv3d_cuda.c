/* CUDA wrappers of the 3x3x3 convolution codelets (codelets/conv3d.c): buffers [out, in, w|dy, lo?,
 * hi?], halo planes = last plane of slab k-1 / first plane of slab k+1 (NULL at the faces), launchers
 * sf_cuda_conv3d_* with the precision and engine of sf_cuda_conv3d_flags. */
#include "cuda_glue.h"

#include "../conv3d_halos.h"

#ifdef SF_CUDA_GLUE

/* buffers: [y, x, w, x_lo?, x_hi?] */
void sf_conv3d_fwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_conv3d_args *a = SF_CU_ARGS(sf_conv3d_args, "conv3d_fwd", cl_arg);
  const float *lo, *hi;
  sf_conv3d_halo_planes(buffers, a, &lo, &hi);
  sf_cuda_conv3d_forward(SF_CU_STREAM, SF_CU_BLAS, sf_cuda_conv3d_flags(SF_CUDA_DIR_FWD, a->H, a->W, a->Cin, a->Cout),
                         sf_cu_blk(buffers[0], "conv3d_fwd y"), lo, sf_cu_blk(buffers[1], "conv3d_fwd x"), hi,
                         sf_vec_f(buffers[2]), sf_blk_nz(buffers[0]), a->H, a->W, a->Cin, a->Cout);
}

/* buffers: [dx, dy, w, dy_lo?, dy_hi?] */
void sf_conv3d_bwd_data_cuda(void *buffers[], void *cl_arg)
{
  const sf_conv3d_args *a = SF_CU_ARGS(sf_conv3d_args, "conv3d_bwd_data", cl_arg);
  const float *lo, *hi;
  sf_conv3d_halo_planes(buffers, a, &lo, &hi);
  sf_cuda_conv3d_backward_data(SF_CU_STREAM, SF_CU_BLAS,
                               sf_cuda_conv3d_flags(SF_CUDA_DIR_BWD_DATA, a->H, a->W, a->Cin, a->Cout),
                               sf_cu_blk(buffers[0], "conv3d_bwd_data dx"), lo,
                               sf_cu_blk(buffers[1], "conv3d_bwd_data dy"), hi, sf_vec_f(buffers[2]),
                               sf_blk_nz(buffers[0]), a->H, a->W, a->Cin, a->Cout);
}

/* buffers: [dw, x, dy, x_lo?, x_hi?]; SF_ACC_PARTIAL (overwrite) zeroes the partial first */
void sf_conv3d_bwd_weights_cuda(void *buffers[], void *cl_arg)
{
  const sf_conv3d_args *a = SF_CU_ARGS(sf_conv3d_args, "conv3d_bwd_weights", cl_arg);
  const float *lo, *hi;
  sf_conv3d_halo_planes(buffers, a, &lo, &hi);
  cudaStream_t s = SF_CU_STREAM;
  float *dw = sf_vec_f(buffers[0]);
  if (a->overwrite) sf_cu_check(cudaMemsetAsync(dw, 0, sf_vec_n(buffers[0]) * sizeof(float), s), "cudaMemsetAsync(dw)");
  sf_cuda_conv3d_backward_weights(s, SF_CU_BLAS,
                                  sf_cuda_conv3d_flags(SF_CUDA_DIR_BWD_WEIGHTS, a->H, a->W, a->Cin, a->Cout), dw, lo,
                                  sf_cu_blk(buffers[1], "conv3d_bwd_weights x"), hi,
                                  sf_cu_blk(buffers[2], "conv3d_bwd_weights dy"), sf_blk_nz(buffers[1]), a->H, a->W,
                                  a->Cin, a->Cout);
}

#endif
