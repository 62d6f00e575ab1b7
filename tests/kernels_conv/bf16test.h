/* Shared by the bf16 kernel tests (test_conv_bf16.c, test_upconv_bf16.c): operands rounded as the kernels round
 * them, and the three checks of a bf16 result: against the fp32 reference on rounded operands (summation error
 * only), against it on the raw operands (bf16 tolerance), and at least some distance from the latter (the
 * operands really are rounded). */
#ifndef SF_BF16TEST_H
#define SF_BF16TEST_H

#include <stdio.h>

#include "convtest.h"
#include "scaffold/ops.h"
#include "testutil.h"

#define RTOL_EXACT 1e-5 /* kernel vs reference on bf16-rounded operands: fp32 summation error only */
#define RTOL_BF16 2e-2  /* kernel vs reference on fp32 operands */
#define MIN_BF16 1e-4   /* ... and at least this far from it: the operands are rounded */

static inline float *ct_rounded(const float *a, size_t n)
{
  if (!a) return NULL;
  float *r = ct_zeros(n);
  sf_bf16_round_floats(r, a, n);
  return r;
}

/* out = kernel(in), exact = ref(rounded in), fp32 = ref(in) */
static inline void ct_check_bf16(const char *name, const float *out, const float *exact, const float *fp32, size_t n)
{
  char nm[256];
  snprintf(nm, sizeof nm, "%s vs reference on bf16 operands", name);
  sf_check_close_f(nm, out, exact, n, RTOL_EXACT);
  snprintf(nm, sizeof nm, "%s vs fp32 reference (bf16 tolerance)", name);
  sf_check_close_f(nm, out, fp32, n, RTOL_BF16);
  double e = sf_max_rel_err_f(out, fp32, n, NULL);
  SF_CHECK(e >= MIN_BF16, "%s: differs from fp32 by only %.3e < %.1e: operands not rounded to bf16?", name, e,
           MIN_BF16);
}

#endif
