/* Upstream's other optimizers through the task graph (spec §6.4): two training steps with SGD
 * (momentum 0) and with RMSprop (under both accepted names) on 1 and 3 slabs equal the sequential
 * reference (sf_unet_ref_train_step + clip + sf_sgd_step / sf_rmsprop_step); RMSprop's square_avg
 * is the graph's v (m stays zero), SGD leaves both zero; the updates differ from Adam's (the
 * config's optimizer is the one that ran); an unknown name is refused, naming the key and the
 * accepted names. ps 4, base 8, K = 4, 4 groups; 2 CPU workers, lws. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_testlib.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/graph.h"
#include "testutil.h"

#define RTOL 1e-5
#define NSTEPS 2

static int all_zero(const float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (x[i] != 0.0f) return 0;
  return 1;
}

static void run_case(const gt_problem *p, const char *name, const gt_result *adam)
{
  const size_t n = p->u.total_params;
  gt_result ref, one, many;
  gt_set_optimizer(name);
  gt_run_ref(p, NSTEPS, 1e-3, &ref);
  gt_run_graph(p, 1, 0, NSTEPS, 1e-3, &one);
  gt_run_graph(p, 3, 0, NSTEPS, 1e-3, &many);
  char what[64];
  snprintf(what, sizeof what, "%s: 1 slab vs reference", name);
  gt_compare(what, &one, &ref, n, NSTEPS, RTOL);
  snprintf(what, sizeof what, "%s: 3 slabs vs reference", name);
  gt_compare(what, &many, &ref, n, NSTEPS, RTOL);
  const int rms = sf_optimizer_find(name)->kind == SF_OPT_RMSPROP;
  SF_CHECK(all_zero(many.m, n), "%s: the graph's m is not zero (nothing should write it)", name);
  SF_CHECK(rms != all_zero(many.v, n), "%s: the graph's v is %s (RMSprop keeps square_avg there, SGD nothing)",
           name, rms ? "all zero" : "not zero");
  size_t same = 0;
  for (size_t i = 0; i < n; i++) same += many.params[i] == adam->params[i];
  SF_CHECK(same < n / 2, "%s: %zu of %zu parameters equal Adam's after %d steps (was Adam run instead?)", name, same,
           n, NSTEPS);
  printf("ok   %s: loss step 1 = %.6f, step 2 = %.6f (ref %.6f); %zu of %zu params equal Adam's\n", name,
         many.out[0][2], many.out[1][2], ref.out[1][2], same, n);
  gt_result_free(&ref);
  gt_result_free(&one);
  gt_result_free(&many);
}

static void check_refused(const gt_problem *p)
{
  float *params = sf_malloc(p->u.total_params * sizeof(float), "params");
  memcpy(params, p->params0, p->u.total_params * sizeof(float));
  sf_config c;
  sf_config_init(&c);
  free(c.optimizer);
  c.optimizer = sf_strdup("adagrad");
  char err[512] = "";
  sf_graph *g = sf_graph_create(&p->u, &c, params, err, sizeof err);
  SF_CHECK(g == NULL, "optimizer 'adagrad' accepted");
  if (g) sf_graph_destroy(g);
  SF_CHECK(strstr(err, "optimizer") && strstr(err, "SGD") && strstr(err, "RMSProp"),
           "refusal does not name the key and the accepted names: %s", err);
  printf("ok   optimizer 'adagrad' refused: %s\n", err);
  sf_config_free(&c);
  free(params);
}

int main(void)
{
  gt_runtime_start("lws", 2);
  gt_problem p;
  gt_problem_init(&p, 4, 8, 4, 4, 11);
  gt_result adam;
  gt_set_optimizer("ADAM");
  gt_run_graph(&p, 3, 0, NSTEPS, 1e-3, &adam);
  run_case(&p, "SGD", &adam);
  run_case(&p, "RMSProp", &adam);
  run_case(&p, "RMSprop", &adam);
  check_refused(&p);
  gt_result_free(&adam);
  gt_problem_free(&p);
  gt_runtime_stop();
  gt_cleanup();
  return sf_test_end();
}
