/* Implementation of tests/graph/graph_compare.h: bitwise comparison of two runs, and the step-by-step
 * comparison of a graph run with the sequential reference. */
#include "graph_compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "scaffold/common.h"
#include "testutil.h"

int gt_compare_bitwise(const char *what, const gt_result *a, const gt_result *b, size_t n, int nsteps)
{
  char name[192];
  int ok = 1;
  const char *names[4] = {"params", "grads", "m", "v"};
  const float *xa[4] = {a->params, a->grads, a->m, a->v}, *xb[4] = {b->params, b->grads, b->m, b->v};
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "%s: %s", what, names[i]);
    ok &= sf_check_bitwise_f(name, xa[i], xb[i], n);
  }
  if (a->hist && b->hist && a->nsteps == nsteps && b->nsteps == nsteps)
    for (int s = 0; s + 1 < nsteps; s++) /* the last step's state is compared above */
      for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s: step %d %s", what, s + 1, names[i]);
        ok &= sf_check_bitwise_f(name, gt_result_state(a, n, s, i), gt_result_state(b, n, s, i), n);
      }
  for (int s = 0; s < nsteps; s++) {
    int eq = memcmp(a->out[s], b->out[s], sizeof a->out[s]) == 0;
    SF_CHECK(eq, "%s: step %d [ce, dice, loss] differ: %.17g %.17g %.17g vs %.17g %.17g %.17g", what, s + 1,
             a->out[s][0], a->out[s][1], a->out[s][2], b->out[s][0], b->out[s][1], b->out[s][2]);
    ok &= eq;
  }
  if (ok) printf("ok   %s: losses of %d step(s) bitwise equal\n", what, nsteps);
  return ok;
}

double gt_tensor_rel_err(const sf_unet *u, const float *got, const float *want, size_t *worst)
{
  double amax = 0, err = 0;
  for (size_t k = 0; k < u->total_params; k++) amax = fmax(amax, fabs((double)want[k]));
  size_t wi = 0;
  for (int i = 0; i < u->nparams; i++) {
    const sf_param_desc *t = &u->params[i];
    double tmax = 0;
    for (size_t k = t->offset; k < t->offset + t->numel; k++) tmax = fmax(tmax, fabs((double)want[k]));
    double scale = fmax(fmax(tmax, GT_TENSOR_FLOOR * amax), 1e-30);
    for (size_t k = t->offset; k < t->offset + t->numel; k++) {
      double e = fabs((double)got[k] - (double)want[k]) / scale;
      if (isnan(got[k]) != isnan(want[k])) e = INFINITY;
      if (e > err) err = e, wi = k;
    }
  }
  if (worst) *worst = wi;
  return err;
}

int gt_check_close_tensors(const char *name, const sf_unet *u, const float *got, const float *want, double rtol)
{
  size_t w = 0;
  double e = gt_tensor_rel_err(u, got, want, &w);
  int t = 0;
  while (t + 1 < u->nparams && u->params[t + 1].offset <= w) t++;
  int ok = e <= rtol;
  SF_CHECK(e <= rtol,
           "%s: max relative error %.3e > %.1e (relative to its tensor's max |value|) in %s at [%zu]: got %.9g "
           "want %.9g",
           name, e, rtol, u->params[t].name, w, got[w], want[w]);
  if (ok)
    printf("ok   %s: max relative error %.3e <= %.1e (per tensor, worst in %s)\n", name, e, rtol, u->params[t].name);
  return ok;
}

/* What near-kink decision k is, for the info lines. */
static void describe_kink(const sf_ref_kink *k, char *buf, size_t len)
{
  if (k->y)
    snprintf(buf, len, "ReLU input %.2e from 0%s", (double)k->dist, k->pidx ? " (and its max-pool window)" : "");
  else
    snprintf(buf, len, "max-pool window with its two largest inputs %.2e apart", (double)k->dist);
}

int gt_match_ref_grads(const char *what, const gt_problem *p, sf_unet_ref *ref, const float *params, const float *x,
                       const float *got, float *want, double rtol)
{
  const size_t n = p->u.total_params;
  char name[224];
  double err = gt_tensor_rel_err(&p->u, got, want, NULL);
  int nk = err > rtol ? sf_unet_ref_near_kinks(ref, params, GT_KINK_DELTA) : 0, taken = 0;
  if (nk > 0) {
    float *delta = sf_malloc((size_t)nk * n * sizeof(float), "near-kink gradient changes");
    float *trial = sf_malloc(n * sizeof(float), "trial gradient");
    unsigned char used[SF_REF_MAX_KINKS] = {0};
    for (int k = 0; k < nk; k++) {
      float *d = delta + (size_t)k * n;
      sf_unet_ref_grads_flipped(ref, params, x, k, d, 0);
      for (size_t i = 0; i < n; i++) d[i] -= want[i];
    }
    while (err > rtol && taken < GT_MAX_FLIPS) { /* greedily, the decision that brings got closest */
      int best = -1;
      double best_err = err;
      for (int k = 0; k < nk; k++) {
        if (used[k]) continue;
        const float *d = delta + (size_t)k * n;
        for (size_t i = 0; i < n; i++) trial[i] = want[i] + d[i];
        double e = gt_tensor_rel_err(&p->u, got, trial, NULL);
        if (e < best_err) best = k, best_err = e;
      }
      if (best < 0 || best_err > 0.5 * err) break; /* a decision at a kink explains most of what it changes */
      const float *d = delta + (size_t)best * n;
      for (size_t i = 0; i < n; i++) want[i] += d[i];
      used[best] = 1;
      taken++;
      char desc[128];
      describe_kink(sf_unet_ref_kink(ref, best), desc, sizeof desc);
      printf("info %s: gradients %.3e from the reference; with its %s taken the other way: %.3e "
             "(%d decision(s) within %.0e of their kink)\n",
             what, err, desc, best_err, nk, (double)GT_KINK_DELTA);
      err = best_err;
    }
    free(delta);
    free(trial);
  }
  if (taken)
    snprintf(name, sizeof name, "%s: gradients (reference with %d near-kink decision(s) the other way)", what, taken);
  else
    snprintf(name, sizeof name, "%s: gradients", what);
  return gt_check_close_tensors(name, &p->u, got, want, rtol);
}

/* The part of a step check after the reference's gradient g (from a's state before step s): Adam's
 * moments and the parameter update of the reference's optimizer step against a's. */
static int check_optimizer_part(const char *step_what, const gt_problem *p, const gt_result *a, int s,
                                const float *g, const float *zeros, double rtol)
{
  const sf_unet *u = &p->u;
  const size_t n = u->total_params;
  const float *p0 = s ? gt_result_state(a, n, s - 1, 0) : a->params0;
  const float *m0 = s ? gt_result_state(a, n, s - 1, 2) : zeros, *v0 = s ? gt_result_state(a, n, s - 1, 3) : zeros;
  float *want[3]; /* params, m, v after the reference's optimizer step */
  const float *before[3] = {p0, m0, v0};
  for (int i = 0; i < 3; i++) {
    want[i] = sf_malloc(n * sizeof(float), "reference state");
    memcpy(want[i], before[i], n * sizeof(float));
  }
  unsigned char *ill = sf_calloc(n, 1, "conditioning marks");
  char name[256];
  gt_ref_clip_adam(u, want[0], want[1], want[2], g, a->lr, s + 1);
  snprintf(name, sizeof name, "%s: Adam m", step_what);
  int ok = gt_check_close_tensors(name, u, gt_result_state(a, n, s, 2), want[1], rtol);
  snprintf(name, sizeof name, "%s: Adam v", step_what);
  ok &= gt_check_close_tensors(name, u, gt_result_state(a, n, s, 3), want[2], rtol);
  sf_golden_mark_ill_conditioned(u, g, ill);
  snprintf(name, sizeof name, "%s: parameter update", step_what);
  ok &= sf_golden_check_update(name, u, p0, gt_result_state(a, n, s, 0), want[0], ill, a->lr, GT_UPDATE_TOL_LR) <=
        GT_UPDATE_TOL_LR;
  for (int i = 0; i < 3; i++) free(want[i]);
  free(ill);
  return ok;
}

/* One step of run a (0-based s) against the reference step from a's state before it. */
static int check_step(const char *what, const gt_problem *p, const gt_result *a, int s, sf_unet_ref *ref,
                      const float *zeros, double rtol)
{
  const size_t n = p->u.total_params;
  const float *p0 = s ? gt_result_state(a, n, s - 1, 0) : a->params0;
  float *x = sf_malloc(p->nvox * 3 * sizeof(float), "sample");
  uint16_t *lab = sf_malloc(p->nvox * sizeof(uint16_t), "labels");
  float *g = sf_calloc(n, sizeof(float), "reference gradients");
  char step_what[192], name[256];
  snprintf(step_what, sizeof step_what, "%s: step %d vs reference from the run's state", what, s + 1);
  gt_sample(p, s, x, lab);
  double out[3];
  sf_unet_ref_train_step(ref, p0, g, x, lab, p->cw, out, 0);
  snprintf(name, sizeof name, "%s: [ce, dice, loss]", step_what);
  int ok = sf_check_close_d(name, a->out[s], out, 3, rtol);
  ok &= gt_match_ref_grads(step_what, p, ref, p0, x, gt_result_state(a, n, s, 1), g, rtol);
  ok &= check_optimizer_part(step_what, p, a, s, g, zeros, rtol);
  free(g);
  free(x);
  free(lab);
  return ok;
}

/* One batch step of run a (batch[s] samples, the next ones in order) against the reference's batch
 * step from a's state before it. */
static int check_batch_step(const char *what, const gt_problem *p, const gt_result *a, const int *batch, int s,
                            sf_unet_ref *ref, const float *zeros, double rtol)
{
  const size_t n = p->u.total_params;
  const float *p0 = s ? gt_result_state(a, n, s - 1, 0) : a->params0;
  float *x[GT_MAX_BATCH];
  uint16_t *lab[GT_MAX_BATCH];
  int i0 = 0;
  for (int t = 0; t < s; t++) i0 += batch[t];
  for (int b = 0; b < batch[s]; b++) {
    x[b] = sf_malloc(p->nvox * 3 * sizeof(float), "sample");
    lab[b] = sf_malloc(p->nvox * sizeof(uint16_t), "labels");
    gt_sample(p, i0 + b, x[b], lab[b]);
  }
  float *g = sf_calloc(n, sizeof(float), "reference gradients");
  char step_what[192], name[256];
  snprintf(step_what, sizeof step_what, "%s: batch step %d (%d samples) vs reference from the run's state", what,
           s + 1, batch[s]);
  double out[3];
  sf_unet_ref_batch_step(ref, p0, g, batch[s], (const float *const *)x, (const uint16_t *const *)lab, p->cw, out,
                         0);
  snprintf(name, sizeof name, "%s: [ce, dice, loss]", step_what);
  int ok = sf_check_close_d(name, a->out[s], out, 3, rtol);
  snprintf(name, sizeof name, "%s: gradients", step_what);
  ok &= gt_check_close_tensors(name, &p->u, gt_result_state(a, n, s, 1), g, rtol);
  ok &= check_optimizer_part(step_what, p, a, s, g, zeros, rtol);
  free(g);
  for (int b = 0; b < batch[s]; b++) free(x[b]), free(lab[b]);
  return ok;
}

/* Every step of a against the reference from a's state: single samples (batch NULL) or batches */
static int check_steps(const char *what, const gt_problem *p, const gt_result *a, const int *batch, double rtol)
{
  SF_CHECK(a->hist != NULL && a->params0 == p->params0,
           "%s: the run kept no per-step state (more than %d steps) or started from other parameters", what,
           GT_MAX_CHECKED_STEPS);
  if (!a->hist || a->params0 != p->params0) return 0;
  sf_unet_ref *ref = sf_unet_ref_create(&p->u);
  float *zeros = sf_calloc(p->u.total_params, sizeof(float), "zero moments");
  int ok = 1;
  for (int s = 0; s < a->nsteps; s++)
    ok &= batch ? check_batch_step(what, p, a, batch, s, ref, zeros, rtol) : check_step(what, p, a, s, ref, zeros, rtol);
  free(zeros);
  sf_unet_ref_destroy(ref);
  return ok;
}

int gt_check_vs_ref_batches(const char *what, const gt_problem *p, const gt_result *a, const int *batch, double rtol)
{
  return check_steps(what, p, a, batch, rtol);
}

int gt_check_vs_ref(const char *what, const gt_problem *p, const gt_result *a, double rtol)
{
  return check_steps(what, p, a, NULL, rtol);
}
