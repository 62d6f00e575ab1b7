/* CUDA workers: the StarPU wrappers that codelets/<op>.c lists in the cuda slot of SF_CODELET (the
 * codelet layer's part of CUDA; the runtime's part is scaffold/runtime_cuda.h). The wrappers exist
 * only when StarPU has CUDA and the kernels were built (SF_HAVE_CUDA_CODELETS, cmake/Cuda.cmake);
 * otherwise SF_CODELET drops the cuda slot.
 *
 * Wrappers (codelets/cuda_glue/<op>_cuda.c): void sf_<op>_cuda(void *buffers[], void *cl_arg) reads the
 * same buffers and the same cl_arg struct as the CPU function of its codelet, does the same glue work
 * (zeroing SF_ACC_PARTIAL gradients and partial sums, the maxpool skip-gradient add, fixed-order sums),
 * and queues sf_cuda_* launchers (scaffold/ops_cuda.h) on starpu_cuda_get_local_stream() with
 * starpu_cublas_get_local_handle(), without synchronising (the codelets carry STARPU_CUDA_ASYNC).
 * With a StarPU >= 1.4 built with HIP instead, the same wrappers are compiled for HIP workers
 * (SF_HAVE_HIP_CODELETS: starpu_hip_get_local_stream(), StarPU's hipBLAS handles, STARPU_HIP_ASYNC).
 * The runtime hooks are CUDA-only so far: on HIP workers the math is strict fp32 and
 * starpu_hipblas_init is not called, so the GEMM-based wrappers abort saying so (cuda_glue.h).
 * The precision, convolution-engine and device-memory settings they follow are the runtime's
 * (scaffold/runtime_cuda.h, src/runtime/runtime_cuda.c). */
#ifndef SF_CODELETS_CUDA_H
#define SF_CODELETS_CUDA_H

#include <stddef.h>

#include "scaffold/runtime_cuda.h" /* sf_cuda_gemm_flags, sf_cuda_conv3d_flags */

/* ---- wrappers (codelets/cuda_glue/<op>_cuda.c) ---- */
void sf_conv3d_fwd_cuda(void *buffers[], void *cl_arg);
void sf_conv3d_bwd_data_cuda(void *buffers[], void *cl_arg);
void sf_conv3d_bwd_weights_cuda(void *buffers[], void *cl_arg);
void sf_conv1_fwd_cuda(void *buffers[], void *cl_arg);
void sf_conv1_bwd_data_cuda(void *buffers[], void *cl_arg);
void sf_conv1_bwd_weights_cuda(void *buffers[], void *cl_arg);
void sf_upconv3d_fwd_cuda(void *buffers[], void *cl_arg);
void sf_upconv3d_bwd_data_cuda(void *buffers[], void *cl_arg);
void sf_upconv3d_bwd_weights_cuda(void *buffers[], void *cl_arg);
void sf_groupnorm_stats_cuda(void *buffers[], void *cl_arg);
void sf_groupnorm_fwd_cuda(void *buffers[], void *cl_arg);
void sf_groupnorm_bwd_stats_cuda(void *buffers[], void *cl_arg);
void sf_groupnorm_bwd_reduce_cuda(void *buffers[], void *cl_arg);
void sf_groupnorm_bwd_data_cuda(void *buffers[], void *cl_arg);
void sf_maxpool3d_fwd_cuda(void *buffers[], void *cl_arg);
void sf_maxpool3d_bwd_cuda(void *buffers[], void *cl_arg);
void sf_concat_fwd_cuda(void *buffers[], void *cl_arg);
void sf_concat_bwd_cuda(void *buffers[], void *cl_arg);
void sf_box_copy_cuda(void *buffers[], void *cl_arg);
void sf_layer_copy_cuda(void *buffers[], void *cl_arg);
void sf_pad_cols_cuda(void *buffers[], void *cl_arg);
void sf_pad_rows_cuda(void *buffers[], void *cl_arg);
void sf_crop_hw_cuda(void *buffers[], void *cl_arg);
void sf_embed_hw_cuda(void *buffers[], void *cl_arg);
void sf_loss_partial_cuda(void *buffers[], void *cl_arg);
void sf_loss_bwd_cuda(void *buffers[], void *cl_arg);
void sf_loss_wsum_cuda(void *buffers[], void *cl_arg);
void sf_dice_hard_partial_cuda(void *buffers[], void *cl_arg);
void sf_sumsq_cuda(void *buffers[], void *cl_arg);
void sf_clip_coef_cuda(void *buffers[], void *cl_arg);
void sf_adam_cuda(void *buffers[], void *cl_arg);
void sf_sgd_cuda(void *buffers[], void *cl_arg);
void sf_rmsprop_cuda(void *buffers[], void *cl_arg);
void sf_sum_f_cuda(void *buffers[], void *cl_arg);
void sf_sum_d_cuda(void *buffers[], void *cl_arg);
void sf_zero_cuda(void *buffers[], void *cl_arg);
void sf_sample_load_cuda(void *buffers[], void *cl_arg);

#endif
