/* The trace's state, shared by its files: trace.c (the hook, trace.json, phases), trace_stats.c
 * (worker_stats.json and .txt at the end) and trace_state.c (the state, workers, buses). Internal to
 * the runtime layer. */
#ifndef SF_TRACE_INTERNAL_H
#define SF_TRACE_INTERNAL_H

#include <starpu.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "scaffold/fsutil.h"
#include "scaffold/trace.h"

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
  /* StarPU's own per-task stages (its task profiling): push into the scheduler, pop by the worker,
   * input data acquisition and output release, summed in us */
  double push_us, pop_us, acquire_us, release_us;
  long overflow; /* records lost because the buffer was full */
} worker_log;

typedef struct {
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
} sf_trace_state;

extern sf_trace_state sf_trace_g;
#define T sf_trace_g

extern sf_trace_summary sf_trace_g_summary; /* of the last sf_trace_end */

/* "CPU" / "OpenCL" / "CUDA" / "other" */
const char *sf_trace_worker_kind(int w);
/* a memory node's name ("RAM", "OpenCL 0", ...), or "node N" */
void sf_trace_node_name(int node, char *buf, size_t len);
/* adds what StarPU's bus statistics counted since the last call (reading them resets them) */
void sf_trace_bus_poll(void);
/* bytes and count moved between memory nodes since sf_trace_begin */
long long sf_trace_bus_total(long *count);
/* one phase's figures, as worker_stats.json and trace.json's otherData hold them */
cJSON *sf_trace_phase_json(const phase_log *ph);
/* worker_stats.json and worker_stats.txt in T.dir, atomically; fills sf_trace_g_summary */
int sf_trace_write_stats(double wall_us, char *err, size_t errlen);

#endif
