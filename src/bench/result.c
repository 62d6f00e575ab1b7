/* The result JSON of one benchmark run (spec milabench.md §3): identity (name, job_id, the
 * --extra job definition, the commit of the build), call {function, argv}, success/error, machine and StarPU description,
 * environment subset, metrics, timings {program, train, ...}, peak RSS, convergence figures.
 * Written once, atomically, as <name>[.J<job>][.FAIL].<UTC ts>.json; an exit hook writes a FAIL
 * record if the process exits before that. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <sf_perfmodel_ids.h> /* SF_PMID_ALL, generated (cmake/PerfmodelIds.cmake) */
#include <sf_git_commit.h> /* SF_GIT_COMMIT, generated in <build>/generated (cmake/GitCommit.cmake) */

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

extern char **environ;

struct sf_result {
  cJSON *root, *metrics, *timings, *environ;
  char *out, *name, *job_id, *error;
  int success, written;
  double start, start_mono;
  pid_t pid;
};

static sf_result *g_pending; /* the result the exit hook writes if the process exits early */

/* "NAME=VALUE" is recorded when `scaffold rerun` may apply it again (src/bench/environ_policy.c). */
static int env_recorded(const char *kv)
{
  const char *eq = strchr(kv, '=');
  char name[256], why[512];
  if (!eq || (size_t)(eq - kv) >= sizeof name) return 0;
  memcpy(name, kv, (size_t)(eq - kv));
  name[eq - kv] = '\0';
  return sf_environ_replayable(name, eq + 1, why, sizeof why);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static cJSON *environ_subset(void)
{
  size_t n = 0;
  for (char **e = environ; e && *e; e++) n++;
  char **keep = sf_calloc(n + 1, sizeof *keep, "environment");
  size_t k = 0;
  for (char **e = environ; e && *e; e++)
    if (env_recorded(*e) && strchr(*e, '=')) keep[k++] = *e;
  qsort(keep, k, sizeof *keep, cmp_str);
  cJSON *j = cJSON_CreateObject();
  for (size_t i = 0; i < k; i++) {
    const char *eq = strchr(keep[i], '=');
    char *key = sf_strdup(keep[i]);
    key[eq - keep[i]] = '\0';
    cJSON_AddStringToObject(j, key, eq + 1);
    free(key);
  }
  free(keep);
  return j;
}

static void exit_hook(int status, void *arg)
{
  (void)arg;
  sf_result *r = g_pending;
  if (!r || r->written || getpid() != r->pid) return;
  if (r->success) {
    if (status == 0) sf_result_fail(r, "the benchmark exited (status 0) without writing its result");
    else sf_result_fail(r, "the benchmark exited with status %d before writing its result (see its stderr)", status);
  }
  sf_result_write(r, NULL);
  sf_result_free(r); /* the process is exiting: nobody uses r after this */
}

sf_result *sf_result_begin(const sf_bench_opts *o, int argc, char **argv)
{
  static int hook_installed;
  sf_result *r = sf_calloc(1, sizeof *r, "result");
  r->start = sf_epoch_now();
  r->start_mono = sf_now();
  r->success = 1;
  r->pid = getpid();
  r->name = sf_strdup(o->experiment_name ? o->experiment_name : "scaffold.benchmark");
  r->job_id = o->job_id ? sf_strdup(o->job_id) : NULL;
  r->out = o->out ? sf_strdup(o->out) : NULL;
  r->root = cJSON_CreateObject();
  r->metrics = cJSON_CreateObject();
  r->timings = cJSON_CreateObject();
  cJSON_AddStringToObject(r->root, "name", r->name);
  if (r->job_id) cJSON_AddStringToObject(r->root, "job_id", r->job_id);
  else cJSON_AddNullToObject(r->root, "job_id");
  if (r->out) cJSON_AddStringToObject(r->root, "outdir", r->out);
  else cJSON_AddNullToObject(r->root, "outdir");
  /* The code it was measured with: the git commit of this build (short hash), so that a baseline
   * carries its identity and `report --compare` can say when it came from other code. */
  cJSON_AddStringToObject(r->root, "commit", SF_GIT_COMMIT[0] ? SF_GIT_COMMIT : "no-commit-id");
  /* ... and the identity of its kernels, family by family (the hashes the perfmodel symbols carry), which
   * also changes with uncommitted edits */
  cJSON_AddStringToObject(r->root, "kernel_identity", SF_PMID_ALL);
  if (o->extra)
    for (cJSON *e = o->extra->child; e; e = e->next) {
      if (!e->string || cJSON_HasObjectItem(r->root, e->string)) continue;
      cJSON_AddItemToObject(r->root, e->string, cJSON_Duplicate(e, 1));
    }
  cJSON *call = cJSON_AddObjectToObject(r->root, "call");
  cJSON_AddStringToObject(call, "function", "scaffold benchmark");
  cJSON *av = cJSON_AddArrayToObject(call, "argv");
  for (int i = 1; i < argc; i++) {
    int skip = 0;
    if (sf_bench_opt_is_identity(argc, argv, i, &skip)) {
      i += skip - 1;
      continue;
    }
    cJSON_AddItemToArray(av, cJSON_CreateString(argv[i]));
  }
  r->environ = environ_subset();
  g_pending = r;
  if (!hook_installed) {
    hook_installed = 1;
    on_exit(exit_hook, NULL);
  }
  return r;
}

cJSON *sf_result_json(sf_result *r) { return r->root; }

static void replace(cJSON *obj, const char *key, cJSON *item)
{
  if (cJSON_HasObjectItem(obj, key)) cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
  else cJSON_AddItemToObject(obj, key, item);
}

void sf_result_set_runtime(sf_result *r, const char *scheduler, const char *workers)
{
  replace(r->root, "scheduler", cJSON_CreateString(scheduler ? scheduler : ""));
  replace(r->root, "workers", cJSON_CreateString(workers ? workers : ""));
}

void sf_result_set_metric(sf_result *r, const char *key, double value)
{
  replace(r->metrics, key, cJSON_CreateNumber(value));
}

void sf_result_set_number(sf_result *r, const char *key, double value)
{
  replace(r->root, key, cJSON_CreateNumber(value));
}

void sf_result_set_string(sf_result *r, const char *key, const char *value)
{
  replace(r->root, key, value ? cJSON_CreateString(value) : cJSON_CreateNull());
}

void sf_result_set_convergence(sf_result *r, double time_to_solution, long epochs)
{
  replace(r->root, "time_to_solution", cJSON_CreateNumber(time_to_solution));
  replace(r->root, "epochs", cJSON_CreateNumber((double)epochs));
}

void sf_result_fail(sf_result *r, const char *fmt, ...)
{
  char buf[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  free(r->error);
  r->error = sf_strdup(buf);
  r->success = 0;
}

void sf_result_set_rates(sf_result *r, const char *key, sf_ratelog *log)
{
  char ts[40];
  sf_ratelog_finish(log);
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "type", "ratelog");
  sf_format_local_time(log->started ? log->start : sf_epoch_now(), ts, sizeof ts);
  cJSON_AddStringToObject(t, "start", ts);
  sf_format_local_time(log->started ? log->end : sf_epoch_now(), ts, sizeof ts);
  cJSON_AddStringToObject(t, "end", ts);
  double wall = log->started ? log->end - log->start : 0;
  cJSON_AddNumberToObject(t, "wall_time", wall);
  cJSON_AddNumberToObject(t, "time", log->total_time);
  cJSON_AddNumberToObject(t, "overhead", wall - log->total_time);
  cJSON_AddNumberToObject(t, "sample_duration", log->sample_duration);
  cJSON_AddNumberToObject(t, "count", log->total_count);
  cJSON_AddNumberToObject(t, "gflop", log->total_flops * 1e-9);
  cJSON_AddNumberToObject(t, "steady_rate", sf_steady(log->rates, log->n));
  cJSON_AddNumberToObject(t, "steady_gflops", sf_steady(log->gflops, log->n));
  if (log->n < SF_STEADY_MIN_SLICES) { /* steady_rate is null: say why, and what to do */
    char note[256];
    snprintf(note, sizeof note, "too few samples (%zu < %d): %s", log->n, SF_STEADY_MIN_SLICES, SF_TOO_FEW_FIX);
    cJSON_AddStringToObject(t, "steady_note", note);
  }
  cJSON *rates = cJSON_AddArrayToObject(t, "rates"), *gf = cJSON_AddArrayToObject(t, "gflops_rates");
  for (size_t i = 0; i < log->n; i++) {
    cJSON_AddItemToArray(rates, cJSON_CreateNumber(log->rates[i]));
    cJSON_AddItemToArray(gf, cJSON_CreateNumber(log->gflops[i]));
  }
  cJSON *m = cJSON_AddObjectToObject(t, "metrics");
  for (size_t i = 0; i < log->nmetrics; i++) {
    cJSON_AddNumberToObject(m, log->metric_keys[i], log->metric_vals[i]);
    sf_result_set_metric(r, log->metric_keys[i], log->metric_vals[i]);
  }
  replace(r->timings, key, t);
}

int sf_result_write(sf_result *r, char **path_out)
{
  if (path_out) *path_out = NULL;
  if (r->written) return 0;
  r->written = 1;
  if (g_pending == r) g_pending = NULL;
  double end = sf_epoch_now(), elapsed = sf_now() - r->start_mono;
  char ts[40], host[256] = "";

  cJSON *o = r->root;
  replace(o, "success", cJSON_CreateBool(r->success));
  replace(o, "error", r->error ? cJSON_CreateString(r->error) : cJSON_CreateNull());
  gethostname(host, sizeof host - 1);
  replace(o, "hostname", cJSON_CreateString(host));
  replace(o, "machine", sf_machine_json());
  cJSON *devs = cJSON_GetObjectItemCaseSensitive(o, "devices");
  if (!cJSON_HasObjectItem(o, "device_count"))
    cJSON_AddNumberToObject(o, "device_count", cJSON_IsArray(devs) ? cJSON_GetArraySize(devs) : 1);
  replace(o, "environ", r->environ);
  r->environ = NULL;
  replace(o, "metrics", r->metrics);
  r->metrics = NULL;
  cJSON *prog = cJSON_CreateObject();
  cJSON_AddStringToObject(prog, "type", "timer");
  sf_format_local_time(r->start, ts, sizeof ts);
  cJSON_AddStringToObject(prog, "start", ts);
  sf_format_local_time(end, ts, sizeof ts);
  cJSON_AddStringToObject(prog, "end", ts);
  cJSON_AddNumberToObject(prog, "time", elapsed);
  /* "program" first, then the rate loggers in the order they were set. */
  cJSON *timings = cJSON_CreateObject();
  cJSON_AddItemToObject(timings, "program", prog);
  while (r->timings->child) {
    cJSON *t = cJSON_DetachItemViaPointer(r->timings, r->timings->child);
    if (!strcmp(t->string, "program")) {
      cJSON_Delete(t);
      continue;
    }
    cJSON_AddItemToObject(timings, t->string, t);
  }
  replace(o, "timings", timings);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if (!cJSON_HasObjectItem(o, "peak_rss_mib")) cJSON_AddNumberToObject(o, "peak_rss_mib", ru.ru_maxrss / 1024.0);

  if (!r->out) return 0;
  char *path;
  size_t lo = strlen(r->out);
  if (lo > 5 && !strcmp(r->out + lo - 5, ".json")) {
    path = sf_strdup(r->out);
    char *slash = strrchr(path, '/');
    if (slash && slash != path) {
      *slash = '\0';
      sf_mkdir_p(path);
      *slash = '/';
    }
  } else {
    if (sf_mkdir_p(r->out) != 0) {
      fprintf(stderr, "scaffold: error: cannot create the result directory %s: %s\n", r->out, strerror(errno));
      return -1;
    }
    char *fn = sf_result_filename(r->name, r->job_id, r->success, end);
    path = sf_path_join(r->out, fn);
    free(fn);
  }
  if (sf_json_write_atomic(path, o) != 0) {
    fprintf(stderr, "scaffold: error: cannot write the result %s: %s\n", path, strerror(errno));
    free(path);
    return -1;
  }
  if (path_out) *path_out = path;
  else free(path);
  return 0;
}

void sf_result_free(sf_result *r)
{
  if (!r) return;
  if (g_pending == r) g_pending = NULL;
  cJSON_Delete(r->root);
  if (r->metrics) cJSON_Delete(r->metrics);
  cJSON_Delete(r->timings);
  if (r->environ) cJSON_Delete(r->environ);
  free(r->out);
  free(r->name);
  free(r->job_id);
  free(r->error);
  free(r);
}
