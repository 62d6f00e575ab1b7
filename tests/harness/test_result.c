/* The result JSON writer (sf_result) and the benchmark's harness options (sf_bench_opts): file
 * naming incl. FAIL and exact .json paths, the recorded fields (call.argv without the identity
 * options, --extra merged, environment subset, timings, peak RSS, convergence), 4-space
 * indentation, no temporary file left behind, the exit hook's FAIL record, and option errors. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scaffold/bench.h"
#include "scaffold/fsutil.h"
#include "testutil.h"

/* The one file in dir whose name contains `part` (NULL if none or several). */
static char *find_file(const char *dir, const char *part, int *count)
{
  DIR *d = opendir(dir);
  char *found = NULL;
  *count = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.' && strncmp(e->d_name, ".tmp-", 5)) continue;
    if (strstr(e->d_name, part)) {
      (*count)++;
      free(found);
      found = strdup(e->d_name);
    }
  }
  if (d) closedir(d);
  return found;
}

static int is_digits(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

/* <prefix><8 digits>-<6>-<6>.json */
static int stamp_ok(const char *name, const char *prefix)
{
  size_t lp = strlen(prefix);
  if (strncmp(name, prefix, lp)) return 0;
  const char *t = name + lp;
  return strlen(t) == 27 && is_digits(t, 8) && t[8] == '-' && is_digits(t + 9, 6) && t[15] == '-' &&
         is_digits(t + 16, 6) && !strcmp(t + 22, ".json");
}

static int child_status(void (*fn)(void *), void *arg)
{
  fflush(stdout);
  fflush(stderr);
  pid_t p = fork();
  if (p == 0) {
    fn(arg);
    _exit(0);
  }
  int st;
  waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void parse_one(void *arg)
{
  char **argv = arg;
  sf_bench_opts o;
  sf_bench_opts_init(&o);
  sf_bench_opts_parse(&o, 3, argv, 1);
}

static void hook_child(void *arg)
{
  sf_bench_opts o;
  sf_bench_opts_init(&o);
  o.out = strdup(arg);
  o.experiment_name = strdup("s.hook");
  o.job_id = strdup("0.0");
  char *argv[] = {"benchmark", "--fake", NULL};
  sf_result_begin(&o, 2, argv);
  exit(3); /* e.g. sf_die: the exit hook must record a FAIL result */
}

int main(void)
{
  /* ---- names ---- */
  double when = 1592424930.123456; /* 2020-06-17 20:15:30.123456 UTC */
  char *n1 = sf_result_filename("standard.vae", "0.3", 1, when);
  char *n2 = sf_result_filename("standard.vae", "2.5", 0, when);
  char *n3 = sf_result_filename("standard.vae", NULL, 1, when);
  SF_CHECK(!strcmp(n1, "standard.vae.J0.3.20200617-201530-123456.json"), "name: got %s", n1);
  SF_CHECK(!strcmp(n2, "standard.vae.J2.5.FAIL.20200617-201530-123456.json"), "FAIL name: got %s", n2);
  SF_CHECK(!strcmp(n3, "standard.vae.20200617-201530-123456.json"), "no job id: got %s", n3);
  free(n1), free(n2), free(n3);

  /* ---- options ---- */
  char *tmp = sf_test_tmpdir("result");
  char out[512];
  snprintf(out, sizeof out, "%s/res", tmp);
  char *argv[] = {"benchmark", "-c", "x.yml", "--max-count", "32", "--out", out, "--experiment-name", "s.t",
                  "--job-id=1.2", "--extra", "{\"device\": 2, \"devices\": [2], \"job\": {\"x\": 1}}", "--set", "a=b",
                  "--sample-duration", "0.25", NULL};
  int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
  sf_bench_opts o;
  sf_bench_opts_init(&o);
  int consumed = 0;
  for (int i = 1; i < argc; i++) {
    int u = sf_bench_opts_parse(&o, argc, argv, i);
    if (u) consumed += u, i += u - 1;
  }
  SF_CHECK(consumed == 11, "harness options consumed: got %d arguments, want 11", consumed);
  SF_CHECK(o.max_count == 32 && o.sample_duration == 0.25, "max_count %lld sample_duration %g", o.max_count,
           o.sample_duration);
  SF_CHECK(o.job_id && !strcmp(o.job_id, "1.2"), "--job-id=1.2 form: got %s", o.job_id ? o.job_id : "(null)");
  char *bad1[] = {"benchmark", "--max-count", "0", NULL}, *bad2[] = {"benchmark", "--extra", "{oops", NULL};
  char *bad3[] = {"benchmark", "--extra", "[1,2]", NULL};
  int st = child_status(parse_one, bad1);
  SF_CHECK(st == 2, "--max-count 0 must exit 2, got %d", st);
  st = child_status(parse_one, bad2);
  SF_CHECK(st == 2, "--extra with invalid JSON must exit 2, got %d", st);
  st = child_status(parse_one, bad3);
  SF_CHECK(st == 2, "--extra that is not an object must exit 2, got %d", st);
  char *bad4[] = {"benchmark", "--max-time", "0", NULL}, *bad5[] = {"benchmark", "--max-time=soon", NULL};
  st = child_status(parse_one, bad4);
  SF_CHECK(st == 2, "--max-time 0 must exit 2, got %d", st);
  st = child_status(parse_one, bad5);
  SF_CHECK(st == 2, "--max-time=soon must exit 2, got %d", st);
  {
    char *mt[] = {"benchmark", "--max-time=2.5", NULL};
    sf_bench_opts m;
    sf_bench_opts_init(&m);
    int u = sf_bench_opts_parse(&m, 2, mt, 1);
    SF_CHECK(u == 1 && m.max_time == 2.5 && m.max_count == -1, "--max-time=2.5: consumed %d, max_time %g, max_count %lld",
             u, m.max_time, m.max_count);
    sf_bench_opts_free(&m);
  }

  /* ---- a successful result ---- */
  setenv("STARPU_SCHED", "dmda", 1);
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("SF_FOO", "bar", 1);              /* not a switch of the product */
  setenv("SF_CPU_ISA", "c", 1);             /* a replayable switch */
  setenv("SF_RUN_BENCHMARK_EXE", "/bin/true", 1); /* a test hook */
  setenv("STARPU_HOME", "/tmp", 1);         /* a StarPU path */
  setenv("OMP_TOOL_LIBRARIES", "x.so", 1);  /* loads a library */
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  setenv("NOT_RECORDED", "x", 1);
  sf_result *r = sf_result_begin(&o, argc, argv);
  sf_result_set_runtime(r, "dmda", "2 CPU");
  sf_ratelog log;
  sf_ratelog_init(&log, o.sample_duration, o.max_count);
  while (!sf_ratelog_done(&log)) {
    sf_ratelog_elapse(&log, 0.125, 2, 3e9);
    sf_ratelog_log(&log, "loss", 0.125);
  }
  sf_result_set_rates(r, "train", &log);
  sf_result_set_convergence(r, 12.5, 3);
  char *path = NULL;
  SF_CHECK(sf_result_write(r, &path) == 0 && path, "sf_result_write failed");
  sf_result_free(r);
  sf_ratelog_free(&log);
  int count = 0;
  char *fn = find_file(out, "s.t.", &count);
  SF_CHECK(count == 1 && fn && stamp_ok(fn, "s.t.J1.2."), "result file: got %d files, name %s", count,
           fn ? fn : "(none)");
  char *tmpf = find_file(out, ".tmp-", &count);
  SF_CHECK(count == 0, "a temporary file was left: %s", tmpf ? tmpf : "");
  free(tmpf);
  size_t len = 0;
  char *text = path ? sf_read_file(path, &len) : NULL;
  const char *head = "{\n    \"name\": \"s.t\",\n    \"job_id\": \"1.2\",\n";
  SF_CHECK(text && !strncmp(text, head, strlen(head)),
           "4-space indentation / field order; file starts with:\n%.120s", text ? text : "");
  cJSON *j = text ? cJSON_Parse(text) : NULL;
  SF_CHECK(j != NULL, "the result does not parse as JSON");
  if (j) {
    cJSON *call = cJSON_GetObjectItem(j, "call"), *av = cJSON_GetObjectItem(call, "argv");
    const char *want_av[] = {"-c", "x.yml", "--max-count", "32", "--set", "a=b", "--sample-duration", "0.25"};
    SF_CHECK(cJSON_GetArraySize(av) == 8, "call.argv: got %d entries, want 8 (identity options left out)",
             cJSON_GetArraySize(av));
    for (int i = 0; i < 8 && i < cJSON_GetArraySize(av); i++)
      SF_CHECK(!strcmp(cJSON_GetArrayItem(av, i)->valuestring, want_av[i]), "call.argv[%d]: got %s, want %s", i,
               cJSON_GetArrayItem(av, i)->valuestring, want_av[i]);
    SF_CHECK(!strcmp(cJSON_GetObjectItem(call, "function")->valuestring, "scaffold benchmark"), "call.function");
    const cJSON *commit = cJSON_GetObjectItem(j, "commit");
    SF_CHECK(cJSON_IsString(commit) && commit->valuestring[0] &&
                 (!strcmp(commit->valuestring, "no-commit-id") ||
                  strspn(commit->valuestring, "0123456789abcdef") == strlen(commit->valuestring)),
             "commit: want the build's short hash (or no-commit-id), got %s",
             cJSON_IsString(commit) ? commit->valuestring : "(not a string)");
    SF_CHECK(cJSON_GetObjectItem(j, "device")->valuedouble == 2, "device from --extra");
    SF_CHECK(cJSON_GetObjectItem(j, "device_count")->valuedouble == 1, "device_count = len(devices)");
    SF_CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "job"), "x")->valuedouble == 1, "job from --extra");
    SF_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "success")) && cJSON_IsNull(cJSON_GetObjectItem(j, "error")),
             "success true, error null");
    cJSON *env = cJSON_GetObjectItem(j, "environ");
    SF_CHECK(cJSON_GetObjectItem(env, "STARPU_SCHED") && cJSON_GetObjectItem(env, "OMP_NUM_THREADS") &&
                 cJSON_GetObjectItem(env, "SF_CPU_ISA") && cJSON_GetObjectItem(env, "CUDA_VISIBLE_DEVICES"),
             "environ must hold the replayable STARPU_*, OMP_*, SF_* switches and CUDA_VISIBLE_DEVICES");
    SF_CHECK(!cJSON_GetObjectItem(env, "NOT_RECORDED") && !cJSON_GetObjectItem(env, "HOME"),
             "environ must be a subset");
    static const char *const never[] = {"SF_FOO", "SF_RUN_BENCHMARK_EXE", "STARPU_HOME", "OMP_TOOL_LIBRARIES"};
    for (int i = 0; i < 4; i++)
      SF_CHECK(!cJSON_GetObjectItem(env, never[i]), "environ records %s, which rerun may not apply", never[i]);
    SF_CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metrics"), "loss")->valuedouble == 0.125, "metrics.loss");
    cJSON *tr = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "timings"), "train");
    /* 16 steps of 0.125 s, 2 samples, 3 GFLOP each, 0.25 s slices: 8 slices of 16/s and 24 GFLOP/s. */
    SF_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(tr, "rates")) == 8, "train.rates: got %d slices, want 8",
             cJSON_GetArraySize(cJSON_GetObjectItem(tr, "rates")));
    double r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(tr, "rates"), 0)->valuedouble;
    double g0 = cJSON_GetArrayItem(cJSON_GetObjectItem(tr, "gflops_rates"), 0)->valuedouble;
    SF_CHECK(fabs(r0 - 16) < 1e-9 && fabs(g0 - 24) < 1e-9, "first slice: %g samples/s (want 16), %g GFLOP/s (want 24)",
             r0, g0);
    SF_CHECK(fabs(cJSON_GetObjectItem(tr, "time")->valuedouble - 2.0) < 1e-9, "train.time: want 2.0");
    SF_CHECK(cJSON_GetObjectItem(tr, "start") && cJSON_GetObjectItem(tr, "wall_time") &&
                 cJSON_GetObjectItem(tr, "overhead") && cJSON_GetObjectItem(tr, "sample_duration"),
             "train timing fields");
    SF_CHECK(!cJSON_GetObjectItem(tr, "steady_note"), "8 slices: steady_rate has a value, no steady_note");
    cJSON *prog = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "timings"), "program");
    SF_CHECK(prog && cJSON_GetObjectItem(prog, "time")->valuedouble >= 0, "timings.program.time");
    SF_CHECK(cJSON_GetObjectItem(j, "peak_rss_mib")->valuedouble > 0, "peak_rss_mib must be > 0");
    SF_CHECK(cJSON_GetObjectItem(j, "time_to_solution")->valuedouble == 12.5 &&
                 cJSON_GetObjectItem(j, "epochs")->valuedouble == 3,
             "convergence fields");
    SF_CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "machine"), "cores")->valuedouble >= 1, "machine.cores");
    SF_CHECK(!strcmp(cJSON_GetObjectItem(j, "scheduler")->valuestring, "dmda"), "scheduler string");
    cJSON_Delete(j);
  }
  free(text);
  free(path);
  free(fn);

  /* ---- a failed result, and an exact .json path ---- */
  char exact[600];
  snprintf(exact, sizeof exact, "%s/sub/exact.json", tmp);
  free(o.out);
  o.out = strdup(exact);
  r = sf_result_begin(&o, argc, argv);
  sf_result_fail(r, "diverged at step %d", 7);
  SF_CHECK(sf_result_write(r, NULL) == 0, "write to an exact path");
  sf_result_free(r);
  text = sf_read_file(exact, &len);
  SF_CHECK(text && strstr(text, "\"success\": false") && strstr(text, "\"error\": \"diverged at step 7\""),
           "FAIL record at the exact path; got:\n%.300s", text ? text : "(missing)");
  free(text);
  free(o.out);
  o.out = strdup(out);
  r = sf_result_begin(&o, argc, argv);
  sf_result_fail(r, "boom");
  sf_result_write(r, NULL);
  sf_result_free(r);
  fn = find_file(out, ".FAIL.", &count);
  SF_CHECK(count == 1 && fn && stamp_ok(fn, "s.t.J1.2.FAIL."), "FAIL file name: %s", fn ? fn : "(none)");
  free(fn);

  /* ---- the exit hook ---- */
  char hook_dir[600];
  snprintf(hook_dir, sizeof hook_dir, "%s/hook", tmp);
  st = child_status(hook_child, hook_dir);
  SF_CHECK(st == 3, "the hook child must keep its exit status 3, got %d", st);
  fn = find_file(hook_dir, "s.hook.J0.0.FAIL.", &count);
  SF_CHECK(count == 1, "the exit hook must write one FAIL record, found %d", count);
  if (fn) {
    char *p = sf_path_join(hook_dir, fn);
    text = sf_read_file(p, &len);
    SF_CHECK(text && strstr(text, "exited with status 3"), "hook error text; got:\n%.400s", text ? text : "");
    free(text);
    free(p);
    free(fn);
  }

  /* ---- identity options ---- */
  int na = 0;
  char *ia[] = {"benchmark", "--out", "d", "--extra={}", "--max-count", "3", NULL};
  SF_CHECK(sf_bench_opt_is_identity(6, ia, 1, &na) && na == 2, "--out d is identity (2 args), got %d", na);
  SF_CHECK(sf_bench_opt_is_identity(6, ia, 3, &na) && na == 1, "--extra={} is identity (1 arg)");
  SF_CHECK(!sf_bench_opt_is_identity(6, ia, 4, &na), "--max-count is a test option, not identity");

  sf_bench_opts_free(&o);
  sf_rm_rf(tmp);
  free(tmp);
  return sf_test_end();
}
