/* PyTorch-default init (spec §5.3): every weight/bias within its kind's bound, GroupNorm gamma 1 and
 * beta 0 exactly, deterministic for a seed, different for another seed, independent per tensor,
 * and roughly uniform (mean ~ 0, variance ~ bound^2/3) on the large tensors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/model.h"
#include "testutil.h"

static double expected_bound(const sf_param_desc *p)
{
  switch (p->kind) {
  case SF_PARAM_CONV3_W: return 1.0 / sqrt(27.0 * p->cin);
  case SF_PARAM_UPCONV_W:
  case SF_PARAM_UPCONV_B: return 1.0 / sqrt(8.0 * p->cout);
  case SF_PARAM_OUT_W:
  case SF_PARAM_OUT_B: return 1.0 / sqrt((double)p->cin);
  default: return 0;
  }
}

int main(void)
{
  sf_unet u;
  char err[256];
  /* ps 6 b 3 base 16: tensors of 27*3*16 = 1296 up to 27*128*128 = 442k elements */
  if (sf_unet_build(&u, 6, 3, 16, 6, 8, err, sizeof err) != 0) {
    fprintf(stderr, "build failed: %s\n", err);
    return 1;
  }
  size_t n = u.total_params;
  float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)), *c = malloc(n * sizeof(float));
  sf_unet_init_params(&u, a, 42);
  sf_unet_init_params(&u, b, 42);
  sf_unet_init_params(&u, c, 43);
  SF_CHECK(memcmp(a, b, n * sizeof(float)) == 0, "two inits with seed 42 differ");

  int nweights = 0;
  for (int i = 0; i < u.nparams; i++) {
    const sf_param_desc *p = &u.params[i];
    const float *w = a + p->offset, *w43 = c + p->offset;
    if (p->kind == SF_PARAM_GN_GAMMA || p->kind == SF_PARAM_GN_BETA) {
      float want = p->kind == SF_PARAM_GN_GAMMA ? 1.0f : 0.0f;
      size_t bad = 0;
      for (size_t k = 0; k < p->numel; k++) bad += w[k] != want;
      SF_CHECK(bad == 0, "%s: %zu of %zu elements are not exactly %g", p->name, bad, p->numel, want);
      continue;
    }
    nweights++;
    double bound = expected_bound(p);
    SF_CHECK(fabs(p->init_bound - bound) <= 1e-7 * bound, "%s: init_bound %.9g, spec §5.3 gives %.9g", p->name,
             p->init_bound, bound);
    double sum = 0, sq = 0, maxabs = 0;
    size_t same = 0;
    for (size_t k = 0; k < p->numel; k++) {
      sum += w[k];
      sq += (double)w[k] * w[k];
      maxabs = fmax(maxabs, fabs(w[k]));
      same += w[k] == w43[k];
    }
    SF_CHECK(maxabs <= (float)bound, "%s: max |w| %.9g exceeds the bound %.9g", p->name, maxabs, bound);
    SF_CHECK(same < p->numel / 100 + 1, "%s: %zu of %zu elements equal under seeds 42 and 43", p->name, same,
             p->numel);
    if (p->numel >= 1000) {
      double mean = sum / p->numel, var = sq / p->numel - mean * mean, want_var = bound * bound / 3;
      double se_mean = sqrt(want_var / p->numel); /* 6 standard errors: never fails by chance */
      SF_CHECK(fabs(mean) < 6 * se_mean, "%s: mean %.3g, want 0 +- %.3g", p->name, mean, 6 * se_mean);
      SF_CHECK(fabs(var / want_var - 1) < 6 * sqrt(0.8 / p->numel), "%s: variance %.4g, want %.4g (bound^2/3)",
               p->name, var, want_var);
      SF_CHECK(maxabs > 0.95 * bound, "%s: max |w| %.4g, want close to the bound %.4g", p->name, maxabs, bound);
    }
  }
  /* 3^3 conv weights 2(L+1) + 2L, transposed-conv w and b 2L, OutConv w and b 2 */
  SF_CHECK(nweights == 6 * u.levels + 4, "%d weight/bias tensors, want %d", nweights, 6 * u.levels + 4);

  /* per-tensor streams: two tensors of the same shape must not repeat each other */
  int i1 = sf_unet_find_param(&u, "inc.double_conv.3.weight");
  int i2 = sf_unet_find_param(&u, "up3.conv.double_conv.3.weight");
  SF_CHECK(i1 >= 0 && i2 >= 0 && u.params[i1].numel == u.params[i2].numel, "expected two 16x16 conv weights");
  if (i1 >= 0 && i2 >= 0)
    SF_CHECK(memcmp(a + u.params[i1].offset, a + u.params[i2].offset, u.params[i1].numel * sizeof(float)) != 0,
             "two tensors got identical values");
  free(a);
  free(b);
  free(c);
  sf_unet_free(&u);
  return sf_test_end();
}
