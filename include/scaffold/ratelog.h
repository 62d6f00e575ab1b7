/* Throughput in fixed-length slices (src/util/ratelog.c), milarun's RateLogger (spec milabench.md
 * §2): the training loop feeds it every step, the harness (scaffold/bench.h) turns a finished one
 * into a result's timings. Also the steady-state mean used by the report. */
#ifndef SF_RATELOG_H
#define SF_RATELOG_H

#include <stddef.h>
#include <stdio.h>

/* Throughput logger with milarun's RateLogger semantics. Each step adds (d seconds, count samples,
 * flops). When the pending time T reaches the slice length s, floor(T/s) copies of C/T (samples/s)
 * and F/T/1e9 (GFLOP/s) are appended, and the remainder carries over: T <- T mod s,
 * C <- C - floor(k)*C/k, F likewise (k = T/s). sf_ratelog_finish adds one last partial slice. */
typedef struct sf_ratelog {
  double sample_duration;
  long long max_count;               /* <= 0: no sample limit */
  double max_time;                   /* seconds of timed steps (total_time); <= 0: no time limit */
  double t, c, f;                    /* pending slice: seconds, samples, flops */
  double total_time, total_count, total_flops;
  double *rates, *gflops;            /* per slice: samples/s and GFLOP/s */
  size_t n, cap;
  double start, end;                 /* epoch seconds: first step start, last step end */
  double iter_t0;                    /* sf_now() at sf_ratelog_iter_begin */
  int started, finished;
  void (*sync)(void *ctx);           /* optional: waits for submitted work (starpu_task_wait_for_all) */
  void *sync_ctx;
  FILE *progress;                    /* optional: a line per completed slice once metrics exist */
  size_t nmetrics;
  char **metric_keys;                /* last value of each logged metric */
  double *metric_vals;
} sf_ratelog;

void sf_ratelog_init(sf_ratelog *r, double sample_duration, long long max_count);
/* The sync hook runs only when a step would complete a slice (as milarun syncs the GPU only at
 * slice boundaries), and once more in sf_ratelog_finish; its time counts in the step. */
void sf_ratelog_set_sync(sf_ratelog *r, void (*sync)(void *ctx), void *ctx);
/* Times one step: begin before fetching/submitting its work, end after it (count samples and the
 * declared flops of the step's completed tasks). Time between steps is "overhead". */
void sf_ratelog_iter_begin(sf_ratelog *r);
void sf_ratelog_iter_end(sf_ratelog *r, double count, double flops);
/* The raw accumulation, for callers that time steps themselves. */
void sf_ratelog_elapse(sf_ratelog *r, double seconds, double count, double flops);
/* Records the last value of a metric (loss, dice, ...). A NaN makes the run count as failed. */
void sf_ratelog_log(sf_ratelog *r, const char *key, double value);
/* A time limit besides (or instead of) max_count: sf_ratelog_done fires once total_time, the timed
 * step seconds the slices are cut from, reaches seconds (> 0; <= 0 removes the limit). A run that
 * reaches it holds at least floor(seconds / sample_duration) slices. */
void sf_ratelog_set_max_time(sf_ratelog *r, double seconds);
/* 1 once total_count >= max_count (max_count > 0) or total_time >= max_time (max_time > 0). */
int sf_ratelog_done(const sf_ratelog *r);
/* Which limit sf_ratelog_done reached, for log lines: "--max-count N training samples reached" or
 * "--max-time S s of training steps reached" (buf; "no limit reached" when none). Returns buf. */
const char *sf_ratelog_done_why(const sf_ratelog *r, char *buf, size_t n);
/* One more sync (timed, count 0), then the final partial slice if time is pending. Idempotent. */
void sf_ratelog_finish(sf_ratelog *r);
void sf_ratelog_free(sf_ratelog *r);
/* Steady state of one run: mean(rates[-20:-2]) with Python slice semantics, i.e. the mean of
 * indices max(0, m-20) .. m-3; NaN when m <= 2. */
double sf_steady(const double *rates, size_t m);
/* The fewest slices for which sf_steady has a value: rates[-20:-2] is empty below 3 (with 3 it is the
 * first slice alone; the full 18-slice window needs 20). The harness shows a successful run with
 * fewer as "too few samples (N < 3)", never as a failure. */
#define SF_STEADY_MIN_SLICES 3
/* The full window of sf_steady: from 20 slices on it averages 18 of them. */
#define SF_STEADY_FULL_SLICES 20

#endif
