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
 * launchers do not exist (SF_CODELET drops the opencl argument then). */
#ifndef SF_OPENCL_H
#define SF_OPENCL_H

#include <stddef.h>

/* Compiles every kernel source for every OpenCL worker's device. Call after starpu_init (the
 * launchers call it lazily otherwise). Returns the number of devices prepared (0 when StarPU has no
 * OpenCL worker). Exits with status 1 and a message naming the source file, the device and the
 * compiler's build log when a source does not compile, and when a device lacks double precision
 * (cl_khr_fp64). Idempotent. */
int sf_opencl_init(void);
/* Releases kernels and programs; call after the last task finished, before starpu_shutdown. */
void sf_opencl_shutdown(void);

/* Before starpu_init, when OpenCL workers are wanted: unless the user set STARPU_OPENCL_ON_CPUS or
 * STARPU_OPENCL_ONLY_ON_CPUS, and no GPU / accelerator OpenCL device is visible, sets both to 1 so
 * that StarPU uses a CPU OpenCL device (PoCL: a second memory node on a CPU-only machine; StarPU
 * ignores CPU OpenCL devices by default). A machine with an OpenCL GPU keeps StarPU's default (GPUs
 * and accelerators only). Returns 1 when it set them, 0 otherwise. StarPU 1.3 enumerates OpenCL
 * devices once per process, at the first starpu_init: a process that starts StarPU several times
 * (tests) must call this before the first start if any later one wants OpenCL workers. */
int sf_opencl_prepare_env(void);

/* ---- bitwise placement rule (more_determinism with CPU and OpenCL workers) ----
 * Each codelet with an OpenCL variant declares, next to its SF_CODELET line, whether that variant
 * reproduces the CPU function's float results bit for bit:
 *   SF_OCL_EXACT       copies, selections, exact counts, sums of doubles in a fixed order: bitwise
 *                      on any conforming device (double denormals are mandatory in OpenCL);
 *   SF_OCL_EXACT_IEEE  float arithmetic in the CPU's order with the CPU's explicit fmaf: bitwise when
 *                      every OpenCL device has fp32 denormals and correctly rounded divide / sqrt
 *                      (the kernels are built with -cl-fp32-correctly-rounded-divide-sqrt then);
 *   SF_OCL_INEXACT     anything else: OpenBLAS GEMM on the CPU (blocked summation order) against a
 *                      direct loop, libm exp/log against the device's, or a*b+c products that GCC
 *                      contracts into fma on the CPU (gnu11 implies -ffp-contract=fast, and
 *                      -march=native has FMA) while the kernels keep FP_CONTRACT OFF.
 * Every .cl file keeps `#pragma OPENCL FP_CONTRACT OFF`, so the device never fuses on its own. */
typedef enum { SF_OCL_EXACT = 0, SF_OCL_EXACT_IEEE = 1, SF_OCL_INEXACT = 2 } sf_ocl_exactness;
struct starpu_codelet;
void sf_opencl_register_codelet(struct starpu_codelet *cl, sf_ocl_exactness e);
/* In codelets/<op>.c after SF_CODELET(op, ...): registers cl_<op> at program start. */
#define SF_OPENCL_CODELET(op, exactness)                                                              \
  __attribute__((constructor)) static void sf_ocl_register_##op(void) { sf_opencl_register_codelet(&cl_##op, exactness); }

typedef enum {
  SF_OCL_PLACE_ANY = 0,     /* every implementation may run on every worker (the default) */
  SF_OCL_PLACE_BITWISE = 1, /* codelets whose OpenCL variant is not bitwise the CPU one (INEXACT, and
                               EXACT_IEEE on a device without denormals / correct rounding) stay off
                               OpenCL workers (CPU, or CUDA when present): a CPU + OpenCL run then
                               equals a CPU-only run bit for bit */
  SF_OCL_PLACE_SPLIT = 2,   /* tests: as BITWISE, and every other registered codelet runs on OpenCL
                               workers only (so each bitwise claim is exercised) */
} sf_ocl_placement;
/* Sets each registered codelet's `where` for the placement p (StarPU must be running, no task in
 * flight; call after sf_opencl_init). sf_runtime_init applies SF_OCL_PLACE_BITWISE when
 * more_determinism is on and StarPU has OpenCL workers and CPU (or CUDA) workers, else ANY. Returns
 * the number of codelets kept off OpenCL workers. */
int sf_opencl_set_placement(sf_ocl_placement p);
sf_ocl_placement sf_opencl_placement(void);
/* The registered codelets: count, codelet name ("sf_conv3d_fwd"), declared exactness, and whether
 * the current placement keeps it off OpenCL workers (on CPU, or CUDA, workers only). */
int sf_opencl_codelet_count(void);
const char *sf_opencl_codelet_name(int i);
sf_ocl_exactness sf_opencl_codelet_exactness(int i);
int sf_opencl_codelet_kept_off(int i);
/* 1 when every OpenCL device prepared by sf_opencl_init has fp32 denormals and correctly rounded
 * divide / sqrt (so SF_OCL_EXACT_IEEE variants are bitwise); 1 as well with no device. */
int sf_opencl_ieee_exact(void);

/* The kernel sources embedded at build time: count, file name ("conv3d.cl") and text. */
int sf_opencl_source_count(void);
const char *sf_opencl_source_name(int i);
const char *sf_opencl_source_text(int i);

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
  int batch;      /* loss_bwd: samples in the batch (>= 1) */
  int accumulate; /* loss_wsum: add to the partial instead of overwriting it */
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
/* loss: [acc, z, lab, cw], [dz, z, lab, cw, acc, wsum?], weight sum [part, lab, cw]; dice: [acc, z, lab] */
void sf_loss_partial_opencl(void *buffers[], void *cl_arg);
void sf_loss_bwd_opencl(void *buffers[], void *cl_arg);
void sf_loss_wsum_opencl(void *buffers[], void *cl_arg);
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
