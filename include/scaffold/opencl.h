/* OpenCL variants of the U-Net step's codelets (codelets/opencl/): kernel sources compiled at
 * start-up for every OpenCL device StarPU uses (a real GPU, or PoCL on the CPU, which gives a
 * CPU-only machine a second memory node), and StarPU launch functions with the codelet signature,
 * to be listed in each codelet's .opencl_funcs with .opencl_flags = {STARPU_OPENCL_ASYNC}.
 *
 *  - Sources: codelets/opencl/<family>.cl, embedded into the binary at build time
 *    (cmake/OpenCL.cmake); SF_OPENCL_KERNEL_DIR=<dir> loads <dir>/<family>.cl instead.
 *  - A launcher reads the same buffers, in the same order, and the same cl_arg struct as the CPU
 *    function of its codelet in codelets/<op>.c; the sf_ocl_*_args structs below mirror those
 *    private structs (checked by size at run time: a mismatch aborts naming the codelet).
 *  - Semantics are those of scaffold/ops.h; each launcher writes its W buffers completely (partial
 *    sums and SF_ACC_PARTIAL gradients are overwritten, SF_ACC_COMMUTE gradients accumulated).
 * Without OpenCL in StarPU, sf_opencl_init/shutdown are no-ops, no source is embedded and the
 * launchers do not exist (SF_CODELET drops the opencl argument then).
 * This header is the codelet layer's part (launchers, cl_arg mirrors, SF_OPENCL_CODELET); building
 * the programs for the devices and the placement rule are device start-up, in the runtime
 * (scaffold/opencl_devices.h, src/runtime/opencl_*.c). */
#ifndef SF_OPENCL_H
#define SF_OPENCL_H

#include <stddef.h>

#include "scaffold/opencl_devices.h" /* start-up, sources, the placement rule (the runtime's part) */

/* In codelets/<op>.c after SF_CODELET(op, ...): registers cl_<op> at program start. */
#define SF_OPENCL_CODELET(op, exactness)                                                              \
  __attribute__((constructor)) static void sf_ocl_register_##op(void) { sf_opencl_register_codelet(&cl_##op, exactness); }

/* ---- cl_arg layouts (mirrors of the codelets' private structs, same field order) ---- */
typedef struct {
  int H, W, Cin, Cout;
  int has_lo, has_hi;
  int overwrite;
} sf_ocl_conv3d_args; /* codelets/conv3d.c: cl_conv3d_args */
typedef struct {
  int Cin, Cout;
  int overwrite;
} sf_ocl_conv_args; /* codelets/conv1.c: cl_conv1_args, codelets/upconv3d.c: cl_upconv3d_args */
typedef struct {
  size_t ntotal;
  int C, G, relu;
  float eps;
} sf_ocl_groupnorm_args; /* codelets/groupnorm.c: cl_groupnorm_args */
typedef struct {
  int C;
  int has_add;
} sf_ocl_maxpool3d_args; /* codelets/maxpool3d.c */
typedef struct {
  int Ca, Cb;
} sf_ocl_concat_args; /* codelets/concat.c */
typedef struct {
  int K;
  float scale;
} sf_ocl_loss_args; /* codelets/loss.c */
typedef struct {
  int K;
} sf_ocl_dice_args; /* codelets/dice.c */
typedef struct {
  float max_norm;
} sf_ocl_clip_args; /* codelets/optim.c */
typedef struct {
  double lr, beta1, beta2, eps;
  long step;
  int has_clip;
} sf_ocl_adam_args; /* codelets/optim.c */
typedef struct {
  const void *src;
  size_t bytes;
  int is_block;
} sf_ocl_sample_args; /* codelets/sample.c */

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
/* loss: [acc, z, lab, cw], [dz, z, lab, cw, acc]; dice: [acc, z, lab] */
void sf_loss_partial_opencl(void *buffers[], void *cl_arg);
void sf_loss_bwd_opencl(void *buffers[], void *cl_arg);
void sf_dice_hard_partial_opencl(void *buffers[], void *cl_arg);
/* optim: [part, g] (cl_arg NULL), [clip, part_0..], [w, m, v, g, clip?] */
void sf_sumsq_opencl(void *buffers[], void *cl_arg);
void sf_clip_coef_opencl(void *buffers[], void *cl_arg);
void sf_adam_opencl(void *buffers[], void *cl_arg);
/* reduce (cl_arg NULL): [out, part_0..] float / double, [h] any vector; sample: [dst] */
void sf_sum_f_opencl(void *buffers[], void *cl_arg);
void sf_sum_d_opencl(void *buffers[], void *cl_arg);
void sf_zero_opencl(void *buffers[], void *cl_arg);
void sf_sample_load_opencl(void *buffers[], void *cl_arg);

#endif
