/* GPU (CUDA; HIP through scaffold/gpu_vendor.h) launchers for every operation of ops.h.
 *
 * Same layouts, argument order and semantics as ops.h (read its header comment): NDHWC with a batch
 * of 1, slabs with halo planes (NULL at the faces), weight/bias gradients and partial sums
 * ACCUMULATED (+=), activation gradients WRITTEN (=). Differences:
 *  - every pointer is a DEVICE pointer (stats/acc/gsums/dgb are device doubles too);
 *  - the first argument is the stream; everything is queued on it asynchronously (no device
 *    synchronisation inside), as StarPU's STARPU_CUDA_ASYNC codelets require;
 *  - GEMM-based ops take a cuBLAS handle; the launcher binds it to the stream (cublasSetStream);
 *  - conv-like ops take `flags`: SF_GPU_BF16 rounds the inputs and weights to bfloat16 and computes
 *    with fp32 accumulation and fp32 output (torch_amp: 1); SF_GPU_CUDNN runs the 3x3x3 convolutions
 *    through cuDNN instead of im2col + cuBLAS (only when sf_cuda_have_cudnn()); SF_GPU_TF32 allows
 *    TF32 math on fp32 data. Without flags everything is strict fp32.
 * Scratch memory: each calling thread (a StarPU CUDA worker) keeps device buffers that grow on
 * demand (stream-ordered cudaMallocAsync) and are reused, never freed per call; the convolutions
 * bound theirs to SF_GPU_COL_BYTES per chunk. A failing CUDA/cuBLAS/cuDNN call aborts the process
 * with file:line, the call and the library's message.
 * Implementation: src/kernels/cuda/<op>.cu (library sf_cuda_kernels, built by cmake/Cuda.cmake). */
#ifndef SF_OPS_CUDA_H
#define SF_OPS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef SF_USE_HIP
#include <hip/hip_runtime_api.h>
typedef hipStream_t sf_gpu_stream_t;
typedef void *sf_gpu_blas_t; /* hipblasHandle_t */
#else
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
typedef cudaStream_t sf_gpu_stream_t;
typedef cublasHandle_t sf_gpu_blas_t;
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SF_GPU_BF16 1u  /* bf16 inputs and weights, fp32 accumulation and output */
#define SF_GPU_CUDNN 2u /* 3x3x3 convolutions through cuDNN */
#define SF_GPU_TF32 4u  /* fp32 data with TF32 tensor-core math (PyTorch's default for cuDNN convs);
                         * ignored with SF_GPU_BF16; plain fp32 otherwise (no TF32) */

/* 1 when the library was built with cuDNN (SF_GPU_CUDNN usable), else 0. */
int sf_cuda_have_cudnn(void);
/* Releases the calling thread's device scratch buffers and cuDNN handle (call on every CUDA worker
 * before starpu_shutdown, e.g. with starpu_execute_on_each_worker). */
void sf_cuda_thread_release(void);
/* Bytes of device scratch held by the calling thread. */
size_t sf_cuda_thread_workspace_bytes(void);

/* ---- 3x3x3 convolution, padding 1 (ops.h sf_conv3d_*) ---- */
void sf_cuda_conv3d_forward(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *y, const float *x_lo,
                            const float *x, const float *x_hi, const float *w, int nd, int H, int W, int Cin,
                            int Cout);
void sf_cuda_conv3d_backward_data(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dx,
                                  const float *dy_lo, const float *dy, const float *dy_hi, const float *w, int nd,
                                  int H, int W, int Cin, int Cout);
void sf_cuda_conv3d_backward_weights(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dw,
                                     const float *x_lo, const float *x, const float *x_hi, const float *dy, int nd,
                                     int H, int W, int Cin, int Cout);

/* ---- 1x1x1 convolution with bias (ops.h sf_conv1_*) ---- */
void sf_cuda_conv1_forward(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *y, const float *x,
                           const float *w, const float *b, size_t n, int Cin, int Cout);
void sf_cuda_conv1_backward_data(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dx, const float *dy,
                                 const float *w, size_t n, int Cin, int Cout);
void sf_cuda_conv1_backward_weights(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dw, float *db,
                                    const float *x, const float *dy, size_t n, int Cin, int Cout);

/* ---- transposed convolution k2 s2 with bias (ops.h sf_upconv3d_*; H, W are INPUT sizes) ---- */
void sf_cuda_upconv3d_forward(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *y, const float *x,
                              const float *w, const float *b, int nd, int H, int W, int Cin, int Cout);
void sf_cuda_upconv3d_backward_data(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dx,
                                    const float *dy, const float *w, int nd, int H, int W, int Cin, int Cout);
void sf_cuda_upconv3d_backward_weights(sf_gpu_stream_t s, sf_gpu_blas_t h, unsigned flags, float *dw, float *db,
                                       const float *x, const float *dy, int nd, int H, int W, int Cin, int Cout);

/* ---- GroupNorm (ops.h sf_groupnorm_*); stats, gsums, dgb are device doubles ---- */
void sf_cuda_groupnorm_stats(sf_gpu_stream_t s, double *stats, const float *x, size_t n, int C, int G);
void sf_cuda_groupnorm_forward(sf_gpu_stream_t s, float *y, const float *x, const double *stats,
                               const float *gamma, const float *beta, size_t n, size_t ntotal, int C, int G,
                               float eps, int relu);
void sf_cuda_groupnorm_backward_stats(sf_gpu_stream_t s, double *gsums, double *dgb, const float *dy,
                                      const float *y, const float *x, const double *stats, const float *gamma,
                                      size_t n, size_t ntotal, int C, int G, float eps, int relu);
void sf_cuda_groupnorm_backward_data(sf_gpu_stream_t s, float *dx, const float *dy, const float *y, const float *x,
                                     const double *stats, const double *gsums, const float *gamma, size_t n,
                                     size_t ntotal, int C, int G, float eps, int relu);
void sf_cuda_groupnorm_param_grads(sf_gpu_stream_t s, float *dgamma, float *dbeta, const double *dgb, int C);

/* ---- ReLU, MaxPool 2x2x2 (H, W are OUTPUT sizes), concat ---- */
void sf_cuda_relu_forward(sf_gpu_stream_t s, float *y, const float *x, size_t n); /* y may equal x */
void sf_cuda_relu_backward(sf_gpu_stream_t s, float *dx, const float *dy, const float *y, size_t n);
void sf_cuda_maxpool3d_forward(sf_gpu_stream_t s, float *y, uint8_t *idx, const float *x, int nd, int H, int W,
                               int C);
void sf_cuda_maxpool3d_backward(sf_gpu_stream_t s, float *dx, const float *dy, const uint8_t *idx, int nd, int H,
                                int W, int C);
void sf_cuda_concat_forward(sf_gpu_stream_t s, float *y, const float *a, const float *b, size_t n, int Ca, int Cb);
void sf_cuda_concat_backward(sf_gpu_stream_t s, float *da, float *db, const float *dy, size_t n, int Ca, int Cb);

/* ---- loss, hard Dice (acc: device doubles, SF_LOSS_NACC(K) resp. 3K). A label >= K makes the
 * accumulated sums (loss) or the gradient row NaN and prints one device message (the CPU aborts). ---- */
void sf_cuda_loss_partial(sf_gpu_stream_t s, double *acc, const float *z, const uint16_t *lab, const float *cw,
                          size_t n, int K);
void sf_cuda_loss_backward(sf_gpu_stream_t s, float *dz, const float *z, const uint16_t *lab, const float *cw,
                           const double *acc, size_t n, int K, float scale);
/* sf_loss_backward_batch_ref with the pooled weight sum read on the device (wsum NULL: acc[1]). */
void sf_cuda_loss_backward_batch(sf_gpu_stream_t s, float *dz, const float *z, const uint16_t *lab, const float *cw,
                                 const double *acc, const double *wsum, int batch, size_t n, int K, float scale);
/* acc[0] += sum w[lab] (sf_loss_weight_sum_ref; device atomics, so the last bits may differ) */
void sf_cuda_loss_weight_sum(sf_gpu_stream_t s, double *acc, const uint16_t *lab, const float *cw, size_t n, int K);
void sf_cuda_dice_hard_partial(sf_gpu_stream_t s, double *acc, const float *z, const uint16_t *lab, size_t n,
                               int K);

/* ---- optimizer ---- */
void sf_cuda_sumsq_partial(sf_gpu_stream_t s, double *acc, const float *g, size_t n);
/* sf_adam_step on the device. The gradient is scaled by grad_scale, times sf_clip_coef(*total_sumsq,
 * max_norm) when total_sumsq (a device double) is not NULL. */
void sf_cuda_adam_step(sf_gpu_stream_t s, float *w, float *m, float *v, const float *g, size_t n, double lr,
                       double beta1, double beta2, double eps, long step, float grad_scale,
                       const double *total_sumsq, float max_norm);
/* sf_sgd_step / sf_rmsprop_step on the device with grad_scale = (float)*coef read on the device (the
 * clip task's coefficient), or 1 when coef is NULL. */
void sf_cuda_sgd_step(sf_gpu_stream_t s, float *w, const float *g, size_t n, double lr, const double *coef);
void sf_cuda_rmsprop_step(sf_gpu_stream_t s, float *w, float *sq, const float *g, size_t n, double lr, double alpha,
                          double eps, const double *coef);

/* ---- step glue (src/kernels/cuda/step_glue.cu): what the StarPU codelets need beyond ops.h ----
 * parts: a HOST array of nparts DEVICE pointers. Sums run left to right in part order, like the CPU
 * codelets (codelets/reduce.c), so results are bitwise the CPU ones. */
/* out: (n) written = parts[0] + parts[1] + ... */
void sf_cuda_sum_parts_f(sf_gpu_stream_t s, float *out, const float *const *parts, int nparts, size_t n);
void sf_cuda_sum_parts_d(sf_gpu_stream_t s, double *out, const double *const *parts, int nparts, size_t n);
/* y: (n) += x: (n) */
void sf_cuda_add_f(sf_gpu_stream_t s, float *y, const float *x, size_t n);
/* clip: (2) doubles written = [sf_clip_coef(total, max_norm), sqrt(total)], total = 0 + *parts[0] + ...
 * (each part one double: a per-tensor sum of squares) */
void sf_cuda_clip_coef(sf_gpu_stream_t s, double *clip, const double *const *parts, int nparts, float max_norm);
/* sf_adam_step with grad_scale = (float)*coef read on the device (the clip task's coefficient), or 1
 * when coef is NULL. Uses the calling thread's workspace for the scaled gradient. */
void sf_cuda_adam_step_coef(sf_gpu_stream_t s, float *w, float *m, float *v, const float *g, size_t n, double lr,
                            double beta1, double beta2, double eps, long step, const double *coef);

#ifdef __cplusplus
}
#endif

#endif
