/* Step probes (config keys `bound` and `export_graph`): after warm-up, the first training step can
 * be recorded around the graph's submission and wait (sf_train_batch_step), so the measured time is
 * the step's makespan without the sample loading.
 *   bound: 1          the step's task graph is recorded (scaffold/graph_record.h); when training
 *                     ends, its critical path and work / workers from the perfmodels, its MILP and
 *                     the report (stdout, bound.json, graph.json, graph.dot in the run directory;
 *                     scaffold/bound.h). StarPU's own bound recorder is not used here: recording
 *                     with it (even without dependencies) made runs at problem_scale 5 with 64 base
 *                     channels abort on a StarPU coherency assertion in the following step, under
 *                     every scheduler; the same runs without it, or with only our recorder, finished.
 *   export_graph: D   the step's task graph to D/graph.json and D/graph.dot.
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
  if (p->graph_next == 1 || p->bound_next == 1) sf_graph_record_begin();
}

void sf_step_probes_after(sf_tctx *t, double secs)
{
  sf_step_probes *p = &t->probes;
  if (p->graph_next != 1 && p->bound_next != 1) return;
  sf_graph_record_stop();
  if (p->graph_next == 1) {
    char err[512];
    long n = sf_graph_record_ntasks();
    if (sf_graph_record_write(t->c->export_graph, err, sizeof err) != 0) sf_die(SF_EXIT_FAILURE, "export_graph: %s", err);
    sf_info("export_graph: one training step, %ld tasks: %s/graph.json and graph.dot", n, t->c->export_graph);
    p->graph_next = 0;
  }
  if (p->bound_next == 1) {
    p->deps_s = secs;
    p->bound_next = 3; /* the analysis, the LP and the report wait for the end of training */
  } else {
    sf_graph_record_clear();
  }
}

/* The bound analysis and report, at the end of training: their time (0.3 s at problem_scale 5)
 * does not count in the throughput, and the perfmodels are queried after the measured steps
 * (querying an uncalibrated model turns StarPU's calibration on). */
static void bound_report(sf_tctx *t)
{
  sf_step_probes *p = &t->probes;
  char err[512];
  sf_bound_deps d;
  const char *dir = t->s->run_dir;
  if (sf_bound_deps_compute(dir, t->c->bound_lp_timeout, &d, err, sizeof err) != 0 ||
      sf_bound_report(dir, 0, 0, -1, &d, p->deps_s, err, sizeof err) != 0)
    sf_die(SF_EXIT_FAILURE, "bound: %s", err);
  sf_graph_record_clear();
  p->bound_next = 0;
}

void sf_step_probes_finish(sf_tctx *t)
{
  if (t->probes.bound_next == 3) bound_report(t);
  if (t->probes.bound_next)
    sf_warn("bound: the run ended before its recorded training step: no bound report (allow more steps)");
  if (t->probes.graph_next) sf_warn("export_graph: the run ended before a training step: no graph written");
}
