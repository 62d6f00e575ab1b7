/* The ScaFFold 3D U-Net (spec §5): topology from (problem_scale, bottleneck, base channels,
 * classes, GroupNorm groups), the flat parameter arena, PyTorch-default initialisation, and a
 * plain sequential (untiled, no StarPU) forward/backward used as the oracle for the task graph
 * and for the PyTorch golden tests.
 *
 * Parameters live in ONE flat float arena; sf_param_desc gives each tensor's offset. The order is
 * PyTorch's named_parameters() order for ScaFFold's UNet, so golden files and checkpoints map 1:1:
 *   inc.double_conv.{0.weight,1.weight,1.bias,3.weight,4.weight,4.bias},
 *   down{i}.maxpool_conv.1.double_conv.{...} (i = 1..L),
 *   up{j}.up.{weight,bias}, up{j}.conv.double_conv.{...} (j = 1..L, deepest first),
 *   outc.conv.{weight,bias}.
 * up1 is the DEEPEST Up: Up(c_L, c_{L-1}), and up{k} produces level L-k, following the spec's
 * decoder order "for j = L..1: Up(c_j, c_{j-1})" (the spec does not name upstream's Up modules, so
 * this naming is our decision; scripts/make_golden.py builds its PyTorch UNet the same way). DoubleConv's
 * Sequential indices: 0 conv, 1 GroupNorm, 2 ReLU, 3 conv, 4 GroupNorm, 5 ReLU.
 * Weight layouts are ours (see ops.h); sf_param_from_torch/sf_param_to_torch convert one tensor. */
#ifndef SF_MODEL_H
#define SF_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SF_MAX_LEVELS 12
#define SF_GN_EPS 1e-5f /* GroupNorm epsilon (torch default) */

typedef enum {
  SF_PARAM_CONV3_W = 0, /* (3,3,3,Cin,Cout) */
  SF_PARAM_GN_GAMMA,    /* (C) */
  SF_PARAM_GN_BETA,     /* (C) */
  SF_PARAM_UPCONV_W,    /* (Cin,2,2,2,Cout) */
  SF_PARAM_UPCONV_B,    /* (Cout) */
  SF_PARAM_OUT_W,       /* (Cin,Cout) */
  SF_PARAM_OUT_B,       /* (Cout) */
} sf_param_kind;

typedef struct {
  char name[64];       /* PyTorch name, e.g. "down1.maxpool_conv.1.double_conv.0.weight" */
  sf_param_kind kind;
  int cin, cout;       /* channel counts of the owning layer */
  size_t numel;
  size_t offset;       /* in floats, into the flat arena */
  float init_bound;    /* U(-bound, bound) for weights and biases; GN: gamma=1, beta=0 */
} sf_param_desc;

typedef struct sf_unet {
  int problem_scale, bottleneck, levels; /* levels L = problem_scale - bottleneck >= 1 */
  int base_channels, n_classes, groups, in_channels;
  int edge[SF_MAX_LEVELS + 1];     /* spatial edge at level i: 2^problem_scale / 2^i */
  int channels[SF_MAX_LEVELS + 1]; /* c_i = base * 2^i */
  int nparams;
  sf_param_desc *params;
  size_t total_params;             /* floats in the arena */
  double forward_flops;            /* conv + transposed-conv flops of one forward pass (2 per MAC) */
} sf_unet;

/* Builds the topology. Returns 0, or -1 with a message in err (e.g. a channel count not divisible
 * by groups, levels < 1, levels > SF_MAX_LEVELS). */
int sf_unet_build(sf_unet *u, int problem_scale, int bottleneck, int base_channels, int n_classes,
                  int groups, char *err, size_t errlen);
void sf_unet_free(sf_unet *u);
/* Per-level table: shape, channels, parameters; then the total. */
void sf_unet_print(const sf_unet *u, FILE *out);
/* PyTorch-default init (spec §5.3) with our RNG: each tensor gets its own stream (seed, index). */
void sf_unet_init_params(const sf_unet *u, float *arena, uint64_t seed);
/* Looks up a parameter by PyTorch name; -1 if absent. */
int sf_unet_find_param(const sf_unet *u, const char *name);
/* Convert one tensor between PyTorch's layout and ours (dst and src must not alias). */
void sf_param_from_torch(const sf_param_desc *p, float *ours, const float *torch_layout);
void sf_param_to_torch(const sf_param_desc *p, float *torch_layout, const float *ours);

/* ---- sequential reference network (oracle) ---- */
typedef struct sf_unet_ref sf_unet_ref; /* activations and scratch for one sample */
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

#endif
