/* Step probes (config keys `bound` and `export_graph`): after warm-up, the first training steps
 * can be recorded around the graph's submission and wait (sf_train_batch_step), so the measured time
 * is the step's makespan without the sample loading.
 *   bound: 1          step 1 recorded without dependencies (area bound), step 2 with them (StarPU's
 *                     DAG, our critical path and LP, computed when training ends); the report goes to
 *                     stdout and bound.json in the run directory (scaffold/bound.h).
 *   export_graph: D   step 1's task graph to D/graph.json and D/graph.dot (scaffold/graph_record.h).
 * In a distributed run only rank 0 records (its own tasks). */
#include <errno.h>
#include <string.h>

#include "scaffold/bound.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph_record.h"
#include "train_internal.h"

void sf_step_probes_arm(sf_tctx *t)
{
  sf_step_probes *p = &t->probes;
  int root = !sf_dist_active() || sf_dist_is_root();
  p->bound_next = root && t->c->bound ? 1 : 0;
  p->graph_next = root && t->c->export_graph[0] ? 1 : 0;
  if (p->graph_next && sf_mkdir_p(t->c->export_graph) != 0)
    sf_die(SF_EXIT_FAILURE, "export_graph: cannot create directory '%s': %s", t->c->export_graph, strerror(errno));
}

void sf_step_probes_before(sf_tctx *t)
{
  sf_step_probes *p = &t->probes;
  if (p->graph_next == 1) sf_graph_record_begin();
  if (p->bound_next == 1 || p->bound_next == 2) sf_bound_start(p->bound_next == 2);
}

static void bound_after(sf_tctx *t, double secs)
{
  sf_step_probes *p = &t->probes;
  sf_bound_stop();
  if (p->bound_next == 1) {
    p->area_s = secs;
    p->area_ms = sf_bound_area_ms(); /* a small LP: milliseconds */
    p->bound_next = 2;
    return;
  }
  p->deps_s = secs;
  p->bound_next = 3; /* the analysis and the LP wait for the end of training (sf_step_probes_finish) */
}

/* The deps window's analysis, LP and the report: at the end, so that their time (0.3 s at
 * problem_scale 5) does not count in the training throughput. */
static void bound_report(sf_tctx *t)
{
  sf_step_probes *p = &t->probes;
  char err[512];
  sf_bound_deps d;
  const char *dir = t->s->run_dir;
  if (sf_bound_deps_compute(dir, t->c->bound_lp_timeout, &d, err, sizeof err) != 0 ||
      sf_bound_report(dir, 1, p->area_s, p->area_ms, &d, p->deps_s, err, sizeof err) != 0)
    sf_die(SF_EXIT_FAILURE, "bound: %s", err);
  sf_graph_record_clear();
  p->bound_next = 0;
}

void sf_step_probes_after(sf_tctx *t, double secs)
{
  sf_step_probes *p = &t->probes;
  if (p->graph_next == 1) {
    char err[512];
    long n = sf_graph_record_ntasks();
    if (sf_graph_record_write(t->c->export_graph, err, sizeof err) != 0) sf_die(SF_EXIT_FAILURE, "export_graph: %s", err);
    sf_graph_record_clear();
    sf_info("export_graph: one training step, %ld tasks: %s/graph.json and graph.dot", n, t->c->export_graph);
    p->graph_next = 0;
  }
  if (p->bound_next == 1 || p->bound_next == 2) bound_after(t, secs);
}

void sf_step_probes_finish(sf_tctx *t)
{
  if (t->probes.bound_next == 3) bound_report(t);
  if (t->probes.bound_next)
    sf_warn("bound: the run ended before its two recorded training steps: no bound report (allow more steps)");
  if (t->probes.graph_next) sf_warn("export_graph: the run ended before a training step: no graph written");
}
