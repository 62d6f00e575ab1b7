/* The sequential reference U-Net (tests/common/unet_ref.c): the tests' oracle for the task graph and
 * for the PyTorch golden tests. Whole-volume forward/backward on the plain kernels of ops.h, no
 * tiling, no StarPU. Linked only by tests (sf_testutil), never by the scaffold binary. */
#ifndef SF_TEST_UNET_REF_H
#define SF_TEST_UNET_REF_H

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
/* The (G,G,G,K) logits of the last forward or train step (valid until the next call). */
const float *sf_unet_ref_logits(const sf_unet_ref *r);

#endif
