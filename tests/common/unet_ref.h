/* The sequential reference U-Net (tests/common/unet_ref.c): the tests' oracle for the task graph and
 * for the PyTorch golden tests. Whole-volume forward/backward on the plain kernels of ops.h, no
 * tiling, no StarPU. Linked only by tests (sf_testutil), never by the scaffold binary. */
#ifndef SF_TEST_UNET_REF_H
#define SF_TEST_UNET_REF_H

#include <stddef.h>
#include <stdint.h>

#include "scaffold/model.h"

/* ---- sequential reference network (oracle) ---- */
typedef struct sf_unet_ref sf_unet_ref; /* activations and scratch for one sample */
/* Also sets OpenBLAS to one thread (as the runtime does), so the oracle's sums do not depend on the
 * core count. */
sf_unet_ref *sf_unet_ref_create(const sf_unet *u);
void sf_unet_ref_destroy(sf_unet_ref *r);
/* x: (G,G,G,3) input; logits: (G,G,G,K) written. use_naive != 0 uses the _ref kernels, else _blas. */
void sf_unet_ref_forward(sf_unet_ref *r, const float *params, const float *x, float *logits, int use_naive);
/* Forward + loss + backward for one sample. grads (arena layout) are ACCUMULATED.
 * lab: (G,G,G) labels; cw: (K) class weights; out[0..2] = ce, soft fg dice, loss. */
void sf_unet_ref_train_step(sf_unet_ref *r, const float *params, float *grads, const float *x,
                            const uint16_t *lab, const float *cw, double out[3], int use_naive);
/* Forward + loss + backward for a batch of B samples x[b], lab[b] with upstream's batch loss (CE
 * pooled over the batch, Dice averaged over it; scaffold/ops.h sf_loss_backward_batch_ref); grads
 * ACCUMULATED; out = the batch's ce, soft fg dice, loss. B = 1 is sf_unet_ref_train_step. */
void sf_unet_ref_batch_step(sf_unet_ref *r, const float *params, float *grads, int B, const float *const *x,
                            const uint16_t *const *lab, const float *cw, double out[3], int use_naive);
/* The (G,G,G,K) logits of the last forward or train step (valid until the next call). */
const float *sf_unet_ref_logits(const sf_unet_ref *r);

/* ---- decisions near their kink ----
 * Two float implementations of a step (other kernels, BLAS cores, tilings) compute the same ReLU
 * inputs to within a few 1e-6 (measured: reference with naive vs BLAS kernels, up to 3.5e-6 where
 * |z| < 1e-2). A ReLU input that close to 0, or a max-pool window whose two largest inputs are that
 * close, may be decided the other way by the other implementation: the forward hardly changes, but
 * the gradient changes discretely (by ~1e-3 of a layer's max for one ReLU of the last decoder
 * block). Comparisons of gradients with another implementation can take such decisions into account.
 * sf_unet_ref_near_kinks lists the decisions of the last train step within delta of their kink (the
 * SF_REF_MAX_KINKS nearest) and returns how many; sf_unet_ref_grads_flipped writes (not accumulates)
 * that step's gradient with decision k taken the other way (backward only: the forward's change,
 * under delta, is ignored). x must be the step's input. */
#define SF_REF_MAX_KINKS 64
typedef struct {
  float dist;     /* distance from the kink: |z|, or the gap between the window's two largest inputs */
  float *y;       /* ReLU output array and element changed (NULL: none), and its new value */
  size_t yi;
  float ynew;
  uint8_t *pidx;  /* max-pool argmax array and element changed (NULL: none), and its new offset */
  size_t pi;
  uint8_t pnew;
} sf_ref_kink;
int sf_unet_ref_near_kinks(sf_unet_ref *r, const float *params, float delta);
const sf_ref_kink *sf_unet_ref_kink(const sf_unet_ref *r, int k);
void sf_unet_ref_grads_flipped(sf_unet_ref *r, const float *params, const float *x, int k, float *grads,
                               int use_naive);

#endif
