/* CUDA workers: the StarPU wrappers that codelets/<op>.c lists in the cuda slot of SF_CODELET, the
 * precision and convolution-engine settings they use, and the runtime hooks of
 * src/runtime/runtime_cuda.c. Everything here exists only when StarPU has CUDA and the kernels were
 * built (SF_HAVE_CUDA_CODELETS, cmake/Cuda.cmake); otherwise SF_CODELET drops the cuda slot and the
 * runtime hooks do nothing.
 *
 * Wrappers (codelets/cuda_glue/<op>_cuda.c): void sf_<op>_cuda(void *buffers[], void *cl_arg) reads the
 * same buffers and the same cl_arg struct as the CPU function of its codelet, does the same glue work
 * (zeroing SF_ACC_PARTIAL gradients and partial sums, the maxpool skip-gradient add, fixed-order sums),
 * and queues sf_cuda_* launchers (scaffold/ops_cuda.h) on starpu_cuda_get_local_stream() with
 * starpu_cublas_get_local_handle(), without synchronising (the codelets carry STARPU_CUDA_ASYNC).
 *
 * Precision on CUDA workers (chosen once, at start-up; CPU workers always compute in fp32):
 *   torch_amp: 1  bf16 inputs and weights with fp32 accumulation in the convolutions and GEMMs
 *                 (SF_GPU_BF16), fp32 master weights, fp32/fp64 GroupNorm, loss, reductions, Adam;
 *   torch_amp: 0  strict fp32, no TF32: a step on CUDA workers equals the CPU step to ~1e-6;
 *   environment SF_CUDA_MATH=fp32|tf32|bf16 overrides torch_amp (tf32: fp32 data with TF32 tensor-core
 *                 math, what PyTorch does by default for cuDNN convolutions).
 * 3x3x3 convolution engine: environment SF_CUDA_CONV=auto (default) | cublas | cudnn.
 *   auto picks, per call, what was faster on an H200 (docs/gpu/h200-2026-11-30/bench.log): cuBLAS
 *   (im2col + GEMM) when a channel count is below 16; in tf32/bf16 cuDNN when the slab's H and W are
 *   >= 32, or >= 16 with both channel counts >= 256, else cuBLAS; in strict fp32 cuDNN for the forward
 *   at H, W >= 32 only, cuBLAS for dX, dW and smaller planes. cudnn / auto fall back to cuBLAS when the
 *   kernels were built without cuDNN (and per call when cuDNN cannot run a shape).
 * Device memory: unless STARPU_LIMIT_CUDA_MEM is set, StarPU's data may use the smallest device's
 * memory minus max(6 GiB, 10 %), the room kept for the kernels' own workspace (im2col chunks up to
 * 512 MiB per slot, cuDNN up to 4 GiB, bf16 copies) and the CUDA context. */
#ifndef SF_CODELETS_CUDA_H
#define SF_CODELETS_CUDA_H

#include <stddef.h>

struct sf_config; /* scaffold/config.h */

/* ---- runtime hooks (src/runtime/runtime_cuda.c), called by sf_runtime_init / sf_runtime_shutdown ---- */
/* Before starpu_init: reads SF_CUDA_MATH / SF_CUDA_CONV (a bad value exits with status 2 naming the
 * variable, the value and the valid ones) and sets the device-memory limit above (only when CUDA
 * workers may start). */
void sf_runtime_cuda_prepare(const struct sf_config *c);
/* After starpu_init: the precision from torch_amp (or SF_CUDA_MATH); with CUDA workers,
 * starpu_cublas_init. */
void sf_runtime_cuda_start(const struct sf_config *c);
/* After the last task, before starpu_shutdown: releases every CUDA worker's kernel workspace and
 * cuDNN handle (sf_cuda_thread_release), then starpu_cublas_shutdown. */
void sf_runtime_cuda_stop(void);
/* One line, e.g. "CUDA: 1 worker(s), math bf16, conv engine auto (cuDNN built)", or "CUDA: none (...)". */
char *sf_runtime_cuda_describe(char *buf, size_t len);

/* ---- settings used by the wrappers ---- */
enum { SF_CUDA_DIR_FWD = 0, SF_CUDA_DIR_BWD_DATA = 1, SF_CUDA_DIR_BWD_WEIGHTS = 2 };
/* The SF_GPU_* flags of a GEMM-based op (conv1, upconv3d): precision only. */
unsigned sf_cuda_gemm_flags(void);
/* The SF_GPU_* flags of one 3x3x3 convolution call: precision and, per the engine rule above,
 * SF_GPU_CUDNN. H, W: the slab's plane sizes. */
unsigned sf_cuda_conv3d_flags(int dir, int H, int W, int Cin, int Cout);

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
void sf_loss_partial_cuda(void *buffers[], void *cl_arg);
void sf_loss_bwd_cuda(void *buffers[], void *cl_arg);
void sf_loss_wsum_cuda(void *buffers[], void *cl_arg);
void sf_dice_hard_partial_cuda(void *buffers[], void *cl_arg);
void sf_sumsq_cuda(void *buffers[], void *cl_arg);
void sf_clip_coef_cuda(void *buffers[], void *cl_arg);
void sf_adam_cuda(void *buffers[], void *cl_arg);
void sf_sum_f_cuda(void *buffers[], void *cl_arg);
void sf_sum_d_cuda(void *buffers[], void *cl_arg);
void sf_zero_cuda(void *buffers[], void *cl_arg);
void sf_sample_load_cuda(void *buffers[], void *cl_arg);

#endif
