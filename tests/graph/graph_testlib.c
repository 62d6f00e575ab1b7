/* Implementation of tests/graph/graph_testlib.h: problems, runtime start/stop, graph and reference runs
 * (the comparisons of runs are in graph_compare.c). */
#include "graph_testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/graph.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"
#include "scaffold/runtime.h"
#include "testutil.h"
#include "unet_ref.h"

static char *g_home;

void gt_problem_init(gt_problem *p, int ps, int base, int K, int groups, uint64_t seed)
{
  gt_problem_init_bn(p, ps, 3, base, K, groups, seed);
}

void gt_problem_init_bn(gt_problem *p, int ps, int bottleneck, int base, int K, int groups, uint64_t seed)
{
  char err[256];
  memset(p, 0, sizeof *p);
  if (sf_unet_build(&p->u, ps, bottleneck, base, K, groups, err, sizeof err) != 0) SF_ABORT("sf_unet_build: %s", err);
  p->params0 = sf_malloc(p->u.total_params * sizeof(float), "test parameters");
  sf_unet_init_params(&p->u, p->params0, seed);
  p->nvox = (size_t)p->u.edge[0] * p->u.edge[0] * p->u.edge[0];
  /* class weights from sample 0: w0 = T/bg, w_fg = T/fg */
  float *x = sf_malloc(p->nvox * 3 * sizeof(float), "sample");
  uint16_t *lab = sf_malloc(p->nvox * sizeof(uint16_t), "labels");
  gt_sample(p, 0, x, lab);
  size_t bg = 0;
  for (size_t i = 0; i < p->nvox; i++) bg += lab[i] == 0;
  size_t fg = p->nvox - bg;
  p->cw = sf_malloc((size_t)K * sizeof(float), "class weights");
  for (int k = 0; k < K; k++)
    p->cw[k] = (bg == 0 || fg == 0) ? 1.0f : (float)((double)p->nvox / (double)(k == 0 ? bg : fg));
  free(x);
  free(lab);
}

void gt_problem_free(gt_problem *p)
{
  free(p->params0);
  free(p->cw);
  sf_unet_free(&p->u);
}

void gt_sample(const gt_problem *p, int i, float *x, uint16_t *lab)
{
  const int G = p->u.edge[0], K = p->u.n_classes;
  sf_rng r;
  sf_rng_seed(&r, 1234, (uint64_t)i);
  sf_rng_fill_uniform(x, p->nvox * 3, 0.0f, 1.0f, &r);
  memset(lab, 0, p->nvox * sizeof(uint16_t));
  for (int b = 0; b < 3; b++) { /* three boxes of edge G/4..G/2, classes 1..K-1 */
    int cls = 1 + (int)sf_rng_below(&r, (uint64_t)(K - 1));
    int e = G / 4 + (int)sf_rng_below(&r, (uint64_t)(G / 4 + 1));
    int z0 = (int)sf_rng_below(&r, (uint64_t)(G - e + 1)), y0 = (int)sf_rng_below(&r, (uint64_t)(G - e + 1));
    int x0 = (int)sf_rng_below(&r, (uint64_t)(G - e + 1));
    for (int z = z0; z < z0 + e; z++)
      for (int y = y0; y < y0 + e; y++)
        for (int xx = x0; xx < x0 + e; xx++) {
          size_t v = ((size_t)z * G + y) * G + xx;
          lab[v] = (uint16_t)cls;
          x[v * 3 + (cls % 3)] += 0.5f; /* a visible colour per class */
        }
  }
}

static sf_config g_cfg;
static int g_cfg_live;
static int g_worker_nice = -1; /* -1: the config's default */

void gt_runtime_set_worker_nice(int nice) { g_worker_nice = nice; }

void gt_runtime_start(const char *scheduler, int ncpu)
{
  gt_runtime_start_on(getenv("SF_TEST_RUNTIME"), scheduler, ncpu);
}

/* StarPU's watchdog, unless the caller set one: a run in which no task finishes for 60 s (times
 * SF_TEST_SLOWDOWN) while tasks are pending makes StarPU print "The StarPU watchdog detected that no
 * task finished for ..." and abort, so a hang (one clean-clone CI run of graph_determinism was killed
 * at its timeout; 210 local repeats, under load up to 15, never hung) ends with that message and the
 * crash note's signal line instead of CTest's bare timeout. Ours take milliseconds. */
static void arm_starpu_watchdog(void)
{
  const char *slow = getenv("SF_TEST_SLOWDOWN");
  int factor = slow && atoi(slow) > 0 ? atoi(slow) : 1;
  char us[32];
  snprintf(us, sizeof us, "%lld", 60000000LL * factor);
  setenv("STARPU_WATCHDOG_TIMEOUT", us, 0);
  setenv("STARPU_WATCHDOG_CRASH", "1", 0);
}

void gt_runtime_start_on(const char *runtime, const char *scheduler, int ncpu)
{
  int host = runtime && *runtime && strcmp(runtime, "starpu") != 0;
  if (!g_home) {
    g_home = sf_test_tmpdir("graph-starpu-home");
    setenv("STARPU_HOME", g_home, 1);
    arm_starpu_watchdog();
  }
  sf_config_init(&g_cfg);
  g_cfg_live = 1;
  if (host) { /* no StarPU scheduler; the sequential executor has one thread */
    free(g_cfg.runtime);
    g_cfg.runtime = sf_strdup(runtime);
    scheduler = NULL;
    if (!strcmp(runtime, "sequential")) ncpu = 1;
  }
  if (scheduler) {
    free(g_cfg.scheduler);
    g_cfg.scheduler = sf_strdup(scheduler);
  }
  g_cfg.ncpu = ncpu;
  if (g_worker_nice >= 0) g_cfg.worker_nice = g_worker_nice;
  sf_runtime_init(&g_cfg);
}

void gt_runtime_stop(void)
{
  sf_runtime_shutdown();
  if (g_cfg_live) sf_config_free(&g_cfg);
  g_cfg_live = 0;
}

void gt_cleanup(void)
{
  if (g_home) sf_rm_rf(g_home);
  free(g_home);
  g_home = NULL;
}

void gt_result_alloc(gt_result *r, size_t n, int nsteps)
{
  memset(r, 0, sizeof *r);
  r->params = sf_calloc(n, sizeof(float), "result");
  r->grads = sf_calloc(n, sizeof(float), "result");
  r->m = sf_calloc(n, sizeof(float), "result");
  r->v = sf_calloc(n, sizeof(float), "result");
  if (nsteps <= GT_MAX_CHECKED_STEPS) r->hist = sf_calloc((size_t)nsteps * 4 * n, sizeof(float), "result history");
}

void gt_result_free(gt_result *r)
{
  free(r->params);
  free(r->grads);
  free(r->m);
  free(r->v);
  free(r->hist);
  memset(r, 0, sizeof *r);
}

void gt_result_note_step(gt_result *r, size_t n, int step, const float *params, const float *grads, const float *m,
                         const float *v)
{
  r->nsteps = step + 1;
  if (!r->hist) return;
  const float *src[4] = {params, grads, m, v};
  for (int i = 0; i < 4; i++) memcpy(gt_result_state(r, n, step, i), src[i], n * sizeof(float));
}

float *gt_result_state(const gt_result *r, size_t n, int step, int which)
{
  SF_ASSERT(r->hist && step >= 0 && step < r->nsteps && which >= 0 && which < 4);
  return r->hist + ((size_t)step * 4 + (size_t)which) * n;
}

void gt_run_graph(const gt_problem *p, int slabs, int determinism, int nsteps, double lr, gt_result *r)
{
  gt_run_graph_hook(p, slabs, determinism, nsteps, lr, r, NULL, NULL);
}

static const char *g_optimizer = "ADAM";
void gt_set_optimizer(const char *name) { g_optimizer = name; }
static int g_checkpointing;
void gt_set_checkpointing(int on) { g_checkpointing = on; }

/* One graph run's set-up: the result arrays, a copy of the initial parameters and the graph over
 * them, configured by the test's settings (local_batch_size = bmax). */
typedef struct {
  sf_config c;
  float *params;
  sf_graph *g;
} graph_run;

static void graph_run_open(graph_run *gr, const gt_problem *p, int slabs, int determinism, int bmax, int nsteps,
                           double lr, gt_result *r)
{
  const size_t n = p->u.total_params;
  SF_ASSERT(nsteps <= GT_MAX_STEPS && bmax <= GT_MAX_BATCH);
  gt_result_alloc(r, n, nsteps);
  r->params0 = p->params0;
  r->lr = lr;
  gr->params = sf_malloc(n * sizeof(float), "graph parameters");
  memcpy(gr->params, p->params0, n * sizeof(float));
  sf_config_init(&gr->c);
  gr->c.slabs = slabs;
  gr->c.more_determinism = determinism;
  gr->c.local_batch_size = bmax;
  gr->c.activation_checkpointing = g_checkpointing;
  free(gr->c.optimizer);
  gr->c.optimizer = sf_strdup(g_optimizer);
  char err[512];
  gr->g = sf_graph_create(&p->u, &gr->c, gr->params, err, sizeof err);
  if (!gr->g) SF_ABORT("sf_graph_create: %s", err);
  r->nslabs = sf_graph_nslabs(gr->g);
}

/* The final state into r, then the graph and the set-up freed. */
static void graph_run_close(graph_run *gr, const gt_problem *p, gt_result *r)
{
  gt_result_take_state(gr->g, r, p->u.total_params);
  sf_graph_destroy(gr->g);
  sf_config_free(&gr->c);
  free(gr->params);
}

/* The graph's state after step s into r's history (no-op without one) */
static void note_state(graph_run *gr, gt_result *r, size_t n, int s)
{
  if (!r->hist) return;
  sf_graph_acquire_state(gr->g, 0);
  gt_result_note_step(r, n, s, sf_graph_params(gr->g), sf_graph_grads(gr->g), sf_graph_adam_m(gr->g),
                      sf_graph_adam_v(gr->g));
  sf_graph_release_state(gr->g);
}

void gt_run_graph_hook(const gt_problem *p, int slabs, int determinism, int nsteps, double lr, gt_result *r,
                       gt_step_hook after_step, void *ctx)
{
  const size_t n = p->u.total_params;
  graph_run gr;
  graph_run_open(&gr, p, slabs, determinism, 1, nsteps, lr, r);
  float *x = sf_malloc(p->nvox * 3 * sizeof(float), "sample");
  uint16_t *lab = sf_malloc(p->nvox * sizeof(uint16_t), "labels");
  for (int s = 0; s < nsteps; s++) {
    gt_sample(p, s, x, lab);
    double t0 = sf_now();
    sf_graph_train_step(gr.g, x, lab, p->cw, lr, s + 1, r->out[s]);
    r->step_s[s] = sf_now() - t0;
    r->nsteps = s + 1;
    note_state(&gr, r, n, s);
    if (after_step) after_step(gr.g, s, ctx);
  }
  graph_run_close(&gr, p, r);
  free(x);
  free(lab);
}

static void ref_optimizer(const gt_problem *p, gt_result *r, double lr, long step);
void gt_ref_clip_adam(const sf_unet *u, float *params, float *m, float *v, const float *grads, double lr, int t)
{
  double sumsq = 0;
  for (int q = 0; q < u->nparams; q++) { /* per tensor, as the graph does */
    double part = 0;
    sf_sumsq_partial(&part, grads + u->params[q].offset, u->params[q].numel);
    sumsq += part;
  }
  float coef = sf_clip_coef(sumsq, SF_CLIP_MAX_NORM);
  for (int q = 0; q < u->nparams; q++) {
    size_t o = u->params[q].offset;
    sf_adam_step(params + o, m + o, v + o, grads + o, u->params[q].numel, lr, SF_ADAM_BETA1, SF_ADAM_BETA2,
                 SF_ADAM_EPS, t, coef);
  }
}

void gt_run_ref(const gt_problem *p, int nsteps, double lr, gt_result *r)
{
  const size_t n = p->u.total_params;
  SF_ASSERT(nsteps <= GT_MAX_STEPS);
  gt_result_alloc(r, n, nsteps);
  r->params0 = p->params0;
  r->lr = lr;
  memcpy(r->params, p->params0, n * sizeof(float));
  sf_unet_ref *ref = sf_unet_ref_create(&p->u);
  float *x = sf_malloc(p->nvox * 3 * sizeof(float), "sample");
  uint16_t *lab = sf_malloc(p->nvox * sizeof(uint16_t), "labels");
  for (int s = 0; s < nsteps; s++) {
    gt_sample(p, s, x, lab);
    memset(r->grads, 0, n * sizeof(float));
    double t0 = sf_now();
    sf_unet_ref_train_step(ref, r->params, r->grads, x, lab, p->cw, r->out[s], 0);
    ref_optimizer(p, r, lr, s + 1);
    r->step_s[s] = sf_now() - t0;
    gt_result_note_step(r, n, s, r->params, r->grads, r->m, r->v);
  }
  r->nslabs = 1;
  sf_unet_ref_destroy(ref);
  free(x);
  free(lab);
}

/* Sample indices of step s: the batches before it took the first ones. */
static int first_sample(const int *batch, int s)
{
  int i = 0;
  for (int t = 0; t < s; t++) i += batch[t];
  return i;
}

static int max_batch(const int *batch, int nsteps)
{
  int m = 1;
  for (int s = 0; s < nsteps; s++) m = batch[s] > m ? batch[s] : m;
  return m;
}

/* n samples from index i0 into freshly allocated arrays. */
static void batch_samples(const gt_problem *p, int i0, int n, float **x, uint16_t **lab)
{
  for (int b = 0; b < n; b++) {
    x[b] = sf_malloc(p->nvox * 3 * sizeof(float), "sample");
    lab[b] = sf_malloc(p->nvox * sizeof(uint16_t), "labels");
    gt_sample(p, i0 + b, x[b], lab[b]);
  }
}

static void free_samples(int n, float **x, uint16_t **lab)
{
  for (int b = 0; b < n; b++) {
    free(x[b]);
    free(lab[b]);
  }
}

void gt_run_graph_batches(const gt_problem *p, int slabs, int determinism, int nsteps, const int *batch, double lr,
                          gt_result *r)
{
  graph_run gr;
  graph_run_open(&gr, p, slabs, determinism, max_batch(batch, nsteps), nsteps, lr, r);
  for (int s = 0; s < nsteps; s++) {
    float *x[GT_MAX_BATCH];
    uint16_t *lab[GT_MAX_BATCH];
    batch_samples(p, first_sample(batch, s), batch[s], x, lab);
    double t0 = sf_now();
    sf_graph_train_batch(gr.g, batch[s], (const float *const *)x, (const uint16_t *const *)lab, p->cw, lr, s + 1,
                         r->out[s]);
    r->step_s[s] = sf_now() - t0;
    r->nsteps = s + 1;
    note_state(&gr, r, p->u.total_params, s);
    free_samples(batch[s], x, lab);
  }
  graph_run_close(&gr, p, r);
}

/* clip_grad_norm_(SF_CLIP_MAX_NORM) + the optimizer on the host, per tensor as the graph's tasks. */
static void ref_optimizer(const gt_problem *p, gt_result *r, double lr, long step)
{
  double sumsq = 0;
  for (int q = 0; q < p->u.nparams; q++) {
    double part = 0;
    sf_sumsq_partial(&part, r->grads + p->u.params[q].offset, p->u.params[q].numel);
    sumsq += part;
  }
  float coef = sf_clip_coef(sumsq, SF_CLIP_MAX_NORM);
  const sf_optimizer_kind kind = sf_optimizer_find(g_optimizer)->kind;
  for (int q = 0; q < p->u.nparams; q++) {
    size_t o = p->u.params[q].offset;
    if (kind == SF_OPT_SGD) {
      sf_sgd_step(r->params + o, r->grads + o, p->u.params[q].numel, lr, coef);
      continue;
    }
    if (kind == SF_OPT_RMSPROP) {
      sf_rmsprop_step(r->params + o, r->v + o, r->grads + o, p->u.params[q].numel, lr, SF_RMSPROP_ALPHA,
                      SF_RMSPROP_EPS, coef);
      continue;
    }
    sf_adam_step(r->params + o, r->m + o, r->v + o, r->grads + o, p->u.params[q].numel, lr, SF_ADAM_BETA1,
                 SF_ADAM_BETA2, SF_ADAM_EPS, step, coef);
  }
}

static int same_bits(const char *name, const float *a, const float *b, size_t n)
{
  return sf_check_bitwise_f(name, a, b, n);
}

int gt_compare(const char *what, const gt_result *a, const gt_result *b, size_t n, int nsteps, double rtol)
{
  char name[160];
  int ok = 1;
  const char *names[4] = {"params", "m", "v", "grads"};
  const float *xa[4] = {a->params, a->m, a->v, a->grads}, *xb[4] = {b->params, b->m, b->v, b->grads};
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "%s: %s", what, names[i]);
    ok &= rtol == 0 ? same_bits(name, xa[i], xb[i], n) : sf_check_close_f(name, xa[i], xb[i], n, rtol);
  }
  for (int s = 0; s < nsteps; s++) {
    snprintf(name, sizeof name, "%s: step %d [ce, dice, loss]", what, s + 1);
    if (rtol == 0) {
      int eq = memcmp(a->out[s], b->out[s], sizeof a->out[s]) == 0;
      SF_CHECK(eq, "%s differ: %.17g %.17g %.17g vs %.17g %.17g %.17g", name, a->out[s][0], a->out[s][1],
               a->out[s][2], b->out[s][0], b->out[s][1], b->out[s][2]);
      ok &= eq;
    } else {
      ok &= sf_check_close_d(name, a->out[s], b->out[s], 3, rtol);
    }
  }
  return ok;
}

size_t gt_rss_bytes(void)
{
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, rss = 0;
  if (fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
  fclose(f);
  return (size_t)rss * (size_t)sysconf(_SC_PAGESIZE);
}

void gt_result_take_state(sf_graph *g, gt_result *r, size_t n)
{
  sf_graph_acquire_state(g, 0);
  memcpy(r->params, sf_graph_params(g), n * sizeof(float));
  memcpy(r->grads, sf_graph_grads(g), n * sizeof(float));
  memcpy(r->m, sf_graph_adam_m(g), n * sizeof(float));
  memcpy(r->v, sf_graph_adam_v(g), n * sizeof(float));
  sf_graph_release_state(g);
}
