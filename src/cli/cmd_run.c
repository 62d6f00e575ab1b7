/* `scaffold run -o OUT [--experiment-name N] [--job-id J] [--extra JSON] [--dry-run] -- ARGS...`:
 * runs one job, `scaffold benchmark ARGS --out OUT --experiment-name N --job-id J --extra JSON`,
 * as a child in its own process group. If the child dies abnormally (signal, or an exit without a
 * result file), the launcher writes the FAIL result itself, with the cause and the tail of the
 * child's stderr (closing milarun's gap, spec milabench.md §2). SIGINT/SIGTERM stop the child's
 * whole process group. SF_RUN_BENCHMARK_EXE replaces `scaffold benchmark` (used by the tests). */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scaffold/bench.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/shell.h"
#include "scaffold/switches.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: scaffold run -o OUT [--experiment-name N] [--job-id J] [--extra JSON] [--dry-run]\n"
             "                    -- <scaffold benchmark arguments...>\n"
             "OUT is a results directory, or a .json file to write exactly.\n");
}

typedef struct {
  char **v;
  size_t n;
} names;

/* Result files in dir whose names start with prefix. */
static names list_results(const char *dir, const char *prefix)
{
  names r = {NULL, 0};
  DIR *d = opendir(dir);
  if (!d) return r;
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t ln = strlen(e->d_name);
    if (strncmp(e->d_name, prefix, strlen(prefix)) || ln < 5 || strcmp(e->d_name + ln - 5, ".json")) continue;
    if (r.n == cap) {
      cap = cap ? 2 * cap : 16;
      char **nv = sf_malloc(cap * sizeof *nv, "names");
      if (r.n) memcpy(nv, r.v, r.n * sizeof *nv);
      free(r.v);
      r.v = nv;
    }
    r.v[r.n++] = sf_strdup(e->d_name);
  }
  closedir(d);
  return r;
}

static int in_names(const names *s, const char *n)
{
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->v[i], n)) return 1;
  return 0;
}

static void free_names(names *s)
{
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
}

/* Did the child write its result? New files named <name>.J<job>. (or <name>. without a job id)
 * whose job_id matches. For an exact .json path: the file changed after `start`. */
static int result_written(const char *out, const char *name, const char *job, const names *before, double start)
{
  size_t lo = strlen(out);
  if (lo > 5 && !strcmp(out + lo - 5, ".json")) {
    struct stat st;
    return stat(out, &st) == 0 && (double)st.st_mtime + st.st_mtim.tv_nsec * 1e-9 >= start - 1.0;
  }
  size_t np = strlen(name) + (job ? strlen(job) : 0) + 8;
  char *prefix = sf_malloc(np, "prefix");
  snprintf(prefix, np, "%s.%s%s%s", name, job ? "J" : "", job ? job : "", job ? "." : "");
  names now = list_results(out, prefix);
  int found = 0;
  for (size_t i = 0; i < now.n && !found; i++) {
    if (in_names(before, now.v[i])) continue;
    char *path = sf_path_join(out, now.v[i]), *err = NULL;
    cJSON *j = sf_json_load(path, &err);
    if (j) {
      const cJSON *jid = cJSON_GetObjectItemCaseSensitive(j, "job_id");
      found = job ? (cJSON_IsString(jid) && !strcmp(jid->valuestring, job)) : !cJSON_IsString(jid);
      cJSON_Delete(j);
    }
    free(err);
    free(path);
  }
  free_names(&now);
  free(prefix);
  return found;
}

static char *self_exe(void)
{
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return sf_strdup("/proc/self/exe");
  buf[n] = '\0';
  return sf_strdup(buf);
}

/* What the command line asks for besides the benchmark options. */
typedef struct {
  int dry;                /* --dry-run */
  int first_arg;          /* the benchmark's arguments start here */
  const char *extra_text; /* --extra, passed on */
} run_args;

/* The command line into bo and args; returns 1 when it asked for help (printed). */
static int parse_args(sf_bench_opts *bo, run_args *args, int argc, char **argv)
{
  args->first_arg = argc;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      args->first_arg = i + 1;
      break;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 1;
    }
    if (!strcmp(a, "--dry-run")) {
      args->dry = 1;
      continue;
    }
    if (!strcmp(a, "-o")) {
      if (i + 1 >= argc) sf_die(SF_EXIT_USAGE, "run: -o expects a directory or a .json path");
      free(bo->out);
      bo->out = sf_strdup(argv[++i]);
      continue;
    }
    if (!strncmp(a, "--extra", 7) && (a[7] == '\0' || a[7] == '='))
      args->extra_text = a[7] ? a + 8 : (i + 1 < argc ? argv[i + 1] : NULL);
    int used = strncmp(a, "--max-count", 11) && strncmp(a, "--max-time", 10) && strncmp(a, "--sample-duration", 17) &&
                       strcmp(a, "--datagen-only")
                   ? sf_bench_opts_parse(bo, argc, argv, i)
                   : 0;
    if (used) {
      i += used - 1;
      continue;
    }
    if (a[0] == '-') {
      usage(stderr);
      sf_die(SF_EXIT_USAGE, "run: unknown option '%s' (benchmark arguments go after '--')", a);
    }
    args->first_arg = i; /* no "--": the benchmark arguments start at the first non-option */
    break;
  }
  if (!bo->out) {
    usage(stderr);
    sf_die(SF_EXIT_USAGE, "run: missing -o OUT (the results directory)");
  }
  if (!bo->experiment_name) bo->experiment_name = sf_strdup("scaffold.benchmark");
  return 0;
}

/* The child's argv (malloc'ed, NULL-terminated, *n entries): exe (`benchmark` unless
 * SF_RUN_BENCHMARK_EXE names another program), the benchmark's arguments, then the result options. */
static char **child_argv(char *exe, int exe_from_env, const sf_bench_opts *bo, const run_args *args, int argc,
                         char **argv, size_t *n)
{
  char **cargv = sf_calloc((size_t)(argc - args->first_arg) + 16, sizeof *cargv, "argv");
  size_t k = 0;
  cargv[k++] = exe;
  if (!exe_from_env) cargv[k++] = "benchmark";
  for (int i = args->first_arg; i < argc; i++) cargv[k++] = argv[i];
  cargv[k++] = "--out";
  cargv[k++] = bo->out;
  cargv[k++] = "--experiment-name";
  cargv[k++] = bo->experiment_name;
  if (bo->job_id) cargv[k++] = "--job-id", cargv[k++] = bo->job_id;
  if (args->extra_text) cargv[k++] = "--extra", cargv[k++] = (char *)args->extra_text;
  cargv[k] = NULL;
  *n = k;
  return cargv;
}

static void print_command(char **cargv, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    char *q = sf_shell_quote(cargv[i]);
    printf("%s%s", i ? " " : "", q);
    free(q);
  }
  printf("\n");
}

/* After the child: nothing when it was interrupted (not a benchmark failure, so no FAIL record, as
 * milarun) or wrote a result, else the FAIL record `fail` with the tail of its stderr. Frees fail;
 * returns the exit status of `run`. */
static int record_outcome(sf_result *fail, const sf_proc *p, int written)
{
  int sig = sf_launch_interrupted(), rc;
  char how[256];
  sf_describe_status(p->status, how, sizeof how);
  if (WIFEXITED(p->status)) rc = WEXITSTATUS(p->status);
  else rc = 128 + (WIFSIGNALED(p->status) ? WTERMSIG(p->status) : 0);
  if (sig) {
    fprintf(stderr, "scaffold: run: interrupted by signal %d (%s); stopped the benchmark's process group%s\n", sig,
            strsignal(sig), written ? "" : "; no result recorded");
    rc = SF_EXIT_INTERRUPTED;
  } else if (!written) {
    char *path = NULL;
    const char *tail = p->tail;
    if (p->tail_len == sizeof p->tail - 1) { /* start the tail at a line boundary */
      const char *nl = strchr(tail, '\n');
      if (nl) tail = nl + 1;
    }
    sf_result_fail(fail, "the benchmark %s without writing a result%s%s", how,
                   *tail ? "\n--- last lines of its stderr ---\n" : "", tail);
    sf_result_set_number(fail, "peak_rss_mib", p->maxrss_mib);
    if (sf_result_write(fail, &path) == 0 && path)
      fprintf(stderr, "scaffold: run: the benchmark %s without writing a result; recorded %s\n", how, path);
    free(path);
    if (rc == 0) rc = SF_EXIT_FAILURE;
  }
  sf_result_free(fail);
  return rc;
}

int sf_cmd_run(int argc, char **argv)
{
  sf_bench_opts bo;
  sf_bench_opts_init(&bo);
  run_args args = {0};
  if (parse_args(&bo, &args, argc, argv)) return 0;
  const char *exe_env = sf_switch("SF_RUN_BENCHMARK_EXE");
  const int exe_from_env = exe_env && *exe_env;
  char *exe = exe_from_env ? sf_strdup(exe_env) : self_exe();
  size_t nargs = (size_t)(argc - args.first_arg), ncargs;
  char **cargv = child_argv(exe, exe_from_env, &bo, &args, argc, argv, &ncargs);
  if (args.dry) {
    print_command(cargv, ncargs);
    free(cargv);
    free(exe);
    sf_bench_opts_free(&bo);
    return 0;
  }

  size_t lo = strlen(bo.out);
  int exact = lo > 5 && !strcmp(bo.out + lo - 5, ".json");
  if (!exact && sf_mkdir_p(bo.out) != 0) sf_die(SF_EXIT_FAILURE, "run: cannot create %s: %s", bo.out, strerror(errno));
  size_t np = strlen(bo.experiment_name) + 2;
  char *prefix = sf_malloc(np, "prefix");
  snprintf(prefix, np, "%s.", bo.experiment_name);
  names before = exact ? (names){NULL, 0} : list_results(bo.out, prefix);

  /* The failure record is prepared before the launch, so its program timer covers the child. */
  char **fargv = sf_calloc(nargs + 2, sizeof *fargv, "argv");
  fargv[0] = "benchmark";
  for (size_t i = 0; i < nargs; i++) fargv[i + 1] = argv[args.first_arg + (int)i];
  sf_result *fail = sf_result_begin(&bo, (int)nargs + 1, fargv);
  double start = sf_epoch_now();

  sf_launch_signals_install();
  sf_proc p;
  sf_spawn_opts so = {.argv = cargv, .pipe_stderr = 1};
  if (sf_spawn(&p, &so) != 0) {
    sf_result_fail(fail, "the launcher could not start %s: %s", exe, strerror(errno));
    sf_result_write(fail, NULL);
    sf_die(SF_EXIT_FAILURE, "run: cannot start %s: %s", exe, strerror(errno));
  }
  sf_wait_procs(&p, 1);
  int rc = record_outcome(fail, &p, result_written(bo.out, bo.experiment_name, bo.job_id, &before, start));
  free_names(&before);
  free(prefix);
  free(fargv);
  free(cargv);
  free(exe);
  sf_bench_opts_free(&bo);
  return rc;
}
