/* Theoretical lower bounds of recorded training steps (scaffold/bound.h, docs/scheduling.md):
 * StarPU's bound recorder and GLPK for the area bound; for a window recorded with dependencies,
 * StarPU's DAG (bound.dot), and from the task-graph recorder (graph_record.c) with the perfmodels'
 * estimates, the critical path and StarPU's dependency-aware MILP written by us (bound_deps.lp). */
#include "scaffold/bound.h"

#include <errno.h>
#include <math.h>
#include <starpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph_record.h"

/* Above this many ms a bound is not a schedule but StarPU's stand-in for "no estimate": the area
 * LP gives a worker without an estimate a 1e9 ms coefficient. */
#define SF_BOUND_UNCALIBRATED_MS 1e8

static int g_deps;      /* the window records dependencies: our task-graph recorder runs */
static int g_starpu_dag; /* ... and StarPU's bound recorder with dependencies too */
static int g_starpu_on;  /* a StarPU bound recording is running */

void sf_bound_start(int deps, int starpu_dag)
{
  g_deps = deps;
  g_starpu_dag = deps && starpu_dag;
  g_starpu_on = !deps || starpu_dag;
  if (g_starpu_on) starpu_bound_start(g_starpu_dag, 0);
  if (deps) sf_graph_record_begin();
}

void sf_bound_stop(void)
{
  if (g_starpu_on) starpu_bound_stop();
  g_starpu_on = 0;
  if (g_deps) sf_graph_record_stop();
}

double sf_bound_area_ms(void)
{
  double res = 0;
  starpu_bound_compute(&res, NULL, 0);
  if (!isfinite(res) || res <= 0 || res > SF_BOUND_UNCALIBRATED_MS) return -1;
  return res;
}

/* Expected duration (ms) of recorded task v on worker w from its history-based perfmodel; -1 when
 * there is no calibrated estimate (fewer samples than StarPU's minimum, or no implementation). */
static double expected_ms(const sf_graph_task_view *v, int w)
{
  struct starpu_perfmodel *m = v->cl ? v->cl->model : NULL;
  if (!m) return -1;
  struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype(w, 0);
  double us = arch ? starpu_perfmodel_history_based_expected_perf(m, arch, v->footprint) : NAN;
  return isfinite(us) && us > 0 ? us * 1e-3 : -1;
}

typedef struct {
  long n;
  int nw;
  double *dur;     /* n x nw, ms or -1 */
  uint64_t *anc;   /* n x words: ancestor bitsets */
  long words;
} deps_graph;

static int is_anc(const deps_graph *g, long child, long parent)
{
  return (g->anc[child * g->words + parent / 64] >> (parent % 64)) & 1;
}

/* Durations, ancestor sets, work and critical path (each task at its fastest estimate). */
static void deps_analyse(deps_graph *g, sf_bound_deps *d)
{
  g->n = sf_graph_record_ntasks();
  g->nw = (int)starpu_worker_get_count();
  g->words = (g->n + 63) / 64;
  g->dur = sf_malloc((size_t)(g->n ? g->n : 1) * (size_t)g->nw * sizeof(double), "bound durations");
  g->anc = sf_calloc((size_t)(g->n ? g->n : 1) * (size_t)g->words + 1, sizeof(uint64_t), "bound ancestors");
  double *fin = sf_malloc((size_t)(g->n ? g->n : 1) * sizeof(double), "bound critical path");
  d->ntasks = g->n;
  d->nworkers = g->nw;
  for (long i = 0; i < g->n; i++) {
    sf_graph_task_view v;
    sf_graph_record_view(i, &v);
    double best = -1, start = 0;
    for (int w = 0; w < g->nw; w++) {
      double ms = expected_ms(&v, w);
      g->dur[i * g->nw + w] = ms;
      if (ms >= 0 && (best < 0 || ms < best)) best = ms;
    }
    uint64_t *a = g->anc + i * g->words;
    for (long k = 0; k < v.npreds; k++) {
      long p = v.preds[k];
      const uint64_t *ap = g->anc + p * g->words;
      for (long x = 0; x < g->words; x++) a[x] |= ap[x];
      a[p / 64] |= 1ull << (p % 64);
      if (fin[p] > start) start = fin[p];
    }
    d->nedges += v.npreds;
    if (best < 0) d->nuncal++;
    else d->work_ms += best;
    fin[i] = start + (best > 0 ? best : 0);
    if (fin[i] > d->cp_ms) d->cp_ms = fin[i];
  }
  if (d->nuncal) d->cp_ms = -1;
  free(fin);
}

/* StarPU's dependency-aware formulation (src/profiling/bound.c of StarPU 1.3, lp_solve format):
 * each task on exactly one worker, completion = start + duration there, starts after its
 * predecessors complete, and for each unordered pair of independent tasks and each worker both can
 * use, a binary says which goes first. Ancestry comes from bitsets (StarPU's writer searches the DAG
 * for every pair and does not finish on a training step). Returns 1 written, 0 past the limit. */
static int write_lp(FILE *f, const deps_graph *g, double timeout_s, double t0)
{
  double big = 1e5; /* ms; must exceed any makespan */
  double total = 0;
  for (long i = 0; i < g->n * g->nw; i++) total += g->dur[i] > 0 ? g->dur[i] : 0;
  if (10 * total > big) big = 10 * total;
  fprintf(f, "/* ScaFFold-StarPU: dependency-aware lower bound of one training step (bound: 1), StarPU's\n"
             "   formulation, lp_solve format; durations in ms from the perfmodels. Solve: scripts/bound-solve */\n"
             "min: tmax;\n\n/* tmax is the latest completion */\n");
  for (long i = 0; i < g->n; i++) fprintf(f, "c%ld <= tmax;\n", i);
  fprintf(f, "\n/* each task runs on exactly one worker */\n");
  for (long i = 0; i < g->n; i++) {
    for (int w = 0; w < g->nw; w++)
      if (g->dur[i * g->nw + w] >= 0) fprintf(f, " +t%ldw%d", i, w);
    fprintf(f, " = 1;\n");
  }
  fprintf(f, "\n/* completion = start + duration on its worker */\n");
  for (long i = 0; i < g->n; i++) {
    sf_graph_task_view v;
    sf_graph_record_view(i, &v);
    fprintf(f, "/* %s %08x */ c%ld = s%ld", v.cl ? v.cl->name : "?", (unsigned)v.footprint, i, i);
    for (int w = 0; w < g->nw; w++)
      if (g->dur[i * g->nw + w] >= 0) fprintf(f, " + %.6f t%ldw%d", g->dur[i * g->nw + w], i, w);
    fprintf(f, ";\n");
  }
  fprintf(f, "\n/* a task starts after its predecessors complete */\n");
  for (long i = 0; i < g->n; i++) {
    sf_graph_task_view v;
    sf_graph_record_view(i, &v);
    for (long k = 0; k < v.npreds; k++) fprintf(f, "s%ld >= c%ld;\n", i, v.preds[k]);
  }
  fprintf(f, "\n/* two independent tasks on the same worker do not overlap */\n");
  for (long i = 0; i < g->n; i++) {
    if (sf_now() - t0 > timeout_s) return 0;
    for (long j = i + 1; j < g->n; j++) {
      if (is_anc(g, j, i)) continue;
      for (int w = 0; w < g->nw; w++) {
        if (g->dur[i * g->nw + w] < 0 || g->dur[j * g->nw + w] < 0) continue;
        fprintf(f, "s%ld - c%ld >= %.0f + %.0f t%ldw%d + %.0f t%ldw%d + %.0f t%ldafter%ld;\n", i, j, -3 * big, big, i,
                w, big, j, w, big, i, j);
        fprintf(f, "s%ld - c%ld >= %.0f + %.0f t%ldw%d + %.0f t%ldw%d - %.0f t%ldafter%ld;\n", j, i, -2 * big, big, i,
                w, big, j, w, big, i, j);
      }
    }
  }
  fprintf(f, "\n");
  for (long i = 0; i < g->n; i++) {
    for (long j = i + 1; j < g->n; j++)
      if (!is_anc(g, j, i)) fprintf(f, "bin t%ldafter%ld;\n", i, j);
    for (int w = 0; w < g->nw; w++)
      if (g->dur[i * g->nw + w] >= 0) fprintf(f, "bin t%ldw%d;\n", i, w);
  }
  return 1;
}

int sf_bound_deps_compute(const char *dir, double timeout_s, sf_bound_deps *d, char *err, size_t errlen)
{
  memset(d, 0, sizeof *d);
  d->starpu_dag = g_starpu_dag;
  char *dot = sf_path_join(dir, "bound.dot"), *lp = sf_path_join(dir, "bound_deps.lp");
  deps_graph g = {0};
  int rc = -1;
  FILE *f;
  if (g_starpu_dag) { /* StarPU's own record of the dependencies it enforced */
    if (!(f = fopen(dot, "w"))) {
      snprintf(err, errlen, "cannot write %s: %s", dot, strerror(errno));
      goto out;
    }
    starpu_bound_print_dot(f);
    if (fclose(f) != 0) {
      snprintf(err, errlen, "cannot write %s: %s", dot, strerror(errno));
      goto out;
    }
  } else if (sf_graph_record_write(dir, err, errlen) != 0) { /* our record: graph.json, graph.dot */
    goto out;
  }
  deps_analyse(&g, d);
  if (d->nuncal) { /* an LP without durations says nothing */
    remove(lp);
    rc = 0;
    goto out;
  }
  double t0 = sf_now();
  f = fopen(lp, "w");
  if (!f) {
    snprintf(err, errlen, "cannot write %s: %s", lp, strerror(errno));
    goto out;
  }
  d->lp_written = write_lp(f, &g, timeout_s, t0);
  if (fclose(f) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", lp, strerror(errno));
    goto out;
  }
  d->lp_write_s = sf_now() - t0;
  struct stat sb;
  d->lp_bytes = stat(lp, &sb) == 0 ? (long)sb.st_size : 0;
  if (!d->lp_written) remove(lp); /* a truncated LP is no problem to solve */
  rc = 0;
out:
  free(g.dur);
  free(g.anc);
  free(dot);
  free(lp);
  return rc;
}
