/* Checker for a data generation trace directory (`trace: 1`; scaffold/trace.h phases), used by
 * test_datagen_trace.sh:
 *   datagen_trace_check DIR PHASE...
 * DIR/trace.json must parse, say otherData.activity "data generation", hold a main-thread span
 * (cat "phase") for every PHASE and task events whose ends fall inside those spans in the number
 * worker_stats.json gives; worker_stats.json's "phases" entry of every PHASE must have tasks >= 1,
 * wall_s > 0, utilisation in [0, 1] equal to busy_s / (workers x wall_s) and to trace.json's
 * otherData.phases, workers_busy_s summing to busy_s; worker_stats.txt must list the phase. Prints
 * each phase's figures; exits 1 with what differed, and by how much, on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

static int failures;

#define FAIL(...)                  \
  do {                             \
    fprintf(stderr, "FAIL: ");     \
    fprintf(stderr, __VA_ARGS__);  \
    fputc('\n', stderr);           \
    failures++;                    \
  } while (0)

static cJSON *load(const char *dir, const char *name)
{
  char *p = sf_path_join(dir, name), *err = NULL;
  cJSON *j = sf_json_load(p, &err);
  if (!j) FAIL("%s does not parse: %s", p, err ? err : "?");
  free(err);
  free(p);
  return j;
}

static const cJSON *find_phase(const cJSON *arr, const char *name)
{
  const cJSON *e;
  cJSON_ArrayForEach(e, arr)
  {
    const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
    if (n && !strcmp(n, name)) return e;
  }
  return NULL;
}

static double num(const cJSON *o, const char *key) { return sf_json_num(cJSON_GetObjectItemCaseSensitive(o, key)); }

/* task events ending inside the phase spans named `name`, and the number of those spans */
static long tasks_in_spans(const cJSON *events, const char *name, long *nspans)
{
  long n = 0;
  *nspans = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, events)
  {
    const char *cat = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "cat"));
    const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "name"));
    if (!cat || !nm || strcmp(cat, "phase") != 0 || strcmp(nm, name) != 0) continue;
    double t0 = num(s, "ts"), t1 = t0 + num(s, "dur");
    if (!(num(s, "dur") > 0)) FAIL("phase span '%s' has dur %g, want > 0", name, num(s, "dur"));
    (*nspans)++;
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
      const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "cat"));
      if (!c || strcmp(c, "task") != 0) continue;
      double end = num(e, "ts") + num(e, "dur");
      if (end >= t0 - 1e-3 && end <= t1 + 1e-3) n++; /* the timestamps are printed to 1 ns */
    }
  }
  return n;
}

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: datagen_trace_check DIR PHASE...\n");
    return 2;
  }
  const char *dir = argv[1];
  cJSON *tr = load(dir, "trace.json"), *ws = load(dir, "worker_stats.json");
  char *tp = sf_path_join(dir, "worker_stats.txt");
  char *txt = sf_read_file(tp, NULL);
  if (!txt) FAIL("cannot read %s", tp);
  free(tp);
  if (!tr || !ws || !txt) return 1;

  const cJSON *events = cJSON_GetObjectItemCaseSensitive(tr, "traceEvents");
  const cJSON *od = cJSON_GetObjectItemCaseSensitive(tr, "otherData");
  if (!cJSON_IsArray(events)) FAIL("trace.json has no traceEvents array");
  const char *act = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(od, "activity"));
  if (!act || strcmp(act, "data generation") != 0)
    FAIL("trace.json otherData.activity is '%s', want 'data generation'", act ? act : "(absent)");
  const char *wact = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ws, "activity"));
  if (!wact || strcmp(wact, "data generation") != 0)
    FAIL("worker_stats.json activity is '%s', want 'data generation'", wact ? wact : "(absent)");
  int nworkers = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ws, "workers"));
  if (nworkers < 1) FAIL("worker_stats.json lists %d workers, want >= 1", nworkers);
  double dropped = num(ws, "events_dropped");
  const cJSON *wph = cJSON_GetObjectItemCaseSensitive(ws, "phases"),
              *tph = cJSON_GetObjectItemCaseSensitive(od, "phases");
  if (!cJSON_IsArray(wph)) FAIL("worker_stats.json has no phases array");
  if (!cJSON_IsArray(tph)) FAIL("trace.json otherData has no phases array");

  for (int a = 2; a < argc; a++) {
    const char *name = argv[a];
    const cJSON *p = find_phase(wph, name), *q = find_phase(tph, name);
    if (!p || !q) {
      FAIL("phase '%s' missing from %s", name, !p ? "worker_stats.json phases" : "trace.json otherData.phases");
      continue;
    }
    double wall = num(p, "wall_s"), busy = num(p, "busy_s"), util = num(p, "utilisation"), cpu = num(p, "cpu_utilisation");
    long tasks = (long)num(p, "tasks"), spans = (long)num(p, "spans");
    printf("%s: %ld span(s), wall %.4f s, %ld tasks, busy %.4f s, utilisation %.3f, cpu %.3f\n", name, spans, wall,
           tasks, busy, util, cpu);
    if (!(wall > 0)) FAIL("%s: wall_s %g, want > 0", name, wall);
    if (tasks < 1) FAIL("%s: tasks %ld, want >= 1", name, tasks);
    if (!(util >= 0 && util <= 1)) FAIL("%s: utilisation %g outside [0, 1]", name, util);
    if (!(cpu >= 0)) FAIL("%s: cpu_utilisation %g, want >= 0", name, cpu);
    double want = wall > 0 ? busy / (nworkers * wall) : 0;
    /* the three are printed with 6 decimals: allow their rounding (5e-7 each) */
    double tol = 1e-6 + (wall > 0 && busy > 0 ? want * (5e-7 / wall + 5e-7 / busy) : 0);
    if (fabs(util - want) > tol)
      FAIL("%s: utilisation %.6f != busy_s / (%d x wall_s) = %.6f (tolerance %.1e)", name, util, nworkers, want, tol);
    if (fabs(num(q, "utilisation") - util) > 1e-5)
      FAIL("%s: trace.json utilisation %.6f != worker_stats.json %.6f", name, num(q, "utilisation"), util);
    const cJSON *wb = cJSON_GetObjectItemCaseSensitive(p, "workers_busy_s"), *b;
    double sum = 0;
    cJSON_ArrayForEach(b, wb) sum += sf_json_num(b);
    if (cJSON_GetArraySize(wb) != nworkers) FAIL("%s: workers_busy_s has %d entries, want %d", name, cJSON_GetArraySize(wb), nworkers);
    if (fabs(sum - busy) > 1e-5 * (1 + busy)) FAIL("%s: workers_busy_s sums to %.6f, busy_s is %.6f", name, sum, busy);
    long nspans = 0;
    long ev = events ? tasks_in_spans(events, name, &nspans) : 0;
    if (nspans != spans) FAIL("%s: trace.json has %ld '%s' phase spans, worker_stats.json says %ld", name, nspans, name, spans);
    if (dropped == 0 && ev != tasks)
      FAIL("%s: %ld task events end inside its spans in trace.json, worker_stats.json counts %ld", name, ev, tasks);
    if (!strstr(txt, name)) FAIL("worker_stats.txt does not list phase '%s'", name);
  }
  if (!strstr(txt, "utilisation")) FAIL("worker_stats.txt has no utilisation column");
  cJSON_Delete(tr);
  cJSON_Delete(ws);
  free(txt);
  if (failures) fprintf(stderr, "%d check(s) failed for %s\n", failures, dir);
  return failures ? 1 : 0;
}
