/* Task trace and worker statistics (scaffold/trace.h): a post-execution hook chained onto the
 * scheduling context's policy records (codelet, worker, start, end, flops) of every task into
 * per-worker buffers; sf_trace_collect streams them to trace.json (Chrome trace events) together with
 * a counter of the bytes StarPU moved between memory nodes (its bus statistics); the end writes
 * worker_stats.json/.txt (per worker and per kind of worker, plus the transfers of every bus). StarPU copies the policy into each context (load_sched_policy),
 * so chaining the hook on context 0 touches only this process's context. Phases (sf_trace_phase_begin
 * / _end) difference the per-worker busy totals the hook keeps, giving each phase's utilisation. */
#include "scaffold/trace.h"

#include <errno.h>
#include <math.h>
#include <starpu.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/switches.h"

#define SF_TRACE_BUF 16384 /* records per worker between two collects */
#define NAME_LEN 40
#define SF_TRACE_MAX_BUS 64
#define SF_TRACE_MAX_PHASES 32 /* distinct phase names */

typedef struct {
  double start, end, flops;
  char name[NAME_LEN];
} rec;

typedef struct {
  char name[NAME_LEN];
  long spans, tasks;
  double wall_us, busy_us;
  double cpu_s;     /* process CPU time (user + system, all threads) */
  double *wbusy_us; /* per worker */
} phase_log;

typedef struct {
  rec *buf;
  size_t n;
  /* totals, complete even when records are dropped */
  long tasks;
  double busy_us, flops;
  long overflow; /* records lost because the buffer was full */
} worker_log;

static struct {
  int active;
  int nworkers;
  worker_log *w;
  FILE *f;
  char *dir, *path;
  sf_atomic_file af;
  double t0;                 /* trace clock at begin (us) */
  long written, dropped, max_events;
  int first;
  void (*prev_hook)(struct starpu_task *, unsigned);
  struct starpu_sched_policy *policy;
  int nbus;                                /* StarPU buses (memory node pairs) */
  long long bus_bytes[SF_TRACE_MAX_BUS];   /* transferred since sf_trace_begin */
  long bus_count[SF_TRACE_MAX_BUS];
  char *activity;                          /* "training", "data generation", ... */
  phase_log phases[SF_TRACE_MAX_PHASES];
  int nphases;
  int cur_phase;                           /* open phase, -1 if none */
  double phase_t0, phase_cpu0;
  double *snap_busy_us;                    /* per worker, at sf_trace_phase_begin */
  long *snap_tasks;
} T;

static sf_trace_summary g_summary; /* of the last sf_trace_end */

void sf_trace_last_summary(sf_trace_summary *out) { *out = g_summary; }

/* Adds what StarPU's bus statistics counted since the last call (reading them resets them). */
static void bus_poll(void)
{
  int nb = starpu_bus_get_count();
  if (nb > SF_TRACE_MAX_BUS) nb = SF_TRACE_MAX_BUS;
  if (nb > T.nbus) T.nbus = nb;
  for (int b = 0; b < nb; b++) {
    struct starpu_profiling_bus_info bi;
    if (starpu_bus_get_profiling_info(b, &bi) != 0) continue;
    T.bus_bytes[b] += bi.transferred_bytes;
    T.bus_count[b] += bi.transfer_count;
  }
}

static long long bus_total(long *count)
{
  long long bytes = 0;
  long n = 0;
  for (int b = 0; b < T.nbus; b++) {
    bytes += T.bus_bytes[b];
    n += T.bus_count[b];
  }
  if (count) *count = n;
  return bytes;
}

/* "CPU" / "OpenCL" / "CUDA" for a worker, "RAM" / "OpenCL" / "CUDA" ... for a memory node */
static const char *worker_kind(int w)
{
  switch (starpu_worker_get_type(w)) {
  case STARPU_CPU_WORKER: return "CPU";
  case STARPU_CUDA_WORKER: return "CUDA";
  case STARPU_OPENCL_WORKER: return "OpenCL";
  default: return "other";
  }
}

static void node_name(int node, char *buf, size_t len)
{
  if (starpu_memory_node_get_name((unsigned)node, buf, len) < 0 || !buf[0]) snprintf(buf, len, "node %d", node);
}

double sf_trace_now(void) { return starpu_timing_now(); }
int sf_trace_active(void) { return T.active; }

static void hook(struct starpu_task *task, unsigned ctx)
{
  struct starpu_profiling_task_info *pi = task->profiling_info;
  int w = pi ? pi->workerid : starpu_worker_get_id();
  if (pi && w >= 0 && w < T.nworkers) {
    worker_log *l = &T.w[w];
    double s = starpu_timing_timespec_to_us(&pi->start_time), e = starpu_timing_timespec_to_us(&pi->end_time);
    l->tasks++;
    l->busy_us += e - s;
    l->flops += task->flops;
    if (l->n < SF_TRACE_BUF) {
      rec *r = &l->buf[l->n++];
      r->start = s;
      r->end = e;
      r->flops = task->flops;
      const char *name = task->name ? task->name : task->cl && task->cl->name ? task->cl->name : "task";
      snprintf(r->name, NAME_LEN, "%s", name);
    } else {
      l->overflow++;
    }
  }
  if (T.prev_hook) T.prev_hook(task, ctx);
}

static void json_str(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void sep(void)
{
  if (!T.first) fputs(",\n", T.f);
  T.first = 0;
}

int sf_trace_begin(const char *dir, char *err, size_t errlen)
{
  return sf_trace_begin_as(dir, "scaffold benchmark", "training", err, errlen);
}

int sf_trace_begin_as(const char *dir, const char *process_name, const char *activity, char *err, size_t errlen)
{
  if (T.active) SF_ABORT("sf_trace_begin called twice");
  memset(&T, 0, sizeof T);
  int training = !strcmp(activity, "training");
  T.nworkers = (int)starpu_worker_get_count();
  const char *me = sf_switch("SF_TRACE_MAX_EVENTS");
  T.max_events = me && *me ? atol(me) : 1000000;
  if (T.max_events < 0) T.max_events = 0;
  T.dir = sf_strdup(dir);
  T.path = sf_path_join(dir, "trace.json");
  if (sf_atomic_open(&T.af, T.path) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", T.path, strerror(errno));
    free(T.dir);
    free(T.path);
    return -1;
  }
  T.f = T.af.f;
  T.activity = sf_strdup(activity);
  T.cur_phase = -1;
  T.snap_busy_us = sf_calloc((size_t)T.nworkers + 1, sizeof *T.snap_busy_us, "trace phase snapshot");
  T.snap_tasks = sf_calloc((size_t)T.nworkers + 1, sizeof *T.snap_tasks, "trace phase snapshot");
  T.w = sf_calloc((size_t)T.nworkers, sizeof *T.w, "trace worker logs");
  for (int i = 0; i < T.nworkers; i++) T.w[i].buf = sf_malloc(SF_TRACE_BUF * sizeof(rec), "trace buffer");
  T.first = 1;
  fputs("{\"traceEvents\":[\n", T.f);
  sep();
  fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":", T.f);
  json_str(T.f, process_name);
  fputs("}}", T.f);
  for (int i = 0; i <= T.nworkers; i++) {
    char name[64];
    if (i < T.nworkers) starpu_worker_get_name(i, name, sizeof name);
    else snprintf(name, sizeof name, training ? "main (steps, epochs)" : "main (phases)");
    sep();
    fprintf(T.f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":", i);
    json_str(T.f, name);
    fputs("}}", T.f);
    sep();
    fprintf(T.f, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
            i, i);
  }
  starpu_task_wait_for_all();
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  for (int i = 0; i < T.nworkers; i++) starpu_profiling_worker_get_info(i, NULL); /* reset the counters */
  T.policy = starpu_sched_ctx_get_sched_policy(0);
  if (!T.policy) {
    snprintf(err, errlen, "tracing: StarPU's scheduling context 0 has no policy to hook");
    sf_atomic_abort(&T.af);
    return -1;
  }
  T.prev_hook = T.policy->post_exec_hook;
  T.policy->post_exec_hook = hook;
  bus_poll(); /* resets StarPU's bus counters: transfers count from here */
  T.nbus = 0;
  memset(T.bus_bytes, 0, sizeof T.bus_bytes);
  memset(T.bus_count, 0, sizeof T.bus_count);
  T.t0 = starpu_timing_now();
  T.active = 1;
  return 0;
}

void sf_trace_collect(void)
{
  if (!T.active) return;
  for (int w = 0; w < T.nworkers; w++) {
    worker_log *l = &T.w[w];
    for (size_t i = 0; i < l->n; i++) {
      const rec *r = &l->buf[i];
      if (T.written >= T.max_events) {
        T.dropped++;
        continue;
      }
      sep();
      fprintf(T.f, "{\"name\":");
      json_str(T.f, r->name);
      fprintf(T.f, ",\"cat\":\"task\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                   "\"args\":{\"flops\":%.17g,\"codelet\":",
              w, r->start - T.t0, r->end - r->start, r->flops);
      json_str(T.f, r->name);
      fputs("}}", T.f);
      T.written++;
    }
    T.dropped += l->overflow;
    l->overflow = 0;
    l->n = 0;
  }
  bus_poll();
  if (T.nbus > 0 && T.written < T.max_events) { /* cumulative bytes between memory nodes (counter track) */
    long n;
    long long bytes = bus_total(&n);
    sep();
    fprintf(T.f, "{\"name\":\"bus transfers\",\"cat\":\"transfer\",\"ph\":\"C\",\"pid\":0,\"ts\":%.3f,"
                 "\"args\":{\"MiB\":%.6f,\"count\":%ld}}",
            starpu_timing_now() - T.t0, (double)bytes / (1024.0 * 1024.0), n);
    T.written++;
  }
}

void sf_trace_span(const char *name, const char *cat, double t0, double t1)
{
  if (!T.active) return;
  if (T.written >= T.max_events) {
    T.dropped++;
    return;
  }
  sep();
  fputs("{\"name\":", T.f);
  json_str(T.f, name);
  fputs(",\"cat\":", T.f);
  json_str(T.f, cat);
  fprintf(T.f, ",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}", T.nworkers, t0 - T.t0, t1 - t0);
  T.written++;
}

static double process_cpu_s(void)
{
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
         1e-6 * (double)ru.ru_stime.tv_usec;
}

void sf_trace_phase_begin(const char *name)
{
  if (!T.active) return;
  if (T.cur_phase >= 0) SF_ABORT("sf_trace_phase_begin(\"%s\") inside phase \"%s\": phases do not nest", name,
                                 T.phases[T.cur_phase].name);
  int p = 0;
  while (p < T.nphases && strncmp(T.phases[p].name, name, NAME_LEN - 1) != 0) p++;
  if (p == T.nphases) {
    if (T.nphases == SF_TRACE_MAX_PHASES) {
      sf_warn("trace: more than %d phase names; phase \"%s\" is not counted", SF_TRACE_MAX_PHASES, name);
      return;
    }
    phase_log *ph = &T.phases[T.nphases++];
    snprintf(ph->name, NAME_LEN, "%s", name);
    ph->wbusy_us = sf_calloc((size_t)T.nworkers + 1, sizeof *ph->wbusy_us, "trace phase");
  }
  /* the busy totals the hook keeps; stable here because no task of this phase runs yet */
  for (int w = 0; w < T.nworkers; w++) {
    T.snap_busy_us[w] = T.w[w].busy_us;
    T.snap_tasks[w] = T.w[w].tasks;
  }
  T.cur_phase = p;
  T.phase_cpu0 = process_cpu_s();
  T.phase_t0 = starpu_timing_now();
}

void sf_trace_phase_end(void)
{
  if (!T.active || T.cur_phase < 0) return;
  double t1 = starpu_timing_now();
  phase_log *ph = &T.phases[T.cur_phase];
  ph->cpu_s += process_cpu_s() - T.phase_cpu0;
  for (int w = 0; w < T.nworkers; w++) {
    double b = T.w[w].busy_us - T.snap_busy_us[w];
    ph->wbusy_us[w] += b;
    ph->busy_us += b;
    ph->tasks += T.w[w].tasks - T.snap_tasks[w];
  }
  ph->wall_us += t1 - T.phase_t0;
  ph->spans++;
  T.cur_phase = -1;
  sf_trace_span(ph->name, "phase", T.phase_t0, t1);
}

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

/* "name": ..., "spans": ..., ..., "cpu_utilisation": ... of one phase (worker_stats.json and trace.json) */
static void phase_json_fields(FILE *f, const phase_log *ph)
{
  fputs("\"name\": ", f);
  json_str(f, ph->name);
  fprintf(f, ", \"spans\": %ld, \"wall_s\": %.6f, \"tasks\": %ld, \"busy_s\": %.6f, \"utilisation\": %.6f, "
             "\"cpu_s\": %.6f, \"cpu_utilisation\": %.6f",
          ph->spans, ph->wall_us * 1e-6, ph->tasks, ph->busy_us * 1e-6, phase_util(ph), ph->cpu_s, phase_cpu_util(ph));
}

static double ts_s(struct timespec *t) { return starpu_timing_timespec_to_us(t) * 1e-6; }

static int write_stats(double wall_us, char *err, size_t errlen)
{
  char *jp = sf_path_join(T.dir, "worker_stats.json"), *tp = sf_path_join(T.dir, "worker_stats.txt");
  sf_atomic_file aj, at;
  int rc = 0;
  if (sf_atomic_open(&aj, jp) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", jp, strerror(errno));
    free(jp);
    free(tp);
    return -1;
  }
  if (sf_atomic_open(&at, tp) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", tp, strerror(errno));
    sf_atomic_abort(&aj);
    free(jp);
    free(tp);
    return -1;
  }
  double wall = wall_us * 1e-6;
  sf_trace_summary *sm = &g_summary;
  memset(sm, 0, sizeof *sm);
  sm->wall_s = wall;
  fprintf(aj.f, "{\n    \"wall_s\": %.6f,\n    \"events_written\": %ld,\n    \"events_dropped\": %ld,\n"
                "    \"activity\": ", wall, T.written, T.dropped);
  json_str(aj.f, T.activity);
  fputs(",\n    \"workers\": [\n", aj.f);
  fprintf(at.f, "Per-worker activity over %.3f s of %s (trace: 1); busy = task execution time.\n\n", wall, T.activity);
  fprintf(at.f, "%-4s %-14s %10s %10s %10s %7s %12s %12s\n", "id", "worker", "tasks", "busy_s", "idle_s", "busy%",
          "GFLOP", "GFLOP/s_busy");
  long tot_tasks = 0;
  double tot_busy = 0, tot_flops = 0;
  for (int w = 0; w < T.nworkers; w++) {
    const worker_log *l = &T.w[w];
    char name[64];
    starpu_worker_get_name(w, name, sizeof name);
    double busy = l->busy_us * 1e-6, idle = wall - busy, pct = wall > 0 ? 100.0 * busy / wall : 0;
    if (idle < 0) idle = 0;
    struct starpu_profiling_worker_info info;
    memset(&info, 0, sizeof info);
    int have = starpu_profiling_worker_get_info(w, &info) == 0;
    fprintf(aj.f, "        {\"id\": %d, \"name\": ", w);
    json_str(aj.f, name);
    fprintf(aj.f, ", \"kind\": \"%s\"", worker_kind(w));
    fprintf(aj.f, ", \"tasks\": %ld, \"busy_s\": %.6f, \"idle_s\": %.6f, \"busy_pct\": %.3f, \"flops\": %.17g",
            l->tasks, busy, idle, pct, l->flops);
    if (have)
      fprintf(aj.f, ", \"starpu_tasks\": %d, \"starpu_executing_s\": %.6f, \"starpu_sleeping_s\": %.6f, "
                    "\"starpu_total_s\": %.6f",
              info.executed_tasks, ts_s(&info.executing_time), ts_s(&info.sleeping_time), ts_s(&info.total_time));
    fprintf(aj.f, "}%s\n", w + 1 < T.nworkers ? "," : "");
    fprintf(at.f, "%-4d %-14s %10ld %10.3f %10.3f %7.1f %12.3f %12.2f\n", w, name, l->tasks, busy, idle, pct,
            l->flops * 1e-9, busy > 0 ? l->flops * 1e-9 / busy : 0.0);
    if (w < SF_TRACE_SUMMARY_MAX_WORKERS) {
      snprintf(sm->worker[w].name, sizeof sm->worker[w].name, "%s", name);
      snprintf(sm->worker[w].kind, sizeof sm->worker[w].kind, "%s", worker_kind(w));
      sm->worker[w].tasks = l->tasks;
      sm->worker[w].busy_s = busy;
      sm->nworkers = w + 1;
    }
    tot_tasks += l->tasks;
    tot_busy += busy;
    tot_flops += l->flops;
  }
  double cap = wall * T.nworkers;
  fprintf(aj.f, "    ],\n    \"total\": {\"tasks\": %ld, \"busy_s\": %.6f, \"busy_pct\": %.3f, \"flops\": %.17g},\n",
          tot_tasks, tot_busy, cap > 0 ? 100.0 * tot_busy / cap : 0.0, tot_flops);
  fprintf(at.f, "%-4s %-14s %10ld %10.3f %10.3f %7.1f %12.3f %12.2f\n", "", "all", tot_tasks, tot_busy,
          cap - tot_busy > 0 ? cap - tot_busy : 0.0, cap > 0 ? 100.0 * tot_busy / cap : 0.0, tot_flops * 1e-9,
          tot_busy > 0 ? tot_flops * 1e-9 / tot_busy : 0.0);
  /* phases: busy time of the tasks that ended inside each, over workers x its wall time */
  fprintf(aj.f, "    \"phases\": [");
  if (T.nphases) {
    fprintf(at.f, "\nPhases (utilisation = busy / (%d workers x wall time); cpu%% = process CPU time over the same, lower "
                  "when tasks wait for the disk):\n\n", T.nworkers);
    fprintf(at.f, "%-20s %6s %10s %10s %10s %12s %10s %7s  %s\n", "phase", "spans", "wall_s", "tasks", "busy_s",
            "utilisation", "cpu_s", "cpu%", "busy% per worker");
  }
  for (int p = 0; p < T.nphases; p++) {
    const phase_log *ph = &T.phases[p];
    fprintf(aj.f, "%s\n        {", p ? "," : "");
    phase_json_fields(aj.f, ph);
    fputs(", \"workers_busy_s\": [", aj.f);
    fprintf(at.f, "%-20s %6ld %10.3f %10ld %10.3f %11.1f%% %10.3f %6.1f%% ", ph->name, ph->spans, ph->wall_us * 1e-6,
            ph->tasks, ph->busy_us * 1e-6, 100.0 * phase_util(ph), ph->cpu_s, 100.0 * phase_cpu_util(ph));
    for (int w = 0; w < T.nworkers; w++) {
      fprintf(aj.f, "%s%.6f", w ? ", " : "", ph->wbusy_us[w] * 1e-6);
      fprintf(at.f, " %5.1f", ph->wall_us > 0 ? 100.0 * ph->wbusy_us[w] / ph->wall_us : 0.0);
    }
    fputs("]}", aj.f);
    fputc('\n', at.f);
  }
  fprintf(aj.f, "%s],\n", T.nphases ? "\n    " : "");
  /* per kind of worker: tasks and flops with their shares of the total */
  static const char *const kinds[] = {"CPU", "OpenCL", "CUDA", "other"};
  fprintf(aj.f, "    \"by_kind\": {");
  fprintf(at.f, "\n%-8s %8s %10s %8s %12s %8s %10s\n", "kind", "workers", "tasks", "tasks%", "GFLOP", "flops%", "busy_s");
  int first_kind = 1;
  for (int k = 0; k < 4; k++) {
    long kt = 0;
    int nw = 0;
    double kf = 0, kb = 0;
    for (int w = 0; w < T.nworkers; w++)
      if (!strcmp(worker_kind(w), kinds[k])) {
        nw++;
        kt += T.w[w].tasks;
        kf += T.w[w].flops;
        kb += T.w[w].busy_us * 1e-6;
      }
    if (nw == 0) continue;
    double tp = tot_tasks > 0 ? 100.0 * kt / tot_tasks : 0.0, fp = tot_flops > 0 ? 100.0 * kf / tot_flops : 0.0;
    fprintf(aj.f, "%s\n        \"%s\": {\"workers\": %d, \"tasks\": %ld, \"tasks_pct\": %.3f, \"flops\": %.17g, "
                  "\"flops_pct\": %.3f, \"busy_s\": %.6f}",
            first_kind ? "" : ",", kinds[k], nw, kt, tp, kf, fp, kb);
    fprintf(at.f, "%-8s %8d %10ld %7.1f%% %12.3f %7.1f%% %10.3f\n", kinds[k], nw, kt, tp, kf * 1e-9, fp, kb);
    first_kind = 0;
  }
  /* data moved between memory nodes, from StarPU's bus statistics */
  long tcount;
  long long tbytes = bus_total(&tcount);
  sm->transfer_bytes = tbytes;
  sm->transfer_count = tcount;
  fprintf(aj.f, "\n    },\n    \"transfers\": {\"bytes\": %lld, \"count\": %ld, \"buses\": [", tbytes, tcount);
  fprintf(at.f, "\nData transfers between memory nodes (StarPU bus statistics): %.3f MiB in %ld transfers\n",
          (double)tbytes / (1024.0 * 1024.0), tcount);
  int first_bus = 1;
  for (int b = 0; b < T.nbus; b++) {
    if (T.bus_count[b] == 0) continue;
    char src[64], dst[64];
    node_name(starpu_bus_get_src(b), src, sizeof src);
    node_name(starpu_bus_get_dst(b), dst, sizeof dst);
    fprintf(aj.f, "%s\n        {\"src\": ", first_bus ? "" : ",");
    json_str(aj.f, src);
    fputs(", \"dst\": ", aj.f);
    json_str(aj.f, dst);
    fprintf(aj.f, ", \"bytes\": %lld, \"count\": %ld}", T.bus_bytes[b], T.bus_count[b]);
    if (sm->nbuses < SF_TRACE_SUMMARY_MAX_BUSES) {
      snprintf(sm->bus[sm->nbuses].src, sizeof sm->bus[0].src, "%s", src);
      snprintf(sm->bus[sm->nbuses].dst, sizeof sm->bus[0].dst, "%s", dst);
      sm->bus[sm->nbuses].bytes = T.bus_bytes[b];
      sm->bus[sm->nbuses].count = T.bus_count[b];
      sm->nbuses++;
    }
    fprintf(at.f, "  %-12s -> %-12s %12.3f MiB %8ld transfers\n", src, dst, (double)T.bus_bytes[b] / (1024.0 * 1024.0),
            T.bus_count[b]);
    first_bus = 0;
  }
  fprintf(aj.f, "%s]}\n}\n", first_bus ? "" : "\n    ");
  if (T.dropped) fprintf(at.f, "\n%ld task events were not written to trace.json (SF_TRACE_MAX_EVENTS)\n", T.dropped);
  if (sf_atomic_commit(&aj) != 0) rc = -1;
  if (sf_atomic_commit(&at) != 0) rc = -1;
  if (rc != 0) snprintf(err, errlen, "cannot write %s / %s: %s", jp, tp, strerror(errno));
  free(jp);
  free(tp);
  return rc;
}

int sf_trace_end(char *err, size_t errlen)
{
  if (!T.active) return 0;
  starpu_task_wait_for_all();
  if (T.cur_phase >= 0) sf_trace_phase_end(); /* a phase left open (an early return) ends here */
  sf_trace_collect();
  double wall = starpu_timing_now() - T.t0;
  T.policy->post_exec_hook = T.prev_hook;
  fprintf(T.f, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"generator\":\"scaffold %s\",\"workers\":%d,"
               "\"events_written\":%ld,\"events_dropped\":%ld,",
          SF_VERSION, T.nworkers, T.written, T.dropped);
  fputs("\"activity\":", T.f);
  json_str(T.f, T.activity);
  fputs(",\"phases\":[", T.f);
  for (int p = 0; p < T.nphases; p++) {
    const phase_log *ph = &T.phases[p];
    fprintf(T.f, "%s{", p ? "," : "");
    phase_json_fields(T.f, ph);
    fputc('}', T.f);
  }
  fputs("],", T.f);
  long tcount;
  long long tbytes = bus_total(&tcount);
  fprintf(T.f, "\"transfer_bytes\":%lld,\"transfer_count\":%ld}}\n", tbytes, tcount);
  int rc = 0;
  if (sf_atomic_commit(&T.af) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", T.path, strerror(errno));
    rc = -1;
  }
  if (write_stats(wall, rc ? err + strlen(err) : err, rc ? errlen - strlen(err) : errlen) != 0) rc = -1;
  starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
  for (int i = 0; i < T.nworkers; i++) free(T.w[i].buf);
  for (int p = 0; p < T.nphases; p++) free(T.phases[p].wbusy_us);
  free(T.snap_busy_us);
  free(T.snap_tasks);
  free(T.activity);
  free(T.w);
  free(T.dir);
  free(T.path);
  T.active = 0;
  return rc;
}
