/* OpenCL variants of the U-Net step's codelets (codelets/opencl/): kernel sources compiled at
 * start-up for every OpenCL device StarPU uses (a real GPU, or PoCL on the CPU, which gives a
 * CPU-only machine a second memory node), and StarPU launch functions with the codelet signature,
 * to be listed in each codelet's .opencl_funcs with .opencl_flags = {STARPU_OPENCL_ASYNC}.
 *
 *  - Sources: codelets/opencl/<family>.cl, embedded into the binary at build time
 *    (cmake/OpenCL.cmake); SF_OPENCL_KERNEL_DIR=<dir> loads <dir>/<family>.cl instead.
 *  - A launcher reads the same buffers, in the same order, and the same cl_arg struct as the CPU
 *    function of its codelet in codelets/<op>.c: the op's struct in scaffold/codelet_args.h (the
 *    launcher checks the task's cl_arg size: another op's struct aborts naming the codelet).
 *  - Semantics are those of scaffold/ops.h; each launcher writes its W buffers completely (partial
 *    sums and SF_ACC_PARTIAL gradients are overwritten, SF_ACC_COMMUTE gradients accumulated).
 * Without OpenCL in StarPU, sf_opencl_init/shutdown are no-ops, no source is embedded and the
 * launchers do not exist (SF_CODELET drops the opencl argument then).
 * This header is the codelet layer's part (launchers, SF_OPENCL_CODELET); building
 * the programs for the devices and the placement rule are device start-up, in the runtime
 * (scaffold/opencl_devices.h, src/runtime/opencl_*.c). */
#ifndef SF_OPENCL_H
#define SF_OPENCL_H

#include <stddef.h>

#include "scaffold/codelet_args.h"
#include "scaffold/opencl_devices.h" /* start-up, sources, the placement rule (the runtime's part) */

/* In codelets/<op>.c after SF_CODELET(op, ...): registers cl_<op> at program start. */
#define SF_OPENCL_CODELET(op, exactness)                                                              \
  __attribute__((constructor)) static void sf_ocl_register_##op(void) { sf_opencl_register_codelet(&cl_##op, exactness); }


/* ---- launchers: void f(void *buffers[], void *cl_arg), buffers as in codelets/<op>.c ---- */
/* conv3d: [y, x, w, x_lo?, x_hi?], [dx, dy, w, dy_lo?, dy_hi?], [dw, x, dy, x_lo?, x_hi?] */
void sf_conv3d_fwd_opencl(void *buffers[], void *cl_arg);
void sf_conv3d_bwd_data_opencl(void *buffers[], void *cl_arg);
void sf_conv3d_bwd_weights_opencl(void *buffers[], void *cl_arg);
/* conv1 / upconv3d: [y, x, w, b], [dx, dy, w], [dw, db, x, dy] */
void sf_conv1_fwd_opencl(void *buffers[], void *cl_arg);
void sf_conv1_bwd_data_opencl(void *buffers[], void *cl_arg);
void sf_conv1_bwd_weights_opencl(void *buffers[], void *cl_arg);
void sf_upconv3d_fwd_opencl(void *buffers[], void *cl_arg);
void sf_upconv3d_bwd_data_opencl(void *buffers[], void *cl_arg);
void sf_upconv3d_bwd_weights_opencl(void *buffers[], void *cl_arg);
/* groupnorm: [part, x], [y, x, stats, gamma, beta], [part, dy, y, x, stats, gamma],
 * [sum, dgamma, dbeta, part_0..], [dx, dy, y, x, stats, sum, gamma] */
void sf_groupnorm_stats_opencl(void *buffers[], void *cl_arg);
void sf_groupnorm_fwd_opencl(void *buffers[], void *cl_arg);
void sf_groupnorm_bwd_stats_opencl(void *buffers[], void *cl_arg);
void sf_groupnorm_bwd_reduce_opencl(void *buffers[], void *cl_arg);
void sf_groupnorm_bwd_data_opencl(void *buffers[], void *cl_arg);
/* relu (no codelet yet; cl_arg unused): [y, x], [dx, dy, y]; blocks or vectors of floats */
void sf_relu_fwd_opencl(void *buffers[], void *cl_arg);
void sf_relu_bwd_opencl(void *buffers[], void *cl_arg);
/* maxpool3d: [y, idx, x], [dx, dy, idx, add?]; concat: [y, a, b], [da, db, dy] */
void sf_maxpool3d_fwd_opencl(void *buffers[], void *cl_arg);
void sf_maxpool3d_bwd_opencl(void *buffers[], void *cl_arg);
void sf_concat_fwd_opencl(void *buffers[], void *cl_arg);
void sf_concat_bwd_opencl(void *buffers[], void *cl_arg);
/* H/W block copies (codelets/halo_blocks.c; rectangular copies, opencl/launch_blocks.c): [dst, src, lo?, hi?] */
void sf_box_copy_opencl(void *buffers[], void *cl_arg);
void sf_layer_copy_opencl(void *buffers[], void *cl_arg);
void sf_pad_cols_opencl(void *buffers[], void *cl_arg);
void sf_pad_rows_opencl(void *buffers[], void *cl_arg);
void sf_crop_hw_opencl(void *buffers[], void *cl_arg);
void sf_embed_hw_opencl(void *buffers[], void *cl_arg);
/* loss: [acc, z, lab, cw], [dz, z, lab, cw, acc, wsum?], weight sum [part, lab, cw]; dice: [acc, z, lab] */
void sf_loss_partial_opencl(void *buffers[], void *cl_arg);
void sf_loss_bwd_opencl(void *buffers[], void *cl_arg);
void sf_loss_wsum_opencl(void *buffers[], void *cl_arg);
void sf_dice_hard_partial_opencl(void *buffers[], void *cl_arg);
/* optim: [part, g] (cl_arg NULL), [clip, part_0..], adam [w, m, v, g, clip?], sgd [w, g, clip?],
 * rmsprop [w, sq, g, clip?] */
void sf_sumsq_opencl(void *buffers[], void *cl_arg);
void sf_clip_coef_opencl(void *buffers[], void *cl_arg);
void sf_adam_opencl(void *buffers[], void *cl_arg);
void sf_sgd_opencl(void *buffers[], void *cl_arg);
void sf_rmsprop_opencl(void *buffers[], void *cl_arg);
/* reduce (cl_arg NULL): [out, part_0..] float / double, [h] any vector; sample: [dst] */
void sf_sum_f_opencl(void *buffers[], void *cl_arg);
void sf_sum_d_opencl(void *buffers[], void *cl_arg);
void sf_zero_opencl(void *buffers[], void *cl_arg);
void sf_sample_load_opencl(void *buffers[], void *cl_arg);

#endif
