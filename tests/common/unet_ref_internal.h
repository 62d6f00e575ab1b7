/* Internals of the sequential reference U-Net (tests/common/unet_ref.c), shared with its near-kink
 * analysis (unet_ref_kinks.c): the conv kernel table, the activations kept per block, the backward
 * pass. Not for tests: they use unet_ref.h. */
#ifndef SF_TEST_UNET_REF_INTERNAL_H
#define SF_TEST_UNET_REF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "scaffold/model.h"
#include "unet_ref.h"

typedef struct {
  void (*conv3_fwd)(float *, const float *, const float *, const float *, const float *, int, int, int, int, int);
  void (*conv3_bwd_data)(float *, const float *, const float *, const float *, const float *, int, int, int, int,
                         int);
  void (*conv3_bwd_w)(float *, const float *, const float *, const float *, const float *, int, int, int, int, int);
  void (*conv1_fwd)(float *, const float *, const float *, const float *, size_t, int, int);
  void (*conv1_bwd_data)(float *, const float *, const float *, size_t, int, int);
  void (*conv1_bwd_w)(float *, float *, const float *, const float *, size_t, int, int);
  void (*up_fwd)(float *, const float *, const float *, const float *, int, int, int, int, int);
  void (*up_bwd_data)(float *, const float *, const float *, int, int, int, int, int);
  void (*up_bwd_w)(float *, float *, const float *, const float *, int, int, int, int, int);
} conv_kernels;

/* The _ref (naive) and _blas conv kernels. */
extern const conv_kernels SF_REF_KERNELS_NAIVE, SF_REF_KERNELS_BLAS;

/* One DoubleConv at edge e: conv -> GN+ReLU -> conv -> GN+ReLU. Activations (n = e^3 voxels): */
typedef struct {
  int e, cin, cout;
  size_t n;
  int w1, g1, b1, w2, g2, b2; /* parameter indices */
  float *a1, *h1;             /* (e,e,e,cout) conv1 output, GN1+ReLU output */
  float *a2, *h2;             /* (e,e,e,cout) conv2 output, GN2+ReLU output (the block's output) */
  double *st1, *st2;          /* (G,2) GroupNorm statistics */
} dconv;

struct sf_unet_ref {
  const sf_unet *u;
  int L, K, groups;
  size_t nvox;                           /* G^3 */
  dconv enc[SF_MAX_LEVELS + 1];          /* inc (0), down1..downL */
  dconv dec[SF_MAX_LEVELS];              /* dec[l]: the DoubleConv of up_{L-l}, output at level l */
  float *pool[SF_MAX_LEVELS + 1];        /* pool[i]: (e_i^3, c_{i-1}) max-pooled enc[i-1] output, i >= 1 */
  uint8_t *pidx[SF_MAX_LEVELS + 1];      /* its argmax offsets */
  float *up[SF_MAX_LEVELS];              /* up[l]: (e_l^3, c_l) transposed-conv output */
  float *cat[SF_MAX_LEVELS];             /* cat[l]: (e_l^3, 2 c_l) = [skip enc[l], up[l]] */
  int upw[SF_MAX_LEVELS], upb[SF_MAX_LEVELS], outw, outb;
  float *logits, *dlogits;               /* (G^3, K) */
  float *dskip[SF_MAX_LEVELS + 1];       /* gradient of enc[l].h2 */
  float *ddec[SF_MAX_LEVELS];            /* gradient of dec[l].h2 */
  float *gA, *gB, *gC;                   /* scratch gradients, max_l e_l^3 * 2 c_l floats */
  double *gsums, *dgb;                   /* GroupNorm backward partial sums: (G,2), (Cmax,2) */
  double *loss_acc;                      /* SF_LOSS_NACC(K) */
  sf_ref_kink kinks[SF_REF_MAX_KINKS];   /* near-kink decisions of the last forward (sf_unet_ref_near_kinks) */
  int nkinks;
};

/* A parameter tensor's slice of the arena, and of the gradients (by parameter index). */
#define P(i) (params + r->u->params[(i)].offset)
#define D(i) (grads + r->u->params[(i)].offset)

/* Backward of the last forward from r->dlogits: grads (arena layout) accumulated. */
void sf_unet_ref_backward(sf_unet_ref *r, const float *params, float *grads, const float *x, const conv_kernels *k);

#endif
