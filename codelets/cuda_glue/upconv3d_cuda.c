/* CUDA wrappers of the transposed-convolution codelets of the Up path (codelets/upconv3d.c): buffers
 * [y, x, w, b], [dx, dy, w], [dw, db, x, dy]; sizes from the coarse slab; cuBLAS GEMMs in the run's
 * precision (sf_cuda_gemm_flags). */
#include "cuda_glue.h"

#ifdef SF_CUDA_GLUE

/* the coarse slab's (nd, H, W) from its block interface */
#define COARSE(iface, C) sf_blk_nz(iface), sf_blk_ny(iface), sf_blk_w(iface, C)

void sf_upconv3d_fwd_cuda(void *buffers[], void *cl_arg)
{
  const sf_upconv3d_args *a = SF_CU_ARGS(sf_upconv3d_args, "upconv3d_fwd", cl_arg);
  sf_cuda_upconv3d_forward(SF_CU_STREAM, SF_CU_BLAS, sf_cuda_gemm_flags(), sf_cu_blk(buffers[0], "upconv3d_fwd y"),
                           sf_cu_blk(buffers[1], "upconv3d_fwd x"), sf_vec_f(buffers[2]), sf_vec_f(buffers[3]),
                           COARSE(buffers[1], a->Cin), a->Cin, a->Cout);
}

void sf_upconv3d_bwd_data_cuda(void *buffers[], void *cl_arg)
{
  const sf_upconv3d_args *a = SF_CU_ARGS(sf_upconv3d_args, "upconv3d_bwd_data", cl_arg);
  sf_cuda_upconv3d_backward_data(SF_CU_STREAM, SF_CU_BLAS, sf_cuda_gemm_flags(),
                                 sf_cu_blk(buffers[0], "upconv3d_bwd_data dx"), sf_cu_blk(buffers[1], "upconv3d_bwd_data dy"),
                                 sf_vec_f(buffers[2]), COARSE(buffers[0], a->Cin), a->Cin, a->Cout);
}

void sf_upconv3d_bwd_weights_cuda(void *buffers[], void *cl_arg)
{
  const sf_upconv3d_args *a = SF_CU_ARGS(sf_upconv3d_args, "upconv3d_bwd_weights", cl_arg);
  cudaStream_t s = SF_CU_STREAM;
  float *dw = sf_vec_f(buffers[0]), *db = sf_vec_f(buffers[1]);
  if (a->overwrite) {
    sf_cu_check(cudaMemsetAsync(dw, 0, sf_vec_n(buffers[0]) * sizeof(float), s), "cudaMemsetAsync(dw)");
    sf_cu_check(cudaMemsetAsync(db, 0, sf_vec_n(buffers[1]) * sizeof(float), s), "cudaMemsetAsync(db)");
  }
  sf_cuda_upconv3d_backward_weights(s, SF_CU_BLAS, sf_cuda_gemm_flags(), dw, db,
                                    sf_cu_blk(buffers[2], "upconv3d_bwd_weights x"),
                                    sf_cu_blk(buffers[3], "upconv3d_bwd_weights dy"), COARSE(buffers[2], a->Cin), a->Cin,
                                    a->Cout);
}

#endif
