/* Task trace of a run (config key `trace`, docs/architecture.md §5): StarPU task profiling (no FxT needed)
 * gives each task's codelet, worker, start, end and declared flops. They are written as a
 * Chrome/Perfetto trace-event file (trace.json: "X" events with pid 0, tid = worker id, ts/dur in
 * microseconds, args {flops, codelet}; thread_name metadata naming each worker, e.g. "CPU 0"; the
 * main thread's steps and epochs on tid = worker count) plus per-worker busy/idle statistics
 * (worker_stats.json and worker_stats.txt).
 *
 * Data transfers between memory nodes (e.g. RAM <-> an OpenCL device) come from StarPU's bus
 * statistics (starpu_bus_get_profiling_info, counted from sf_trace_begin): trace.json has a counter
 * track "bus transfers" (cumulative MiB and count at each collect) and otherData.transfer_bytes /
 * transfer_count; worker_stats.json has each worker's "kind" ("CPU", "OpenCL", "CUDA"), "by_kind"
 * (workers, tasks, flops and their shares per kind) and "transfers" {bytes, count, buses: [{src, dst,
 * bytes, count}]}; worker_stats.txt the same as tables. Each worker in worker_stats.json also has StarPU's
 * per-task stages summed over its tasks, in seconds: "starpu_push_s" (into the scheduler), "starpu_pop_s" (out of it),
 * "starpu_acquire_s" / "starpu_release_s" (input data acquired, output data released; scripts/bench-runtimes' cost
 * per task, docs/runtimes.md).
 *
 * Records are taken by a hook chained onto the scheduling context's post-execution hook
 * (starpu_sched_policy.post_exec_hook, which StarPU calls on the executing worker for every task),
 * into per-worker buffers drained by sf_trace_collect while no task runs, so memory stays bounded.
 * At most SF_TRACE_MAX_EVENTS events (environment; default 1,000,000) are written; later ones
 * still count in the statistics, and the number dropped is reported.
 *
 * Data generation (generate_fractals, the dataset) is traced the same way into its own directory
 * (sf_trace_begin_as, with per-phase utilisation: sf_trace_phase_begin/_end; docs/datagen-performance.md). */
#ifndef SF_TRACE_H
#define SF_TRACE_H

#include <stddef.h>

/* Starts tracing into dir/trace.json (StarPU must be running, no task in flight): enables StarPU
 * profiling and installs the hook. Returns 0, or -1 with a message in err. */
int sf_trace_begin(const char *dir, char *err, size_t errlen);
int sf_trace_active(void);
/* The trace clock (microseconds, StarPU's clock), for sf_trace_span. */
double sf_trace_now(void);
/* Writes the task records gathered so far. Call only when no task is running (after a wait). */
void sf_trace_collect(void);
/* A main-thread span (e.g. "step 12", "epoch 3", "validation") from t0 to t1 (sf_trace_now()). */
void sf_trace_span(const char *name, const char *cat, double t0, double t1);
/* Final collect, closes trace.json, writes worker_stats.json/.txt, removes the hook. Returns 0, or
 * -1 with a message in err. No-op (0) when tracing is off. */
int sf_trace_end(char *err, size_t errlen);

/* The figures of the last sf_trace_end, as worker_stats.json holds them (the first
 * SF_TRACE_SUMMARY_MAX_WORKERS workers and the buses that moved data). All zero before any trace ends. */
#define SF_TRACE_SUMMARY_MAX_WORKERS 128
#define SF_TRACE_SUMMARY_MAX_BUSES 64
typedef struct {
  double wall_s;
  int nworkers;
  struct {
    char name[64], kind[8]; /* kind: "CPU", "OpenCL", "CUDA" */
    long tasks;
    double busy_s;
  } worker[SF_TRACE_SUMMARY_MAX_WORKERS];
  int nbuses;
  struct {
    char src[64], dst[64];
    long long bytes;
    long count;
  } bus[SF_TRACE_SUMMARY_MAX_BUSES];
  long long transfer_bytes;
  long transfer_count;
} sf_trace_summary;
void sf_trace_last_summary(sf_trace_summary *out);

/* sf_trace_begin for another activity than training (e.g. data generation): process_name names
 * the process track in trace.json (e.g. "scaffold generate_fractals"), activity is the word
 * worker_stats.txt's header and the "activity" fields use; the main thread is "main (phases)".
 * sf_trace_begin(dir) is sf_trace_begin_as(dir, "scaffold benchmark", "training"). */
int sf_trace_begin_as(const char *dir, const char *process_name, const char *activity, char *err, size_t errlen);

/* Phases: named main-thread intervals (e.g. "fractal classes", "fractal instances", "dataset")
 * with their worker utilisation. sf_trace_phase_begin snapshots every worker's busy time (so call
 * it with none of your tasks in flight); sf_trace_phase_end, called once the phase's tasks are done
 * (after the wait), writes the span (cat "phase", main-thread track) and adds to that phase's name
 * the wall time and the busy time of the tasks that ended in between. worker_stats.json gets
 * "phases": [{name, spans, wall_s, tasks, busy_s, utilisation, cpu_s, cpu_utilisation,
 * workers_busy_s: [...]}], worker_stats.txt a table and trace.json otherData.phases the same
 * figures, with utilisation = busy_s / (workers x wall_s) over all workers (in [0, 1]) and
 * cpu_utilisation = cpu_s / (workers x wall_s), cpu_s the process's CPU time (getrusage, all
 * threads) in the phase: lower than the utilisation when tasks wait (e.g. for the disk). Several
 * spans of one name add up. Phases do not nest. No-ops when tracing is off. */
void sf_trace_phase_begin(const char *name);
void sf_trace_phase_end(void);

#endif
