/* Task trace and worker statistics (scaffold/trace.h): a post-execution hook chained onto the
 * scheduling context's policy records (codelet, worker, start, end, flops) of every task into
 * per-worker buffers, and sums StarPU's per-task stages (push, pop, data acquire and release) per
 * worker; sf_trace_collect streams them to trace.json (Chrome trace events) together with
 * a counter of the bytes StarPU moved between memory nodes (its bus statistics), every event printed
 * by cJSON; the end writes worker_stats.json/.txt (trace_stats.c). StarPU copies the policy into each
 * context (load_sched_policy),
 * so chaining the hook on context 0 touches only this process's context. Phases (sf_trace_phase_begin
 * / _end) difference the per-worker busy totals the hook keeps, giving each phase's utilisation. */
#include "trace_internal.h"

#include <errno.h>
#include <math.h>
#include <starpu.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/switches.h"

double sf_trace_now(void) { return starpu_timing_now(); }
int sf_trace_active(void) { return T.active; }

/* One stage of a task's profiling record, in us; 0 when StarPU did not stamp it */
static double span_us(struct timespec *a, struct timespec *b)
{
  if (!a->tv_sec && !a->tv_nsec) return 0;
  double d = starpu_timing_timespec_to_us(b) - starpu_timing_timespec_to_us(a);
  return d > 0 ? d : 0;
}

static void hook(struct starpu_task *task, unsigned ctx)
{
  struct starpu_profiling_task_info *pi = task->profiling_info;
  int w = pi ? pi->workerid : starpu_worker_get_id();
  if (pi && w >= 0 && w < T.nworkers) {
    worker_log *l = &T.w[w];
    double s = starpu_timing_timespec_to_us(&pi->start_time), e = starpu_timing_timespec_to_us(&pi->end_time);
    l->tasks++;
    l->busy_us += e - s;
    l->push_us += span_us(&pi->push_start_time, &pi->push_end_time);
    l->pop_us += span_us(&pi->pop_start_time, &pi->pop_end_time);
    l->acquire_us += span_us(&pi->acquire_data_start_time, &pi->acquire_data_end_time);
    l->release_us += span_us(&pi->release_data_start_time, &pi->release_data_end_time);
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

static void sep(void)
{
  if (!T.first) fputs(",\n", T.f);
  T.first = 0;
}

/* One event, printed by cJSON on its own line, and freed */
static void emit(cJSON *ev)
{
  char *text = cJSON_PrintUnformatted(ev);
  if (!text) SF_ABORT("trace: cJSON could not print an event (out of memory?)");
  sep();
  fputs(text, T.f);
  free(text);
  cJSON_Delete(ev);
}

/* {"name": name, "ph": ph, "pid": 0} plus tid when tid >= 0 */
static cJSON *event(const char *name, const char *ph, int tid)
{
  cJSON *ev = cJSON_CreateObject();
  cJSON_AddStringToObject(ev, "name", name);
  cJSON_AddStringToObject(ev, "ph", ph);
  cJSON_AddNumberToObject(ev, "pid", 0);
  if (tid >= 0) cJSON_AddNumberToObject(ev, "tid", tid);
  return ev;
}

static void metadata(const char *what, int tid, const char *key, cJSON *value)
{
  cJSON *ev = event(what, "M", tid);
  cJSON_AddItemToObject(cJSON_AddObjectToObject(ev, "args"), key, value);
  emit(ev);
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
  metadata("process_name", -1, "name", cJSON_CreateString(process_name));
  for (int i = 0; i <= T.nworkers; i++) {
    char name[64];
    if (i < T.nworkers) starpu_worker_get_name(i, name, sizeof name);
    else snprintf(name, sizeof name, training ? "main (steps, epochs)" : "main (phases)");
    metadata("thread_name", i, "name", cJSON_CreateString(name));
    metadata("thread_sort_index", i, "sort_index", cJSON_CreateNumber(i));
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
  sf_trace_bus_poll(); /* resets StarPU's bus counters: transfers count from here */
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
      cJSON *ev = event(r->name, "X", w);
      cJSON_AddStringToObject(ev, "cat", "task");
      cJSON_AddNumberToObject(ev, "ts", r->start - T.t0);
      cJSON_AddNumberToObject(ev, "dur", r->end - r->start);
      cJSON *args = cJSON_AddObjectToObject(ev, "args");
      cJSON_AddNumberToObject(args, "flops", r->flops);
      cJSON_AddStringToObject(args, "codelet", r->name);
      emit(ev);
      T.written++;
    }
    T.dropped += l->overflow;
    l->overflow = 0;
    l->n = 0;
  }
  sf_trace_bus_poll();
  if (T.nbus > 0 && T.written < T.max_events) { /* cumulative bytes between memory nodes (counter track) */
    long n;
    long long bytes = sf_trace_bus_total(&n);
    cJSON *ev = event("bus transfers", "C", -1);
    cJSON_AddStringToObject(ev, "cat", "transfer");
    cJSON_AddNumberToObject(ev, "ts", starpu_timing_now() - T.t0);
    cJSON *args = cJSON_AddObjectToObject(ev, "args");
    cJSON_AddNumberToObject(args, "MiB", (double)bytes / (1024.0 * 1024.0));
    cJSON_AddNumberToObject(args, "count", (double)n);
    emit(ev);
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
  cJSON *ev = event(name, "X", T.nworkers);
  cJSON_AddStringToObject(ev, "cat", cat);
  cJSON_AddNumberToObject(ev, "ts", t0 - T.t0);
  cJSON_AddNumberToObject(ev, "dur", t1 - t0);
  emit(ev);
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

int sf_trace_end(char *err, size_t errlen)
{
  if (!T.active) return 0;
  starpu_task_wait_for_all();
  if (T.cur_phase >= 0) sf_trace_phase_end(); /* a phase left open (an early return) ends here */
  sf_trace_collect();
  double wall = starpu_timing_now() - T.t0;
  T.policy->post_exec_hook = T.prev_hook;
  long tcount;
  long long tbytes = sf_trace_bus_total(&tcount);
  cJSON *od = cJSON_CreateObject();
  char gen[64];
  snprintf(gen, sizeof gen, "scaffold %s", SF_VERSION);
  cJSON_AddStringToObject(od, "generator", gen);
  cJSON_AddNumberToObject(od, "workers", T.nworkers);
  cJSON_AddNumberToObject(od, "events_written", (double)T.written);
  cJSON_AddNumberToObject(od, "events_dropped", (double)T.dropped);
  cJSON_AddStringToObject(od, "activity", T.activity);
  cJSON *phases = cJSON_AddArrayToObject(od, "phases");
  for (int p = 0; p < T.nphases; p++) cJSON_AddItemToArray(phases, sf_trace_phase_json(&T.phases[p]));
  cJSON_AddNumberToObject(od, "transfer_bytes", (double)tbytes);
  cJSON_AddNumberToObject(od, "transfer_count", (double)tcount);
  cJSON_AddItemToObject(od, "kernel_choices", sf_kernel_choices_json());
  char *text = cJSON_PrintUnformatted(od);
  cJSON_Delete(od);
  if (!text) SF_ABORT("trace: cJSON could not print otherData (out of memory?)");
  fprintf(T.f, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":%s}\n", text);
  free(text);
  int rc = 0;
  if (sf_atomic_commit(&T.af) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", T.path, strerror(errno));
    rc = -1;
  }
  if (sf_trace_write_stats(wall, rc ? err + strlen(err) : err, rc ? errlen - strlen(err) : errlen) != 0) rc = -1;
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
