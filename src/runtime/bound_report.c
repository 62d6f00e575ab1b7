/* The report of a bound run (scaffold/bound.h): the "bound:" lines on stdout and bound.json in the
 * run directory, measured makespans against the area and dependency-aware lower bounds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bound.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

/* JSON number or null (a negative bound means "uncalibrated"). */
static void jnum(FILE *f, const char *key, double v, const char *sep)
{
  if (v >= 0) fprintf(f, "\"%s\": %.9g%s", key, v, sep);
  else fprintf(f, "\"%s\": null%s", key, sep);
}

int sf_bound_report(const char *dir, int area_steps, double area_s, double area_ms, const sf_bound_deps *d,
                    double deps_s, char *err, size_t errlen)
{
  double area_b = area_ms >= 0 ? area_ms * 1e-3 : -1;
  double per_step = area_b >= 0 && area_steps > 0 ? area_b / area_steps : -1;
  double cp = d && d->cp_ms >= 0 ? d->cp_ms * 1e-3 : -1;
  double spread = cp >= 0 && d->nworkers > 0 ? d->work_ms * 1e-3 / d->nworkers : -1; /* total work over the workers */
  double deps_b = cp; /* the largest of the lower bounds available for the deps window's step */
  if (spread > deps_b) deps_b = spread;
  if (cp >= 0 && per_step > deps_b) deps_b = per_step;
  if (area_steps == 0)
    ; /* no area window (the benchmark: scaffold/bound.h) */
  else if (area_b >= 0)
    printf("bound: area window: %d step(s) measured %.4f s, area bound %.4f s (measured / bound %.3f)\n", area_steps,
           area_s, area_b, area_s / area_b);
  else
    printf("bound: area window: %d step(s) measured %.4f s, area bound unavailable: some task has no calibrated "
           "perfmodel estimate (run the same configuration again, or scripts/calibrate)\n", area_steps, area_s);
  char lp[160] = "";
  const char *dag = d && d->starpu_dag ? "bound.dot (StarPU's DAG)" : "graph.json and graph.dot (the recorded DAG)";
  if (d && d->lp_written)
    snprintf(lp, sizeof lp, "bound_deps.lp (%.1f MiB, written in %.2f s; solve the MILP with scripts/bound-solve)",
             d->lp_bytes / 1048576.0, d->lp_write_s);
  else if (d && d->nuncal)
    snprintf(lp, sizeof lp, "no bound_deps.lp (uncalibrated perfmodels)");
  else if (d)
    snprintf(lp, sizeof lp, "no bound_deps.lp (writing it took over bound_lp_timeout, %.0f s)", d->lp_write_s);
  if (d && deps_b >= 0)
    printf("bound: deps window: 1 step measured %.4f s, critical path %.4f s, work / workers %.4f s, "
           "dependency-aware bound max(%scritical path, work / workers) %.4f s (measured / bound %.3f); "
           "%ld tasks, %ld dependencies; %s; %s\n",
           deps_s, cp, spread, area_steps ? "area per step, " : "", deps_b, deps_s / deps_b, d->ntasks, d->nedges, lp,
           dag);
  else if (d)
    printf("bound: deps window: 1 step measured %.4f s; %ld of %ld tasks have no calibrated estimate: no "
           "dependency-aware bound; %s; %s\n", deps_s, d->nuncal, d->ntasks, lp, dag);
  if ((area_b > 0 && area_s < area_b) || (d && deps_b > 0 && deps_s < deps_b))
    printf("bound: warning: a measured time is below its lower bound, so the perfmodels behind it describe other "
           "conditions (calibrated under another load, or stale): that bound is not valid for this run; recalibrate "
           "on a quiet machine (scripts/calibrate, docs/scheduling.md)\n");

  char *path = sf_path_join(dir, "bound.json");
  sf_atomic_file a;
  if (sf_atomic_open(&a, path) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    free(path);
    return -1;
  }
  FILE *f = a.f;
  fprintf(f, "{\n  \"unit\": \"s\",\n  \"calibrated\": %s,\n  \"workers\": %d,\n",
          (area_steps == 0 || area_b >= 0) && (!d || d->nuncal == 0) ? "true" : "false", d ? d->nworkers : 0);
  if (area_steps == 0) {
    fprintf(f, "  \"area\": null");
  } else {
    fprintf(f, "  \"area\": {\"steps\": %d, ", area_steps);
    jnum(f, "measured_s", area_s, ", ");
    jnum(f, "bound_s", area_b, ", ");
    jnum(f, "ratio", area_b > 0 ? area_s / area_b : -1, "}");
  }
  if (d) {
    fprintf(f, ",\n  \"deps\": {\"steps\": 1, ");
    jnum(f, "measured_s", deps_s, ", ");
    jnum(f, "critical_path_s", cp, ", ");
    jnum(f, "work_s", d->nuncal == 0 ? d->work_ms * 1e-3 : -1, ", ");
    jnum(f, "work_per_worker_s", spread, ", ");
    jnum(f, "bound_s", deps_b, ", ");
    jnum(f, "ratio", deps_b > 0 ? deps_s / deps_b : -1, ", ");
    fprintf(f, "\"tasks\": %ld, \"dependencies\": %ld, \"uncalibrated_tasks\": %ld, \"lp_written\": %s, "
               "\"lp_write_s\": %.6g, \"lp_bytes\": %ld, \"dag\": \"%s\"}", d->ntasks, d->nedges, d->nuncal,
            d->lp_written ? "true" : "false", d->lp_write_s, d->lp_bytes, d->starpu_dag ? "bound.dot" : "graph.json");
  }
  fprintf(f, "\n}\n");
  int rc = sf_atomic_commit(&a);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  free(path);
  return rc == 0 ? 0 : -1;
}
