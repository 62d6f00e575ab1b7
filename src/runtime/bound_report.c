/* The report of a bound run (scaffold/bound.h): the "bound:" lines on stdout and bound.json in the
 * run directory, measured makespans against the area and dependency-aware lower bounds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bound.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/json.h"

/* The window's figures in seconds; a negative value means "unavailable" (uncalibrated perfmodels). */
typedef struct {
  int area_steps;
  double area_s, area_b;   /* the area window: measured, bound */
  double per_step;         /* the area bound of one step */
  double cp, spread;       /* critical path, total work over the workers */
  double deps_s, deps_b;   /* the deps window: measured, the largest of the lower bounds for its step */
  const sf_bound_deps *d;  /* NULL: no deps window */
} bound_figures;

static bound_figures bound_figures_of(int area_steps, double area_s, double area_ms, const sf_bound_deps *d,
                                      double deps_s)
{
  bound_figures b = {.area_steps = area_steps, .area_s = area_s, .deps_s = deps_s, .d = d};
  b.area_b = area_ms >= 0 ? area_ms * 1e-3 : -1;
  b.per_step = b.area_b >= 0 && area_steps > 0 ? b.area_b / area_steps : -1;
  b.cp = d && d->cp_ms >= 0 ? d->cp_ms * 1e-3 : -1;
  b.spread = b.cp >= 0 && d->nworkers > 0 ? d->work_ms * 1e-3 / d->nworkers : -1;
  b.deps_b = b.cp;
  if (b.spread > b.deps_b) b.deps_b = b.spread;
  if (b.cp >= 0 && b.per_step > b.deps_b) b.deps_b = b.per_step;
  return b;
}

static void print_area_line(const bound_figures *b)
{
  if (b->area_steps == 0)
    ; /* no area window (the benchmark: scaffold/bound.h) */
  else if (b->area_b >= 0)
    printf("bound: area window: %d step(s) measured %.4f s, area bound %.4f s (measured / bound %.3f)\n",
           b->area_steps, b->area_s, b->area_b, b->area_s / b->area_b);
  else
    printf("bound: area window: %d step(s) measured %.4f s, area bound unavailable: some task has no calibrated "
           "perfmodel estimate (run the same configuration again, or `scaffold calibrate`)\n", b->area_steps, b->area_s);
}

static void print_deps_line(const bound_figures *b)
{
  const sf_bound_deps *d = b->d;
  if (!d) return;
  char lp[160] = "";
  const char *dag = d->starpu_dag ? "bound.dot (StarPU's DAG)" : "graph.json and graph.dot (the recorded DAG)";
  if (d->lp_written)
    snprintf(lp, sizeof lp, "bound_deps.lp (%.1f MiB, written in %.2f s; solve the MILP with scripts/bound-solve)",
             d->lp_bytes / 1048576.0, d->lp_write_s);
  else if (d->nuncal)
    snprintf(lp, sizeof lp, "no bound_deps.lp (uncalibrated perfmodels)");
  else
    snprintf(lp, sizeof lp, "no bound_deps.lp (writing it took over bound_lp_timeout, %.0f s)", d->lp_write_s);
  if (b->deps_b >= 0)
    printf("bound: deps window: 1 step measured %.4f s, critical path %.4f s, work / workers %.4f s, "
           "dependency-aware bound max(%scritical path, work / workers) %.4f s (measured / bound %.3f); "
           "%ld tasks, %ld dependencies; %s; %s\n",
           b->deps_s, b->cp, b->spread, b->area_steps ? "area per step, " : "", b->deps_b, b->deps_s / b->deps_b,
           d->ntasks, d->nedges, lp, dag);
  else
    printf("bound: deps window: 1 step measured %.4f s; %ld of %ld tasks have no calibrated estimate: no "
           "dependency-aware bound; %s; %s\n", b->deps_s, d->nuncal, d->ntasks, lp, dag);
}

static void print_lines(const bound_figures *b)
{
  print_area_line(b);
  print_deps_line(b);
  if ((b->area_b > 0 && b->area_s < b->area_b) || (b->d && b->deps_b > 0 && b->deps_s < b->deps_b))
    printf("bound: warning: a measured time is below its lower bound, so the perfmodels behind it describe other "
           "conditions (calibrated under another load, or stale): that bound is not valid for this run; recalibrate "
           "on a quiet machine (`scaffold calibrate`, docs/scheduling.md)\n");
}

/* v rounded to `digits` significant digits (bound.json's precision), or null when negative. */
static void add_figure(cJSON *o, const char *key, double v, int digits)
{
  if (v < 0) {
    cJSON_AddNullToObject(o, key);
    return;
  }
  char text[40];
  snprintf(text, sizeof text, "%.*g", digits, v);
  cJSON_AddNumberToObject(o, key, strtod(text, NULL));
}

static cJSON *area_json(const bound_figures *b)
{
  if (b->area_steps == 0) return cJSON_CreateNull();
  cJSON *a = cJSON_CreateObject();
  cJSON_AddNumberToObject(a, "steps", b->area_steps);
  add_figure(a, "measured_s", b->area_s, 9);
  add_figure(a, "bound_s", b->area_b, 9);
  add_figure(a, "ratio", b->area_b > 0 ? b->area_s / b->area_b : -1, 9);
  return a;
}

static cJSON *deps_json(const bound_figures *b)
{
  const sf_bound_deps *d = b->d;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "steps", 1);
  add_figure(o, "measured_s", b->deps_s, 9);
  add_figure(o, "critical_path_s", b->cp, 9);
  add_figure(o, "work_s", d->nuncal == 0 ? d->work_ms * 1e-3 : -1, 9);
  add_figure(o, "work_per_worker_s", b->spread, 9);
  add_figure(o, "bound_s", b->deps_b, 9);
  add_figure(o, "ratio", b->deps_b > 0 ? b->deps_s / b->deps_b : -1, 9);
  cJSON_AddNumberToObject(o, "tasks", (double)d->ntasks);
  cJSON_AddNumberToObject(o, "dependencies", (double)d->nedges);
  cJSON_AddNumberToObject(o, "uncalibrated_tasks", (double)d->nuncal);
  cJSON_AddBoolToObject(o, "lp_written", d->lp_written);
  add_figure(o, "lp_write_s", d->lp_write_s, 6);
  cJSON_AddNumberToObject(o, "lp_bytes", (double)d->lp_bytes);
  cJSON_AddStringToObject(o, "dag", d->starpu_dag ? "bound.dot" : "graph.json");
  return o;
}

static int write_bound_json(const char *dir, const bound_figures *b, char *err, size_t errlen)
{
  const sf_bound_deps *d = b->d;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "unit", "s");
  cJSON_AddBoolToObject(j, "calibrated", (b->area_steps == 0 || b->area_b >= 0) && (!d || d->nuncal == 0));
  cJSON_AddNumberToObject(j, "workers", d ? d->nworkers : 0);
  cJSON_AddItemToObject(j, "area", area_json(b));
  if (d) cJSON_AddItemToObject(j, "deps", deps_json(b));
  char *path = sf_path_join(dir, "bound.json");
  int rc = sf_json_write_atomic(path, j);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  free(path);
  cJSON_Delete(j);
  return rc == 0 ? 0 : -1;
}

int sf_bound_report(const char *dir, int area_steps, double area_s, double area_ms, const sf_bound_deps *d,
                    double deps_s, char *err, size_t errlen)
{
  bound_figures b = bound_figures_of(area_steps, area_s, area_ms, d, deps_s);
  print_lines(&b);
  return write_bound_json(dir, &b, err, errlen);
}
