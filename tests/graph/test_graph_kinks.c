/* The near-kink allowance of the reference comparisons (graph_compare.h: gt_match_ref_grads), which
 * the graph tests need only on CPUs whose float sums decide a ReLU input near 0 the other way, tested
 * on every machine: the reference's own gradient with one near-kink decision taken the other way
 * (what such a CPU computes) differs from the reference by more than 1e-5 and is accepted after
 * taking that decision the other way; the same gradient with one conv weight gradient scaled by
 * 1.001, or with one tap of a conv weight gradient zeroed, is still refused. ps 4, base 16 (many ReLU
 * inputs, so several lie within GT_KINK_DELTA of 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_compare.h"
#include "graph_testlib.h"
#include "scaffold/common.h"
#include "testutil.h"
#include "unet_ref.h"

#define RTOL 1e-5

/* gt_match_ref_grads on got vs a copy of want, expecting `expect` (1 match, 0 refused); a refusal that
 * is expected is not counted as a failure. */
static void expect_match(const char *what, const gt_problem *p, sf_unet_ref *ref, const float *x, const float *got,
                         const float *want, int expect)
{
  size_t n = p->u.total_params;
  float *w = sf_malloc(n * sizeof(float), "reference gradient copy");
  memcpy(w, want, n * sizeof(float));
  int failures = sf_test_failures, checks = sf_test_checks;
  if (!expect) printf("(the next check must FAIL)\n");
  int got_match = gt_match_ref_grads(what, p, ref, p->params0, x, got, w, RTOL);
  if (!expect) sf_test_failures = failures, sf_test_checks = checks; /* the refusal is the expected outcome */
  SF_CHECK(got_match == expect, "%s: gt_match_ref_grads returned %d, expected %d", what, got_match, expect);
  free(w);
}

int main(void)
{
  gt_problem p;
  gt_problem_init(&p, 4, 16, 4, 4, 13);
  const sf_unet *u = &p.u;
  const size_t n = u->total_params;
  float *x = sf_malloc(p.nvox * 3 * sizeof(float), "sample");
  uint16_t *lab = sf_malloc(p.nvox * sizeof(uint16_t), "labels");
  gt_sample(&p, 0, x, lab);
  sf_unet_ref *ref = sf_unet_ref_create(u);
  float *want = sf_calloc(n, sizeof(float), "reference gradient"), *got = sf_malloc(n * sizeof(float), "gradient");
  double out[3];
  sf_unet_ref_train_step(ref, p.params0, want, x, lab, p.cw, out, 0);

  /* the near-kink decision whose other side changes the gradient most */
  int nk = sf_unet_ref_near_kinks(ref, p.params0, GT_KINK_DELTA), best = -1;
  double best_change = 0;
  for (int k = 0; k < nk; k++) {
    sf_unet_ref_grads_flipped(ref, p.params0, x, k, got, 0);
    double e = sf_max_rel_err_f(got, want, n, NULL);
    if (e > best_change) best_change = e, best = k;
  }
  printf("%d decision(s) within %.0e of their kink; the largest change of the gradients by one: %.3e\n", nk,
         (double)GT_KINK_DELTA, best_change);
  SF_CHECK(nk > 0 && best_change > 10 * RTOL,
           "the problem has %d near-kink decision(s), largest change %.3e: the test needs one above %.0e", nk,
           best_change, 10 * RTOL);
  if (best >= 0) {
    sf_unet_ref_grads_flipped(ref, p.params0, x, best, got, 0);
    expect_match("one decision the other way", &p, ref, x, got, want, 1);

    int w = sf_unet_find_param(u, "down1.maxpool_conv.1.double_conv.0.weight");
    SF_ASSERT(w >= 0);
    float *scaled = sf_malloc(n * sizeof(float), "perturbed gradient");
    memcpy(scaled, got, n * sizeof(float));
    for (size_t i = u->params[w].offset; i < u->params[w].offset + u->params[w].numel; i++) scaled[i] *= 1.001f;
    expect_match("one decision the other way, and a conv weight gradient x 1.001", &p, ref, x, scaled, want, 0);

    memcpy(scaled, got, n * sizeof(float));
    int c0 = sf_unet_find_param(u, "inc.double_conv.0.weight");
    SF_ASSERT(c0 >= 0);
    size_t row = (size_t)u->params[c0].numel / 27; /* one tap's rows of the first conv's weight gradient */
    for (size_t i = u->params[c0].offset; i < u->params[c0].offset + row; i++) scaled[i] = 0;
    expect_match("one decision the other way, and one tap of a weight gradient dropped", &p, ref, x, scaled, want, 0);
    free(scaled);
  }
  sf_unet_ref_destroy(ref);
  free(want);
  free(got);
  free(x);
  free(lab);
  gt_problem_free(&p);
  return sf_test_end();
}
