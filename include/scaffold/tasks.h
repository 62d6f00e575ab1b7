/* Task insertion for every op of the U-Net step (docs/architecture.md §1, §5): the ONLY way model and training
 * code submit work. Each insert_task_<op>_<dir> picks the codelet, the access modes, the flops
 * (STARPU_FLOPS), the task name and the priority, and submits asynchronously; dependencies follow
 * from the handles (StarPU's sequential consistency). No StarPU type appears here: data are opaque
 * sf_handle values (scaffold/tensor.h).
 *
 * Conventions
 *  - Activation slabs are 3D block handles of NDHWC data: (nd,H,W,C) folded as block(W*C, H, nd);
 *    the slab depth nd and the voxel count come from the handle, channel counts from the arguments.
 *  - Halos: x_lo / x_hi are the neighbouring slabs k-1 / k+1 (the kernel uses their last / first
 *    plane), or NULL at the volume's faces (zero padding).
 *  - Parameters, gradients, Adam moments and partial sums are vector handles.
 *  - Weight-gradient contributions of a slab are added to `dw` according to sf_accum: SF_ACC_COMMUTE
 *    adds into a shared gradient in any order (STARPU_RW|STARPU_COMMUTE; zero it first with
 *    insert_task_zero), SF_ACC_PARTIAL overwrites a per-slab partial buffer (STARPU_W, the task zeroes
 *    it) to be summed in slab order by insert_task_sum_f (the more_determinism scheme), SF_ACC_ADD
 *    adds into such a partial after the earlier accesses (STARPU_RW: the samples of a batch, in order).
 *  - Partial sums (statistics, loss, Dice, norms) are double vectors written (W) by one task each,
 *    then reduced in a fixed order by insert_task_sum_d: results never depend on the scheduler.
 */
#ifndef SF_TASKS_H
#define SF_TASKS_H

#include <stddef.h>

#include "scaffold/tensor.h"

typedef enum {
  SF_ACC_COMMUTE = 0, /* dw += contribution, tasks commute (RW|COMMUTE) */
  SF_ACC_PARTIAL = 1, /* dw := contribution (W), summed later in a fixed order */
  SF_ACC_ADD = 2,     /* dw += contribution (RW), in submission order */
} sf_accum;

/* Per-task options, chosen by the caller (a NULL sf_topt * means all zero).
 *  prio: task priority, 0..2 (0 = default; higher runs first under StarPU's priority-aware schedulers
 *        and, as OpenMP's priority() clause, under runtime openmp: scaffold/runtime.h).
 *  mpi:  0 (the default): starpu_task_insert, the task runs on this process's workers.
 *        1: starpu_mpi_task_insert, for the tasks of a spatially distributed replica (scaffold/dist.h):
 *        every rank of the replica submits the same task, StarPU-MPI runs it on the rank owning the
 *        data it writes (all written handles registered with sf_dist_register, on one rank or
 *        SF_DIST_PER_NODE) and moves the data it reads. Rank-local work on this rank's own copies
 *        (the optimizer on replicated parameters, the all-reduce's combine tasks) keeps 0. Only a build
 *        with MPI accepts 1.
 *  flops_share: 0 (the default) or the share of the task's work that counts in its declared flops
 *        (a conv on a block padded with its neighbours' border computes outputs that are thrown away:
 *        only the block's own count, so GFLOP/s stay the model's).
 *  bf16: 0 (the default) or 1 for torch_amp: 1: the 3x3x3 and transposed convolutions submit their bf16 codelets,
 *        whose CPU functions run the bf16 engine (bf16 operands, fp32 sums; needs
 *        sf_cpu_bf16_engine() != NULL) and whose CUDA functions run under the CUDA precision torch_amp
 *        set (bf16); OpenCL workers keep fp32. Their own perfmodels (another symbol). */
typedef struct sf_topt {
  int prio;
  int mpi;
  double flops_share;
  int bf16;
} sf_topt;

/* The bf16 engine CPU workers run for sf_topt.bf16 ("amx", "vdpbf16ps"), or NULL when this CPU has
 * none (scaffold/cpu_isa.h) */
const char *sf_cpu_bf16_engine(void);

/* ---- 3x3x3 convolution, padding 1, no bias (codelets/conv3d.c) --------------------------------
 * y: (nd,H,W,Cout) written; x: (nd,H,W,Cin) with halos; w: (3,3,3,Cin,Cout). w_packed: NULL, or (o->bf16)
 * w packed for the forward by insert_task_conv3d_pack_bf16 (flip 0), read instead of w by CPU workers. */
void insert_task_conv3d_forward(const sf_topt *o, sf_handle y, sf_handle x_lo, sf_handle x, sf_handle x_hi,
                                sf_handle w, sf_handle w_packed, int H, int W, int Cin, int Cout);
/* dx: (nd,H,W,Cin) written from dy: (nd,H,W,Cout) and its halos; w_packed: NULL or packed with flip 1 */
void insert_task_conv3d_backward_data(const sf_topt *o, sf_handle dx, sf_handle dy_lo, sf_handle dy,
                                      sf_handle dy_hi, sf_handle w, sf_handle w_packed, int H, int W, int Cin,
                                      int Cout);
/* torch_amp: 1, "cast once per step": the bytes of w's bf16 copy packed for the forward (flip 0) or dX (flip 1) of a
 * Cin -> Cout conv, or 0 where nothing is packed ahead (o->bf16 off, workers other than CPUs, a bf16 engine or shape
 * that packs per task: scaffold/ops.h sf_conv3d_bf16_packed_bytes, a simulated run, or SF_BF16_PREPACK=0 in the
 * environment: each task packs its own copy, the comparison path); and the task that packs w
 * (CPU workers only) into w_fwd and w_dx (vectors of those many bytes; either may be NULL) */
size_t sf_conv3d_packed_bytes(const sf_topt *o, int Cin, int Cout, int flip);
void insert_task_conv3d_pack_bf16(const sf_topt *o, sf_handle w_fwd, sf_handle w_dx, sf_handle w, int Cin, int Cout);
/* dw: (3,3,3,Cin,Cout) gets the contribution of output slab dy: (nd,H,W,Cout) */
void insert_task_conv3d_backward_weights(const sf_topt *o, sf_accum acc, sf_handle dw, sf_handle x_lo, sf_handle x,
                                         sf_handle x_hi, sf_handle dy, int H, int W, int Cin, int Cout);
/* the rows of taps [t0, t1) of that dW into dw_rows: ((t1-t0)*Cin, Cout); CPU workers only (CPU-only
 * runs, where two workers share one layer's weight gradient by tap blocks); Cout >= 17 */
void insert_task_conv3d_backward_weights_taps(const sf_topt *o, sf_accum acc, sf_handle dw_rows, int t0, int t1,
                                              sf_handle x_lo, sf_handle x, sf_handle x_hi, sf_handle dy, int H, int W,
                                              int Cin, int Cout);

/* ---- 1x1x1 convolution with bias, OutConv (codelets/conv1.c) ----------------------------------
 * y: (n,Cout) written = x: (n,Cin) . w: (Cin,Cout) + b: (Cout) */
void insert_task_conv1_forward(const sf_topt *o, sf_handle y, sf_handle x, sf_handle w, sf_handle b, int Cin,
                               int Cout);
void insert_task_conv1_backward_data(const sf_topt *o, sf_handle dx, sf_handle dy, sf_handle w, int Cin, int Cout);
void insert_task_conv1_backward_weights(const sf_topt *o, sf_accum acc, sf_handle dw, sf_handle db, sf_handle x,
                                        sf_handle dy, int Cin, int Cout);

/* ---- transposed convolution k2 s2 with bias, the Up path (codelets/upconv3d.c) ----------------
 * x: (nd,H,W,Cin) slab of the coarse level; y: (2nd,2H,2W,Cout) matching slab of the fine level. */
void insert_task_upconv3d_forward(const sf_topt *o, sf_handle y, sf_handle x, sf_handle w, sf_handle b, int Cin,
                                  int Cout);
void insert_task_upconv3d_backward_data(const sf_topt *o, sf_handle dx, sf_handle dy, sf_handle w, int Cin,
                                        int Cout);
void insert_task_upconv3d_backward_weights(const sf_topt *o, sf_accum acc, sf_handle dw, sf_handle db, sf_handle x,
                                           sf_handle dy, int Cin, int Cout);

/* ---- GroupNorm (+ fused ReLU), exact over the whole volume (codelets/groupnorm.c) -------------
 * stats_part: (G,2) double written with this slab's [sum, sumsq]; reduce the S partials with
 * insert_task_sum_d into stats: (G,2). ntotal = voxels of the whole volume. */
void insert_task_groupnorm_stats(const sf_topt *o, sf_handle stats_part, sf_handle x, int C, int G);
/* y: (nd,H,W,C) written = [relu](gn(x)) with the reduced stats */
void insert_task_groupnorm_forward(const sf_topt *o, sf_handle y, sf_handle x, sf_handle stats, sf_handle gamma,
                                   sf_handle beta, size_t ntotal, int C, int G, float eps, int relu);
/* bwd_part: (2G + 2C) double written = [gsums (G,2), dgb (C,2)] of this slab */
void insert_task_groupnorm_backward_stats(const sf_topt *o, sf_handle bwd_part, sf_handle dy, sf_handle y,
                                          sf_handle x, sf_handle stats, sf_handle gamma, size_t ntotal, int C,
                                          int G, float eps, int relu);
/* bwd_sum: (2G + 2C) written = sum of the nparts partials in order; dgamma, dbeta: (C) written from it */
void insert_task_groupnorm_backward_reduce(const sf_topt *o, sf_handle bwd_sum, sf_handle dgamma, sf_handle dbeta,
                                           const sf_handle *parts, int nparts, int C, int G);
/* dx: (nd,H,W,C) written */
void insert_task_groupnorm_backward_data(const sf_topt *o, sf_handle dx, sf_handle dy, sf_handle y, sf_handle x,
                                         sf_handle stats, sf_handle bwd_sum, sf_handle gamma, size_t ntotal, int C,
                                         int G, float eps, int relu);

/* ---- MaxPool 2/2 (codelets/maxpool3d.c) ---------------------------------------------------------
 * x: (2nd,2H,2W,C) fine slab; y: (nd,H,W,C) and idx (uint8) written. */
void insert_task_maxpool3d_forward(const sf_topt *o, sf_handle y, sf_handle idx, sf_handle x, int C);
/* dx: (2nd,2H,2W,C) written = unpool(dy) (+ add: (2nd,2H,2W,C) if not NULL: the skip gradient) */
void insert_task_maxpool3d_backward(const sf_topt *o, sf_handle dx, sf_handle dy, sf_handle idx, sf_handle add,
                                    int C);

/* ---- channel concatenation [a (skip), b (upsampled)] (codelets/concat.c) ---------------------- */
void insert_task_concat_forward(const sf_topt *o, sf_handle y, sf_handle a, sf_handle b, int Ca, int Cb);
void insert_task_concat_backward(const sf_topt *o, sf_handle da, sf_handle db, sf_handle dy, int Ca, int Cb);

/* ---- loss: weighted CE + (1 - soft fg Dice) (codelets/loss.c) ---------------------------------
 * acc_part: SF_LOSS_NACC(K) double written; z: (nd,H,W,K) logits; lab: (nd,H,W) uint16; cw: (K). */
void insert_task_loss_partial(const sf_topt *o, sf_handle acc_part, sf_handle z, sf_handle lab, sf_handle cw, int K);
/* dz: (nd,H,W,K) written = scale * dloss/dz from the reduced acc of this sample. A batch of `batch`
 * samples (wsum: the batch's pooled CE weight sum, 1 double) uses wsum as the CE denominator and
 * divides the Dice term by batch; batch 1 takes wsum NULL (the sample's own acc[1]). */
void insert_task_loss_backward(const sf_topt *o, sf_handle dz, sf_handle z, sf_handle lab, sf_handle cw,
                               sf_handle acc, sf_handle wsum, int batch, int K, float scale);
/* part: (1) double = (SF_ACC_PARTIAL) or += (SF_ACC_ADD) sum of cw[lab] over the label slab lab:
 * one slab's share of a batch's pooled CE weight sum (no logits needed) */
void insert_task_loss_weight_sum(const sf_topt *o, sf_accum acc, sf_handle part, sf_handle lab, sf_handle cw, int K);

/* ---- hard Dice for validation (codelets/dice.c) ------------------------------------------------
 * acc_part: (K,3) double written */
void insert_task_dice_hard_partial(const sf_topt *o, sf_handle acc_part, sf_handle z, sf_handle lab, int K);

/* ---- optimizer (codelets/optim.c) ---------------------------------------------------------------
 * part: (1) double written = sum g^2 over g */
void insert_task_sumsq(const sf_topt *o, sf_handle part, sf_handle g);
/* clip: (2) double written = [clip coefficient, total norm] from the nparts sumsq partials (in order) */
void insert_task_clip_coef(const sf_topt *o, sf_handle clip, const sf_handle *parts, int nparts, float max_norm);
/* torch.optim.SGD (momentum 0) on w (RW) with g * clip[0] (clip may be NULL: scale 1) */
void insert_task_sgd(const sf_topt *o, sf_handle w, sf_handle g, sf_handle clip, double lr);
/* torch.optim.RMSprop (not centered, momentum 0) on w and its square_avg sq (RW) with g * clip[0] */
void insert_task_rmsprop(const sf_topt *o, sf_handle w, sf_handle sq, sf_handle g, sf_handle clip, double lr,
                         double alpha, double eps);
/* torch.optim.Adam on w, m, v (RW) with g * clip[0] (clip may be NULL: scale 1); step counts from 1 */
void insert_task_adam(const sf_topt *o, sf_handle w, sf_handle m, sf_handle v, sf_handle g, sf_handle clip,
                      double lr, double beta1, double beta2, double eps, long step);

/* ---- reductions and fills (codelets/reduce.c) --------------------------------------------------
 * out (float vector) written = parts[0] + parts[1] + ... in that order */
void insert_task_sum_f(const sf_topt *o, sf_handle out, const sf_handle *parts, int nparts);
/* out (double vector) written = parts[0] + parts[1] + ... in that order */
void insert_task_sum_d(const sf_topt *o, sf_handle out, const sf_handle *parts, int nparts);
/* h (float or double vector) written with zeros */
void insert_task_zero(const sf_topt *o, sf_handle h);

/* ---- sample loading (codelets/sample.c) --------------------------------------------------------
 * dst (block slab or vector) written with a copy of `bytes` bytes of host memory at src, which must
 * stay valid until the task has run (the caller waits for the step). */
void insert_task_sample_load(const sf_topt *o, sf_handle dst, const void *src, size_t bytes);
/* dst (a contiguous block) from a host box holding it with others: its rows of row_bytes at src, rows
 * ld_row bytes apart, planes ld_plane bytes apart (CPU). */
void insert_task_sample_load_box(const sf_topt *o, sf_handle dst, const void *src, size_t row_bytes, size_t ld_row,
                                 size_t ld_plane);

/* ---- distribution: the task parts of src/comm (scaffold/comm.h) ---------------------------------
 * Halo exchange (codelets/halo_plane.c): dst, a one-plane block (H,W,C), written with the last
 * (last != 0) or first plane of the slab src. */
void insert_task_plane_copy(const sf_topt *o, sf_handle dst, sf_handle src, int last);
/* ---- H/W block decomposition (codelets/halo_blocks.c; CPU) ----------------------------------------
 * Blocks (nd, h, w, C). A neighbour (lo, hi) is a whole block or its halo piece, NULL at the face. */
/* piece (extent 1 along axis) = src's first (last = 0) or last layer along axis (SF_AXIS_*) */
void insert_task_layer_copy(const sf_topt *o, sf_handle piece, sf_handle src, int axis, int last, int C);
/* dst (nd, h, w+2) = src (nd, h, w) with lo's last column and hi's first (zeros where NULL) */
void insert_task_pad_cols(const sf_topt *o, sf_handle dst, sf_handle src, sf_handle lo, sf_handle hi, int C);
/* dst (nd, h+2, W) = src (nd, h, W) with lo's last row and hi's first (zeros where NULL) */
void insert_task_pad_rows(const sf_topt *o, sf_handle dst, sf_handle src, sf_handle lo, sf_handle hi, int C);
/* dst (nd, h, w) = the interior of src (nd, h+2, w+2); embed: dst (nd, h+2, w+2) = src in zeros */
void insert_task_crop_hw(const sf_topt *o, sf_handle dst, sf_handle src, int C);
void insert_task_embed_hw(const sf_topt *o, sf_handle dst, sf_handle src, int C);
/* the box of extents ext at slo in block src into block dst at dlo; whole: it is all of dst (W), else
 * a part (RW: other copies fill the rest) */
void insert_task_box_copy(const sf_topt *o, sf_handle dst, const int dlo[3], sf_handle src, const int slo[3],
                          const int ext[3], int C, int whole);
/* Gradient all-reduce (codelets/grad_combine.c): acc (float vector) = (acc + other) * scale, one
 * combine step. */
void insert_task_grad_combine(const sf_topt *o, sf_handle acc, sf_handle other, float scale);
/* A task that runs nowhere: later accesses to `gate` wait until `after` has been produced (the
 * all-reduce posts a receive into its buffer only once the local gradient is complete). */
void insert_task_gate(const sf_topt *o, sf_handle gate, sf_handle after);

/* ---- accounting -----------------------------------------------------------------------------------
 * Every insert_task_* adds its declared flops and one task to process-wide counters (updated by the
 * submitting thread), for step-flops and tasks-per-step reports. */
double sf_tasks_flops_counter(void);
long sf_tasks_count_counter(void);
/* The submitting thread's seconds inside sf_submit since the last reset (every runtime's submission
 * cost as the application thread sees it; under the sequential executor it includes the task runs). */
double sf_tasks_submit_seconds_counter(void);
void sf_tasks_counters_reset(void);

#endif
