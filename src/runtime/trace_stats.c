/* The trace's statistics at sf_trace_end (scaffold/trace.h): worker_stats.json, built with cJSON,
 * and worker_stats.txt, the same figures as tables read back from that JSON, so the two never
 * disagree. Per worker, per phase, per kind of worker, the bytes moved on every bus, and the CPU
 * kernel variants the tasks ran. Both files are written atomically. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/json.h"
#include "scaffold/kernel_choices.h"
#include "trace_internal.h"

static double phase_util(const phase_log *ph)
{
  double cap = ph->wall_us * T.nworkers;
  return cap > 0 ? ph->busy_us / cap : 0.0;
}

/* CPU time over the same capacity: below the utilisation when tasks wait (disk, locks) */
static double phase_cpu_util(const phase_log *ph)
{
  double cap = ph->wall_us * 1e-6 * T.nworkers;
  return cap > 0 ? ph->cpu_s / cap : 0.0;
}

cJSON *sf_trace_phase_json(const phase_log *ph)
{
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "name", ph->name);
  cJSON_AddNumberToObject(p, "spans", (double)ph->spans);
  cJSON_AddNumberToObject(p, "wall_s", ph->wall_us * 1e-6);
  cJSON_AddNumberToObject(p, "tasks", (double)ph->tasks);
  cJSON_AddNumberToObject(p, "busy_s", ph->busy_us * 1e-6);
  cJSON_AddNumberToObject(p, "utilisation", phase_util(ph));
  cJSON_AddNumberToObject(p, "cpu_s", ph->cpu_s);
  cJSON_AddNumberToObject(p, "cpu_utilisation", phase_cpu_util(ph));
  return p;
}

static double ts_s(struct timespec *t) { return starpu_timing_timespec_to_us(t) * 1e-6; }
static double num(const cJSON *o, const char *key) { return sf_json_num(cJSON_GetObjectItemCaseSensitive(o, key)); }

static cJSON *worker_json(int w, double wall)
{
  const worker_log *l = &T.w[w];
  char name[64];
  starpu_worker_get_name(w, name, sizeof name);
  double busy = l->busy_us * 1e-6, idle = wall - busy;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", w);
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddStringToObject(o, "kind", sf_trace_worker_kind(w));
  cJSON_AddNumberToObject(o, "tasks", (double)l->tasks);
  cJSON_AddNumberToObject(o, "busy_s", busy);
  cJSON_AddNumberToObject(o, "idle_s", idle < 0 ? 0 : idle);
  cJSON_AddNumberToObject(o, "busy_pct", wall > 0 ? 100.0 * busy / wall : 0);
  cJSON_AddNumberToObject(o, "flops", l->flops);
  struct starpu_profiling_worker_info info;
  memset(&info, 0, sizeof info);
  if (starpu_profiling_worker_get_info(w, &info) == 0) {
    cJSON_AddNumberToObject(o, "starpu_tasks", info.executed_tasks);
    cJSON_AddNumberToObject(o, "starpu_executing_s", ts_s(&info.executing_time));
    cJSON_AddNumberToObject(o, "starpu_sleeping_s", ts_s(&info.sleeping_time));
    cJSON_AddNumberToObject(o, "starpu_total_s", ts_s(&info.total_time));
  }
  cJSON_AddNumberToObject(o, "starpu_push_s", l->push_us * 1e-6);
  cJSON_AddNumberToObject(o, "starpu_pop_s", l->pop_us * 1e-6);
  cJSON_AddNumberToObject(o, "starpu_acquire_s", l->acquire_us * 1e-6);
  cJSON_AddNumberToObject(o, "starpu_release_s", l->release_us * 1e-6);
  return o;
}

static cJSON *phases_json(void)
{
  cJSON *a = cJSON_CreateArray();
  for (int p = 0; p < T.nphases; p++) {
    const phase_log *ph = &T.phases[p];
    cJSON *o = sf_trace_phase_json(ph), *wb = cJSON_AddArrayToObject(o, "workers_busy_s");
    for (int w = 0; w < T.nworkers; w++) cJSON_AddItemToArray(wb, cJSON_CreateNumber(ph->wbusy_us[w] * 1e-6));
    cJSON_AddItemToArray(a, o);
  }
  return a;
}

/* per kind of worker: tasks and flops with their shares of the total */
static cJSON *kinds_json(double tot_tasks, double tot_flops)
{
  static const char *const kinds[] = {"CPU", "OpenCL", "CUDA", "other"};
  cJSON *o = cJSON_CreateObject();
  for (int k = 0; k < 4; k++) {
    double kt = 0, kf = 0, kb = 0;
    int nw = 0;
    for (int w = 0; w < T.nworkers; w++)
      if (!strcmp(sf_trace_worker_kind(w), kinds[k])) {
        nw++;
        kt += (double)T.w[w].tasks;
        kf += T.w[w].flops;
        kb += T.w[w].busy_us * 1e-6;
      }
    if (nw == 0) continue;
    cJSON *e = cJSON_AddObjectToObject(o, kinds[k]);
    cJSON_AddNumberToObject(e, "workers", nw);
    cJSON_AddNumberToObject(e, "tasks", kt);
    cJSON_AddNumberToObject(e, "tasks_pct", tot_tasks > 0 ? 100.0 * kt / tot_tasks : 0.0);
    cJSON_AddNumberToObject(e, "flops", kf);
    cJSON_AddNumberToObject(e, "flops_pct", tot_flops > 0 ? 100.0 * kf / tot_flops : 0.0);
    cJSON_AddNumberToObject(e, "busy_s", kb);
  }
  return o;
}

/* data moved between memory nodes, from StarPU's bus statistics */
static cJSON *transfers_json(void)
{
  long count;
  long long bytes = sf_trace_bus_total(&count);
  cJSON *o = cJSON_CreateObject(), *buses;
  cJSON_AddNumberToObject(o, "bytes", (double)bytes);
  cJSON_AddNumberToObject(o, "count", (double)count);
  buses = cJSON_AddArrayToObject(o, "buses");
  for (int b = 0; b < T.nbus; b++) {
    if (T.bus_count[b] == 0) continue;
    char src[64], dst[64];
    sf_trace_node_name(starpu_bus_get_src(b), src, sizeof src);
    sf_trace_node_name(starpu_bus_get_dst(b), dst, sizeof dst);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "src", src);
    cJSON_AddStringToObject(e, "dst", dst);
    cJSON_AddNumberToObject(e, "bytes", (double)T.bus_bytes[b]);
    cJSON_AddNumberToObject(e, "count", (double)T.bus_count[b]);
    cJSON_AddItemToArray(buses, e);
  }
  return o;
}

static cJSON *stats_json(double wall)
{
  cJSON *j = cJSON_CreateObject(), *workers;
  cJSON_AddNumberToObject(j, "wall_s", wall);
  cJSON_AddNumberToObject(j, "events_written", (double)T.written);
  cJSON_AddNumberToObject(j, "events_dropped", (double)T.dropped);
  cJSON_AddStringToObject(j, "activity", T.activity);
  workers = cJSON_AddArrayToObject(j, "workers");
  double tasks = 0, busy = 0, flops = 0;
  for (int w = 0; w < T.nworkers; w++) {
    cJSON_AddItemToArray(workers, worker_json(w, wall));
    tasks += (double)T.w[w].tasks;
    busy += T.w[w].busy_us * 1e-6;
    flops += T.w[w].flops;
  }
  double cap = wall * T.nworkers;
  cJSON *tot = cJSON_AddObjectToObject(j, "total");
  cJSON_AddNumberToObject(tot, "tasks", tasks);
  cJSON_AddNumberToObject(tot, "busy_s", busy);
  cJSON_AddNumberToObject(tot, "busy_pct", cap > 0 ? 100.0 * busy / cap : 0.0);
  cJSON_AddNumberToObject(tot, "flops", flops);
  cJSON_AddItemToObject(j, "phases", phases_json());
  cJSON_AddItemToObject(j, "by_kind", kinds_json(tasks, flops));
  cJSON_AddItemToObject(j, "transfers", transfers_json());
  cJSON_AddItemToObject(j, "kernel_choices", sf_kernel_choices_json());
  return j;
}

/* The summary struct scaffold/trace.h hands to the run's report, from the JSON */
static void fill_summary(const cJSON *j)
{
  sf_trace_summary *sm = &sf_trace_g_summary;
  memset(sm, 0, sizeof *sm);
  sm->wall_s = num(j, "wall_s");
  const cJSON *w;
  cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(j, "workers"))
  {
    if (sm->nworkers >= SF_TRACE_SUMMARY_MAX_WORKERS) break;
    snprintf(sm->worker[sm->nworkers].name, sizeof sm->worker[0].name, "%s",
             cJSON_GetObjectItemCaseSensitive(w, "name")->valuestring);
    snprintf(sm->worker[sm->nworkers].kind, sizeof sm->worker[0].kind, "%s",
             cJSON_GetObjectItemCaseSensitive(w, "kind")->valuestring);
    sm->worker[sm->nworkers].tasks = (long)num(w, "tasks");
    sm->worker[sm->nworkers].busy_s = num(w, "busy_s");
    sm->nworkers++;
  }
  const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "transfers"), *b;
  sm->transfer_bytes = (long long)num(tr, "bytes");
  sm->transfer_count = (long)num(tr, "count");
  cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(tr, "buses"))
  {
    if (sm->nbuses >= SF_TRACE_SUMMARY_MAX_BUSES) break;
    snprintf(sm->bus[sm->nbuses].src, sizeof sm->bus[0].src, "%s", cJSON_GetObjectItemCaseSensitive(b, "src")->valuestring);
    snprintf(sm->bus[sm->nbuses].dst, sizeof sm->bus[0].dst, "%s", cJSON_GetObjectItemCaseSensitive(b, "dst")->valuestring);
    sm->bus[sm->nbuses].bytes = (long long)num(b, "bytes");
    sm->bus[sm->nbuses].count = (long)num(b, "count");
    sm->nbuses++;
  }
}

static void text_workers(FILE *f, const cJSON *j, double wall)
{
  fprintf(f, "Per-worker activity over %.3f s of %s (trace: 1); busy = task execution time.\n\n", wall, T.activity);
  fprintf(f, "%-4s %-14s %10s %10s %10s %7s %12s %12s\n", "id", "worker", "tasks", "busy_s", "idle_s", "busy%",
          "GFLOP", "GFLOP/s_busy");
  const cJSON *w;
  cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(j, "workers"))
  {
    double busy = num(w, "busy_s"), fl = num(w, "flops");
    fprintf(f, "%-4.0f %-14s %10.0f %10.3f %10.3f %7.1f %12.3f %12.2f\n", num(w, "id"),
            cJSON_GetObjectItemCaseSensitive(w, "name")->valuestring, num(w, "tasks"), busy, num(w, "idle_s"),
            num(w, "busy_pct"), fl * 1e-9, busy > 0 ? fl * 1e-9 / busy : 0.0);
  }
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "total");
  double cap = wall * T.nworkers, busy = num(t, "busy_s"), fl = num(t, "flops");
  fprintf(f, "%-4s %-14s %10.0f %10.3f %10.3f %7.1f %12.3f %12.2f\n", "", "all", num(t, "tasks"), busy,
          cap - busy > 0 ? cap - busy : 0.0, num(t, "busy_pct"), fl * 1e-9, busy > 0 ? fl * 1e-9 / busy : 0.0);
}

static void text_phases(FILE *f, const cJSON *j)
{
  if (!T.nphases) return;
  fprintf(f, "\nPhases (utilisation = busy / (%d workers x wall time); cpu%% = process CPU time over the same, lower "
             "when tasks wait for the disk):\n\n", T.nworkers);
  fprintf(f, "%-20s %6s %10s %10s %10s %12s %10s %7s  %s\n", "phase", "spans", "wall_s", "tasks", "busy_s",
          "utilisation", "cpu_s", "cpu%", "busy% per worker");
  const cJSON *p, *b;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "phases"))
  {
    double wall = num(p, "wall_s");
    fprintf(f, "%-20s %6.0f %10.3f %10.0f %10.3f %11.1f%% %10.3f %6.1f%% ",
            cJSON_GetObjectItemCaseSensitive(p, "name")->valuestring, num(p, "spans"), wall, num(p, "tasks"),
            num(p, "busy_s"), 100.0 * num(p, "utilisation"), num(p, "cpu_s"), 100.0 * num(p, "cpu_utilisation"));
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(p, "workers_busy_s"))
      fprintf(f, " %5.1f", wall > 0 ? 100.0 * sf_json_num(b) / wall : 0.0);
    fputc('\n', f);
  }
}

static void text_kinds_and_buses(FILE *f, const cJSON *j)
{
  fprintf(f, "\n%-8s %8s %10s %8s %12s %8s %10s\n", "kind", "workers", "tasks", "tasks%", "GFLOP", "flops%", "busy_s");
  const cJSON *k, *b;
  cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(j, "by_kind"))
    fprintf(f, "%-8s %8.0f %10.0f %7.1f%% %12.3f %7.1f%% %10.3f\n", k->string, num(k, "workers"), num(k, "tasks"),
            num(k, "tasks_pct"), num(k, "flops") * 1e-9, num(k, "flops_pct"), num(k, "busy_s"));
  const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "transfers");
  fprintf(f, "\nData transfers between memory nodes (StarPU bus statistics): %.3f MiB in %.0f transfers\n",
          num(tr, "bytes") / (1024.0 * 1024.0), num(tr, "count"));
  cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(tr, "buses"))
    fprintf(f, "  %-12s -> %-12s %12.3f MiB %8.0f transfers\n", cJSON_GetObjectItemCaseSensitive(b, "src")->valuestring,
            cJSON_GetObjectItemCaseSensitive(b, "dst")->valuestring, num(b, "bytes") / (1024.0 * 1024.0),
            num(b, "count"));
}

static void write_text(FILE *f, const cJSON *j, double wall)
{
  text_workers(f, j, wall);
  text_phases(f, j);
  text_kinds_and_buses(f, j);
  char choices[2048];
  fprintf(f, "\nCPU kernel variants run (per entry call): %s\n", sf_kernel_choices_describe(choices, sizeof choices));
  if (T.dropped) fprintf(f, "\n%ld task events were not written to trace.json (SF_TRACE_MAX_EVENTS)\n", T.dropped);
}

int sf_trace_write_stats(double wall_us, char *err, size_t errlen)
{
  double wall = wall_us * 1e-6;
  cJSON *j = stats_json(wall);
  fill_summary(j);
  char *jp = sf_path_join(T.dir, "worker_stats.json"), *tp = sf_path_join(T.dir, "worker_stats.txt");
  int rc = sf_json_write_atomic(jp, j);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", jp, strerror(errno));
  sf_atomic_file at;
  if (rc == 0 && sf_atomic_open(&at, tp) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", tp, strerror(errno));
    rc = -1;
  } else if (rc == 0) {
    write_text(at.f, j, wall);
    if (sf_atomic_commit(&at) != 0) {
      snprintf(err, errlen, "cannot write %s: %s", tp, strerror(errno));
      rc = -1;
    }
  }
  cJSON_Delete(j);
  free(jp);
  free(tp);
  return rc;
}
