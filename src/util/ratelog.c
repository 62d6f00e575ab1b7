/* Throughput in fixed-length slices, with milarun's RateLogger semantics (spec milabench.md §2):
 * elapse(d, count) accumulates; each time the pending time reaches the slice length, floor(k)
 * copies of the accumulated rate are appended and the remainder carries over; finish adds the
 * final partial slice. Samples/s and GFLOP/s are sliced together. Also the steady-state mean
 * mean(rates[-20:-2]). Lives in src/util because training and the harness both use it. */
#include <math.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/ratelog.h"

void sf_ratelog_init(sf_ratelog *r, double sample_duration, long long max_count)
{
  memset(r, 0, sizeof *r);
  if (!(sample_duration > 0)) SF_ABORT("sample_duration must be > 0 (got %g)", sample_duration);
  r->sample_duration = sample_duration;
  r->max_count = max_count;
}

void sf_ratelog_set_sync(sf_ratelog *r, void (*sync)(void *ctx), void *ctx)
{
  r->sync = sync;
  r->sync_ctx = ctx;
}

static void push_rate(sf_ratelog *r, double rate, double gflops)
{
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    double *a = sf_malloc(cap * sizeof *a, "rate slices"), *b = sf_malloc(cap * sizeof *b, "rate slices");
    if (r->n) {
      memcpy(a, r->rates, r->n * sizeof *a);
      memcpy(b, r->gflops, r->n * sizeof *b);
    }
    free(r->rates);
    free(r->gflops);
    r->rates = a;
    r->gflops = b;
    r->cap = cap;
  }
  r->rates[r->n] = rate;
  r->gflops[r->n] = gflops;
  r->n++;
}

static void print_progress(sf_ratelog *r)
{
  if (!r->progress || r->nmetrics == 0 || r->n == 0) return;
  FILE *f = r->progress;
  if (r->max_count > 0) {
    fprintf(f, "[%lld/%lld]", (long long)r->total_count, r->max_count);
    if (r->total_count > 0) {
      double eta = r->total_time * ((double)r->max_count / r->total_count) - r->total_time;
      if (eta < 0) eta = 0;
      fprintf(f, " [ETA: %.0fm%02.0fs]", floor(eta / 60), fmod(eta, 60));
    }
  } else if (r->max_time > 0) {
    fprintf(f, "[%lld] [%.1f/%gs]", (long long)r->total_count, r->total_time, r->max_time);
  } else {
    fprintf(f, "[%lld/?]", (long long)r->total_count);
  }
  fprintf(f, " [%.2f items/s] [%.2f GFLOP/s]", r->rates[r->n - 1], r->gflops[r->n - 1]);
  for (size_t i = 0; i < r->nmetrics; i++) fprintf(f, " %s=%g", r->metric_keys[i], r->metric_vals[i]);
  fputc('\n', f);
  fflush(f);
}

void sf_ratelog_elapse(sf_ratelog *r, double seconds, double count, double flops)
{
  double now = sf_epoch_now();
  if (!r->started) {
    r->started = 1;
    r->start = now - seconds;
  }
  r->end = now;
  r->t += seconds;
  r->c += count;
  r->f += flops;
  r->total_time += seconds;
  r->total_count += count;
  r->total_flops += flops;
  if (r->t >= r->sample_duration) {
    double k = r->t / r->sample_duration;
    double whole = floor(k);
    double rate = r->c / r->t, gf = r->f / r->t * 1e-9;
    for (double i = 0; i < whole; i++) push_rate(r, rate, gf);
    r->c -= whole * (r->c / k);
    r->f -= whole * (r->f / k);
    r->t = fmod(r->t, r->sample_duration);
    print_progress(r);
  }
}

void sf_ratelog_iter_begin(sf_ratelog *r)
{
  r->iter_t0 = sf_now();
  if (!r->started) {
    r->started = 1;
    r->start = sf_epoch_now();
  }
}

void sf_ratelog_iter_end(sf_ratelog *r, double count, double flops)
{
  double d = sf_now() - r->iter_t0;
  if (r->sync && r->t + d >= r->sample_duration) {
    r->sync(r->sync_ctx);
    d = sf_now() - r->iter_t0;
  }
  sf_ratelog_elapse(r, d, count, flops);
}

void sf_ratelog_log(sf_ratelog *r, const char *key, double value)
{
  for (size_t i = 0; i < r->nmetrics; i++)
    if (!strcmp(r->metric_keys[i], key)) {
      r->metric_vals[i] = value;
      return;
    }
  char **k = sf_malloc((r->nmetrics + 1) * sizeof *k, "metric keys");
  double *v = sf_malloc((r->nmetrics + 1) * sizeof *v, "metric values");
  if (r->nmetrics) {
    memcpy(k, r->metric_keys, r->nmetrics * sizeof *k);
    memcpy(v, r->metric_vals, r->nmetrics * sizeof *v);
  }
  free(r->metric_keys);
  free(r->metric_vals);
  k[r->nmetrics] = sf_strdup(key);
  v[r->nmetrics] = value;
  r->metric_keys = k;
  r->metric_vals = v;
  r->nmetrics++;
}

void sf_ratelog_set_max_time(sf_ratelog *r, double seconds) { r->max_time = seconds > 0 ? seconds : 0; }

static int count_done(const sf_ratelog *r) { return r->max_count > 0 && r->total_count >= (double)r->max_count; }
static int time_done(const sf_ratelog *r) { return r->max_time > 0 && r->total_time >= r->max_time; }

int sf_ratelog_done(const sf_ratelog *r) { return count_done(r) || time_done(r); }

const char *sf_ratelog_done_why(const sf_ratelog *r, char *buf, size_t n)
{
  if (count_done(r)) snprintf(buf, n, "--max-count %lld training samples reached", r->max_count);
  else if (time_done(r)) snprintf(buf, n, "--max-time %g s of training steps reached", r->max_time);
  else snprintf(buf, n, "no limit reached");
  return buf;
}

void sf_ratelog_finish(sf_ratelog *r)
{
  if (r->finished) return;
  r->finished = 1;
  if (r->sync) {
    double t0 = sf_now();
    r->sync(r->sync_ctx);
    double d = sf_now() - t0;
    /* The final sync extends the measured time but not the step span (start..end). */
    double end = r->end;
    int started = r->started;
    sf_ratelog_elapse(r, d, 0, 0);
    if (started) r->end = end;
    else r->started = 0;
  }
  if (r->t > 0) push_rate(r, r->c / r->t, r->f / r->t * 1e-9);
  r->t = r->c = r->f = 0;
}

void sf_ratelog_free(sf_ratelog *r)
{
  free(r->rates);
  free(r->gflops);
  for (size_t i = 0; i < r->nmetrics; i++) free(r->metric_keys[i]);
  free(r->metric_keys);
  free(r->metric_vals);
  memset(r, 0, sizeof *r);
}

double sf_steady(const double *rates, size_t m)
{
  /* Python rates[-20:-2]: start = max(0, m-20), stop = m-2 (exclusive), empty when stop <= start. */
  long start = (long)m - 20, stop = (long)m - 2;
  if (start < 0) start = 0;
  if (stop <= start) return NAN;
  double s = 0;
  for (long i = start; i < stop; i++) s += rates[i];
  return s / (double)(stop - start);
}
