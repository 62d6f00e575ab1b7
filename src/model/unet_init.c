/* PyTorch-default initialisation of the U-Net parameters (spec §5.3), drawn from our RNG:
 *   3^3 conv weight       U(+-1/sqrt(27 cin))          (kaiming_uniform, a = sqrt(5))
 *   ConvTranspose w and b U(+-1/sqrt(8 cout))          (torch's fan_in uses weight dim 1)
 *   OutConv w and b       U(+-1/sqrt(cin))
 *   GroupNorm             gamma 1, beta 0
 * Tensor i draws from stream sf_rng_mix(SF_UNET_INIT_TAG, i) of `seed`, so the result does not
 * depend on the order in which tensors are initialised or on the thread that does it. */
#include <stddef.h>

#include "scaffold/common.h"
#include "scaffold/model.h"
#include "scaffold/rng.h"

#define SF_UNET_INIT_TAG 0x756e6574696e6974ULL /* "unetinit" */

void sf_unet_init_params(const sf_unet *u, float *arena, uint64_t seed)
{
  for (int i = 0; i < u->nparams; i++) {
    const sf_param_desc *p = &u->params[i];
    float *w = arena + p->offset;
    switch (p->kind) {
    case SF_PARAM_GN_GAMMA:
      for (size_t k = 0; k < p->numel; k++) w[k] = 1.0f;
      break;
    case SF_PARAM_GN_BETA:
      for (size_t k = 0; k < p->numel; k++) w[k] = 0.0f;
      break;
    case SF_PARAM_CONV3_W:
    case SF_PARAM_UPCONV_W:
    case SF_PARAM_UPCONV_B:
    case SF_PARAM_OUT_W:
    case SF_PARAM_OUT_B: {
      sf_rng r;
      sf_rng_seed(&r, seed, sf_rng_mix(SF_UNET_INIT_TAG, (uint64_t)i));
      sf_rng_fill_uniform(w, p->numel, -p->init_bound, p->init_bound, &r);
      break;
    }
    default:
      SF_ABORT("parameter %s has unknown kind %d", p->name, (int)p->kind);
    }
  }
}
