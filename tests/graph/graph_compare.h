/* Comparisons of training runs for the task-graph tests (tests/graph, tests/hetero):
 *   gt_compare_bitwise  two runs that must be bitwise identical (more_determinism across schedulers
 *                       and worker counts, the bitwise OpenCL placement);
 *   gt_check_vs_ref     a graph run against the sequential reference, every step from the run's own
 *                       state before that step;
 *   gt_match_ref_grads  one step's gradient against the reference's, allowing for ReLU / max-pool
 *                       decisions within rounding distance of their kink.
 *
 * Why a graph run is not compared with the reference's own trajectory: two implementations that sum
 * in different orders (direct AVX-512 or AVX2 kernels or im2col + sgemm, the BLAS core OpenBLAS picks for
 * the CPU, slab tiling) agree on one step from identical state to a few 1e-7 of each array's max,
 * but Adam's first update is about lr * sign(g), so weights with a tiny gradient move by up to 2 lr
 * differently, and from then on the runs are at different parameters, where a ReLU or max-pool
 * decision near its kink may go either way. Measured on a Zen 3 EPYC (im2col + OpenBLAS), ps 4,
 * base 8, seed 5, graph vs the reference's trajectory, largest relative error of the gradients:
 * step 1 3.4e-7, step 2 1.9e-4, step 3 1.5e-5 (m 8.1e-5 after 3 steps), against 1.5e-7 .. 2.5e-7
 * at steps 1..5 when the reference starts each step from the graph's own parameters; over seeds 1..16
 * and three OpenBLAS cores one trajectory (seed 4, Zen core) ended 3 steps with updates 1.56 lr
 * apart on weights with a well-conditioned gradient and losses 1.6e-5 apart. On a Zen 4 with the
 * AVX-512 kernels the seed-5 trajectories had stayed within 1e-5: a flat tolerance on later steps of
 * independent trajectories depends on the CPU. Every step from the run's own state is as
 * well-conditioned as the first, so gt_check_vs_ref holds every step to the first step's criteria:
 * this also covers what only later steps do (Adam's moments and bias correction, the step count).
 *
 * Decisions at a kink: even from identical state, now and then a ReLU input within rounding distance
 * of 0 is decided the other way, and the gradients change discretely. Measured with gt_check_vs_ref
 * over 472 step comparisons (ps 4 base 16 seeds 1..40, 3 steps, on the Zen, Prescott and Sandybridge
 * OpenBLAS cores; ps 4 base 8 seeds 1..40, 3 steps; ps 5 seeds 1..8, 2 steps): 9 such steps, with
 * gradients 2.7e-4 .. 2.4e-2 of a tensor's max apart, each from one ReLU input 7e-9 .. 8e-7 from 0;
 * with it taken the other way they agreed to 5e-7 .. 1.6e-6. Everywhere else the largest errors were
 * 2.4e-6 (gradients, Adam moments, per tensor), 1.3e-4 lr (updates) and 9e-9 (losses).
 * gt_match_ref_grads takes such decisions of the reference (|z| < GT_KINK_DELTA, about 10 times the
 * largest difference of ReLU inputs measured between two implementations, 3.5e-6) the other way,
 * one at a time while that at least halves the gradients' difference, at most GT_MAX_FLIPS of them;
 * the gradients must then agree within rtol. A real defect (a scaled weight gradient, a missing
 * halo) is no such decision and still fails (test_graph_kinks.c). */
#ifndef SF_GRAPH_COMPARE_H
#define SF_GRAPH_COMPARE_H

#include <stddef.h>

#include "graph_testlib.h"
#include "unet_ref.h"

#define GT_KINK_DELTA 3e-5f
#define GT_MAX_FLIPS 4
#define GT_UPDATE_TOL_LR 1e-3 /* the golden step tests' Adam-update tolerance (golden.h) */
#define GT_TENSOR_FLOOR 1e-3  /* gt_tensor_rel_err: scale at least this fraction of the whole array's max */

/* Largest |got - want| relative to the max |want| of its parameter tensor (at least GT_TENSOR_FLOOR
 * times the whole array's max: a tensor whose values are all tiny is compared at that scale), as the
 * golden tests compare gradients; a uniform error in a tensor with small values (a scaled weight
 * gradient) is not diluted by the largest tensor. *worst (may be NULL): the element. */
double gt_tensor_rel_err(const sf_unet *u, const float *got, const float *want, size_t *worst);
/* Checks gt_tensor_rel_err <= rtol; prints ok / FAIL naming the worst tensor and both values. */
int gt_check_close_tensors(const char *name, const sf_unet *u, const float *got, const float *want, double rtol);

/* Bitwise: the final parameters, gradients and Adam moments, every step's state when both runs kept
 * it, and the losses of nsteps steps. Prints ok / FAIL lines; returns 1 if all are equal. */
int gt_compare_bitwise(const char *what, const gt_result *a, const gt_result *b, size_t n, int nsteps);

/* Graph run a (at most GT_MAX_CHECKED_STEPS steps, from p->params0 with p's samples) against the
 * reference: for every step, the reference step (sf_unet_ref_train_step + gt_ref_clip_adam) from
 * a's state before it must give a's losses (rtol), gradients (gt_match_ref_grads) and Adam moments
 * (rtol, gt_tensor_rel_err) and parameter update (GT_UPDATE_TOL_LR lr wherever the gradient is
 * well-conditioned, sf_golden_check_update). Returns 1 if all passed. */
int gt_check_vs_ref(const char *what, const gt_problem *p, const gt_result *a, double rtol);

/* The same for a batched run (gt_run_graph_batches with batch[]), against sf_unet_ref_batch_step from
 * a's state before every step. Near-kink decisions are not searched for in a batch (the reference's
 * kink list is per sample): the gradients must agree within rtol, which holds unless a ReLU or
 * max-pool input of one of the batch's samples lies within rounding distance of its kink. */
int gt_check_vs_ref_batches(const char *what, const gt_problem *p, const gt_result *a, const int *batch, double rtol);

/* got against want, the gradient of ref's last train step (from params, input x), within rtol
 * (gt_tensor_rel_err); if it is farther, first takes near-kink decisions of that step the other
 * way (see above), adding their changes to want, which is left as the gradient compared. Prints an
 * info line per decision taken and one ok / FAIL line. Returns 1 if got matches. */
int gt_match_ref_grads(const char *what, const gt_problem *p, sf_unet_ref *ref, const float *params, const float *x,
                       const float *got, float *want, double rtol);

#endif
