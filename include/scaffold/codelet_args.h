/* The cl_arg structs of the codelets, one definition per op. Each is read by every implementation of
 * its codelet: the CPU function and the insert_task_* helper that fills it (codelets/<op>.c), the
 * CUDA / HIP wrapper (codelets/cuda_glue/<op>_cuda.c) and the OpenCL launcher
 * (codelets/opencl/launch_*.c, declared in scaffold/opencl.h), and by the tests that call those
 * launchers directly. StarPU copies the struct bytes into the task (sf_submit), so adding or reordering
 * a field here changes every variant at once; the wrappers still check the task's cl_arg size
 * (sf_cu_args, sf_ocl_check_args) to catch a task submitted with another op's struct.
 * No device code sees these structs: the CUDA / HIP wrappers pass the fields to host launchers with
 * prototypes (scaffold/ops_cuda.h), and the OpenCL launchers pass them one by one as kernel arguments
 * (the fields passed unchanged are checked against the kernels' parameter types in launch_*.c).
 * Plain C, no StarPU. */
#ifndef SF_CODELET_ARGS_H
#define SF_CODELET_ARGS_H

#include <stddef.h>

/* ---- conv3d (codelets/conv3d.c): buffers [out, in, w|dy, in_lo?, in_hi?, w_packed?] ---- */
typedef struct {
  int H, W, Cin, Cout;
  int has_lo, has_hi; /* the halo slabs follow as buffers 3 (lo) and 4 or 3 (hi) */
  int overwrite;      /* dW: SF_ACC_PARTIAL, zero the partial first */
  int has_packed;     /* bf16 forward / dX on CPU workers: the weights packed once (the last buffer) */
} sf_conv3d_args;

/* the CPU-only codelet that packs a conv3d weight for the bf16 forward and / or dX: [w, fwd?, dx?] */
typedef struct {
  int Cin, Cout;
  int has_fwd, has_dx;
} sf_conv3d_pack_args;

/* the CPU-only dW codelet for the gradient rows of taps [t0, t1) */
typedef struct {
  sf_conv3d_args c;
  int t0, t1; /* the taps whose rows of (27*Cin, Cout) the task computes */
} sf_conv3d_taps_args;

/* ---- conv1 (codelets/conv1.c) and upconv3d (codelets/upconv3d.c) ---- */
typedef struct {
  int Cin, Cout;
  int overwrite; /* dW: SF_ACC_PARTIAL, zero the partials first */
} sf_conv1_args;
typedef sf_conv1_args sf_upconv3d_args; /* the same three fields */

/* ---- groupnorm (codelets/groupnorm.c) ---- */
typedef struct {
  size_t ntotal; /* voxels of the whole volume */
  int C, G, relu;
  float eps;
} sf_groupnorm_args;

/* ---- maxpool3d (codelets/maxpool3d.c) ---- */
typedef struct {
  int C;
  int has_add; /* backward: buffer 3 is the skip gradient added to dx */
} sf_maxpool3d_args;

/* ---- concat (codelets/concat.c) ---- */
typedef struct {
  int Ca, Cb;
} sf_concat_args;

/* ---- loss (codelets/loss.c) and dice (codelets/dice.c) ---- */
typedef struct {
  int K;
  float scale;
  int batch;      /* loss_bwd: samples in the batch (>= 1) */
  int accumulate; /* loss_wsum: add to the partial instead of overwriting it (SF_ACC_ADD) */
} sf_loss_args;
typedef struct {
  int K;
} sf_dice_args;

/* ---- optimizer (codelets/optim.c) ---- */
typedef struct {
  float max_norm;
} sf_clip_args;
typedef struct {
  double lr, beta1, beta2, eps;
  long step;
  int has_clip; /* buffer 4 is the [clip coefficient, norm] vector */
} sf_adam_args;
typedef struct {
  double lr;
  int has_clip; /* buffer 1 is the [clip coefficient, norm] vector */
} sf_sgd_args;
typedef struct {
  double lr, alpha, eps;
  int has_clip; /* buffer 3 is the [clip coefficient, norm] vector */
} sf_rmsprop_args;

/* ---- sample loading (codelets/sample.c) ---- */
typedef struct {
  const void *src; /* host bytes, valid until the task completes */
  size_t bytes;
  int is_block; /* 3D block slab, else a vector */
} sf_sample_args;

/* ---- H/W block copies (codelets/halo_blocks.c) ---- */
typedef struct {
  int C;                      /* channels */
  int dlo[3], slo[3], ext[3]; /* box_copy: where in dst, where in src, extents (depth, rows, columns) */
  int axis, last;             /* layer_copy */
  int has_lo, has_hi;         /* pad: which neighbours follow the [dst, src] buffers */
} sf_blocks_args;

#endif
