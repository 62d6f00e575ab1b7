/* `scaffold jobs PROFILE -o OUT [--repeat N] [--name T ...] [--devices N] [--no-cgroup]
 * [--dry-run] [-- overrides]`: runs a profile's suite (spec milabench.md §1, docs/architecture.md §8). The
 * loop is repeat outermost, then the tests in file order. Each run is `scaffold run` (which writes
 * a FAIL record if the benchmark dies). Partitions: per-device = N concurrent copies on disjoint
 * core sets chosen with hwloc (cgroup v2 cpuset when writable, else CPU binding), progression =
 * 1..N workers one after another (groups <name>.<k>), normal = one run on the whole machine. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scaffold/bench.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/shell.h"
#include "scaffold/switches.h"

static void usage(FILE *f)
{
  fprintf(f,
          "usage: scaffold jobs PROFILE -o OUT [--repeat N] [--name T ...] [--devices N] [--no-cgroup]\n"
          "                     [--dry-run] [-- overrides...]\n\n"
          "PROFILE is a file or a suite name (configs/profiles/<name>.yml). Overrides after '--' are\n"
          "appended to every run's benchmark arguments; a bare key=value becomes --set key=value.\n");
}

/* ---- small string vector ------------------------------------------------------------------- */

typedef struct {
  char **v;
  size_t n, cap;
} strv;

static void sv_push(strv *s, const char *x)
{
  if (s->n + 1 >= s->cap) {
    s->cap = s->cap ? 2 * s->cap : 32;
    char **nv = sf_calloc(s->cap, sizeof *nv, "arguments");
    if (s->n) memcpy(nv, s->v, s->n * sizeof *nv);
    free(s->v);
    s->v = nv;
  }
  s->v[s->n++] = sf_strdup(x);
  s->v[s->n] = NULL;
}

static void sv_pushf(strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sv_pushf(strv *s, const char *fmt, ...)
{
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  sv_push(s, buf);
}

static void sv_free(strv *s)
{
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* ---- cgroup v2 ------------------------------------------------------------------------------ */

/* Writes text to an existing control file. Returns 1 on success, 0 with errno set. */
static int write_plain(const char *path, const char *text)
{
  int fd = open(path, O_WRONLY);
  if (fd < 0) return 0;
  ssize_t n = write(fd, text, strlen(text));
  int e = errno;
  close(fd);
  errno = e;
  return n == (ssize_t)strlen(text);
}

/* Creates <own cgroup>/scaffold-jobs-<pid>/dev<d> with cpuset.cpus for each device. Returns the
 * parent directory, or NULL (with *why) when cgroup v2 cpuset is not usable here. */
static char *cgroup_setup(int ndev, char **cpus_lists, char ***dirs, char *why, size_t nwhy)
{
  char *ctl = sf_read_file("/sys/fs/cgroup/cgroup.controllers", NULL);
  if (!ctl) {
    snprintf(why, nwhy, "no cgroup v2 hierarchy at /sys/fs/cgroup");
    return NULL;
  }
  int has_cpuset = strstr(ctl, "cpuset") != NULL;
  free(ctl);
  if (!has_cpuset) {
    snprintf(why, nwhy, "the cpuset controller is not available in /sys/fs/cgroup");
    return NULL;
  }
  char *self = sf_read_file("/proc/self/cgroup", NULL), *rel = NULL;
  for (char *line = self ? strtok(self, "\n") : NULL; line; line = strtok(NULL, "\n"))
    if (!strncmp(line, "0::", 3)) rel = line + 3;
  if (!rel) {
    free(self);
    snprintf(why, nwhy, "this process is not in a cgroup v2 hierarchy");
    return NULL;
  }
  char base[4096], parent[4200], path[4400];
  snprintf(base, sizeof base, "/sys/fs/cgroup%s", strcmp(rel, "/") ? rel : "");
  free(self);
  if (access(base, W_OK) != 0) {
    snprintf(why, nwhy, "%.300s is not writable", base);
    return NULL;
  }
  snprintf(parent, sizeof parent, "%s/scaffold-jobs-%ld", base, (long)getpid());
  if (mkdir(parent, 0755) != 0) {
    snprintf(why, nwhy, "cannot create %.300s: %s", parent, strerror(errno));
    return NULL;
  }
  snprintf(path, sizeof path, "%s/cgroup.subtree_control", base);
  int ok = write_plain(path, "+cpuset");
  snprintf(path, sizeof path, "%s/cgroup.subtree_control", parent);
  if (ok) ok = write_plain(path, "+cpuset");
  if (!ok) {
    snprintf(why, nwhy, "cannot enable the cpuset controller below %.300s: %s", base, strerror(errno));
    rmdir(parent);
    return NULL;
  }
  *dirs = sf_calloc((size_t)ndev + 1, sizeof **dirs, "cgroups");
  for (int d = 0; d < ndev; d++) {
    snprintf(path, sizeof path, "%s/dev%d", parent, d);
    (*dirs)[d] = sf_strdup(path);
    char file[4500];
    snprintf(file, sizeof file, "%s/cpuset.cpus", path);
    if (mkdir(path, 0755) != 0 || !write_plain(file, cpus_lists[d])) {
      snprintf(why, nwhy, "cannot set up %.300s: %s", path, strerror(errno));
      for (int e = 0; e <= d; e++) rmdir((*dirs)[e]), free((*dirs)[e]);
      free(*dirs);
      *dirs = NULL;
      rmdir(parent);
      return NULL;
    }
  }
  return sf_strdup(parent);
}

static void cgroup_teardown(char *parent, char **dirs, int ndev)
{
  if (!parent) return;
  for (int d = 0; d < ndev; d++) {
    if (rmdir(dirs[d]) != 0) sf_warn("could not remove the cgroup %s: %s", dirs[d], strerror(errno));
    free(dirs[d]);
  }
  free(dirs);
  rmdir(parent);
  free(parent);
}

/* ---- the plan ------------------------------------------------------------------------------- */

typedef struct {
  const char *out, *exe;
  const sf_profile *prof;
  strv overrides;           /* user's benchmark arguments after "--" */
  int dry, no_cgroup, devices_cli;
  sf_machine_cores cores;
  int runs, failed;
  double t0;
  long units_done, units_total;
} ctx;

static int mentions_ncpu(const sf_profile_test *t, const strv *ov)
{
  for (size_t i = 0; i < t->nset; i++)
    if (!strncmp(t->set[i], "ncpu=", 5)) return 1;
  for (size_t i = 0; i < t->nargs; i++)
    if (strstr(t->args[i], "ncpu=")) return 1;
  for (size_t i = 0; i < ov->n; i++)
    if (strstr(ov->v[i], "ncpu=")) return 1;
  return 0;
}

static int part_units(const ctx *c, const sf_profile_test *t)
{
  if (t->part != SF_PART_PROGRESSION) return 1;
  int mx = t->max_workers ? t->max_workers : c->cores.ncores;
  if (!t->max_workers && mx > sf_machine_max_cpu_workers()) mx = sf_machine_max_cpu_workers();
  return mx >= t->min_workers ? mx - t->min_workers + 1 : 0;
}

/* The argv of one `scaffold run`. */
static void run_argv(ctx *c, const sf_profile_test *t, const char *job_id, const cJSON *extra, int ncpu_set,
                     strv *av)
{
  char *ex = cJSON_PrintUnformatted(extra);
  sv_push(av, c->exe);
  sv_push(av, "run");
  sv_push(av, "-o");
  sv_push(av, c->out);
  sv_push(av, "--experiment-name");
  sv_pushf(av, "%s.%s", c->prof->suite, t->name);
  sv_push(av, "--job-id");
  sv_push(av, job_id);
  sv_push(av, "--extra");
  sv_push(av, ex);
  sv_push(av, "--");
  if (t->config) sv_push(av, "-c"), sv_push(av, t->config);
  for (size_t i = 0; i < t->nset; i++) sv_push(av, "--set"), sv_push(av, t->set[i]);
  for (size_t i = 0; i < t->nargs; i++) sv_push(av, t->args[i]);
  if (ncpu_set > 0) sv_push(av, "--set"), sv_pushf(av, "ncpu=%d", ncpu_set);
  for (size_t i = 0; i < c->overrides.n; i++) sv_push(av, c->overrides.v[i]);
  free(ex);
}

static void print_cmd(const strv *env, const strv *av)
{
  printf("Running:");
  for (size_t i = 0; i < env->n; i++) {
    const char *eq = strchr(env->v[i], '=');
    char *q = sf_shell_quote(eq + 1);
    printf(" %.*s=%s", (int)(eq - env->v[i]), env->v[i], q);
    free(q);
  }
  printf(" scaffold");
  for (size_t i = 1; i < av->n; i++) {
    char *q = sf_shell_quote(av->v[i]);
    printf(" %s", q);
    free(q);
  }
  printf("\n");
  fflush(stdout);
}

static void cpuid_env(const ctx *c, int first, int count, strv *env, int ncpu)
{
  char buf[4096];
  size_t k = 0;
  buf[0] = '\0';
  for (int i = first; i < first + count && k < sizeof buf - 16; i++)
    k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%d", i > first ? " " : "", c->cores.pu_logical[i]);
  sv_pushf(env, "STARPU_WORKERS_CPUID=%s", buf);
  if (ncpu > 0) sv_pushf(env, "STARPU_NCPU=%d", ncpu);
}

static int *pus_of(const ctx *c, int first, int count)
{
  size_t n = 0;
  for (int i = first; i < first + count; i++)
    for (int *p = c->cores.core_pus_os[i]; *p >= 0; p++) n++;
  int *pus = sf_malloc((n + 1) * sizeof *pus, "PUs"), k = 0;
  for (int i = first; i < first + count; i++)
    for (int *p = c->cores.core_pus_os[i]; *p >= 0; p++) pus[k++] = *p;
  pus[k] = -1;
  return pus;
}

static char *pu_list_string(const int *pus)
{
  char buf[4096];
  size_t k = 0;
  buf[0] = '\0';
  for (const int *p = pus; *p >= 0 && k < sizeof buf - 16; p++)
    k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%d", p > pus ? "," : "", *p);
  return sf_strdup(buf);
}

/* Launches n runs concurrently and waits for them. Returns the number that failed. */
static int launch(ctx *c, size_t n, strv *avs, strv *envs, int **pus, char **cgroups, const char *label)
{
  for (size_t i = 0; i < n; i++) print_cmd(&envs[i], &avs[i]);
  c->runs += (int)n;
  if (c->dry) return 0;
  sf_proc *procs = sf_calloc(n, sizeof *procs, "processes");
  size_t started = 0;
  int failed = 0;
  for (size_t i = 0; i < n; i++) {
    sf_spawn_opts so = {.argv = avs[i].v, .env = envs[i].v, .cpus = pus ? pus[i] : NULL,
                        .cgroup = cgroups ? cgroups[i] : NULL};
    if (sf_spawn(&procs[started], &so) != 0) {
      sf_warn("jobs: cannot start %s: %s", avs[i].v[0], strerror(errno));
      failed++;
      continue;
    }
    started++;
  }
  sf_wait_procs(procs, started);
  for (size_t i = 0; i < started; i++) {
    if (WIFEXITED(procs[i].status) && WEXITSTATUS(procs[i].status) == 0) continue;
    char how[256];
    sf_describe_status(procs[i].status, how, sizeof how);
    if (!sf_launch_interrupted()) printf("[jobs] %s: a run %s\n", label, how);
    failed++;
  }
  free(procs);
  c->failed += failed;
  return failed;
}

static void progress(ctx *c, int rep, int nrep, size_t ti, size_t nt, const sf_profile_test *t, const char *what)
{
  double el = sf_now() - c->t0;
  char eta[64] = "?";
  if (c->units_done > 0) {
    double rem = el / (double)c->units_done * (double)(c->units_total - c->units_done);
    snprintf(eta, sizeof eta, "%.0fs", rem);
  }
  printf("[jobs] repeat %d/%d, test %zu/%zu: %s.%s (%s) - elapsed %.1fs, estimated remaining %s\n", rep + 1, nrep,
         ti + 1, nt, c->prof->suite, t->name, what, el, eta);
  fflush(stdout);
}

/* One job object for a run's record: the test's job, with device >= 0 the device, and with
 * ndevices >= 0 the devices first_device.. (ndevices of them). */
static cJSON *job_extra(const sf_profile_test *t, int device, int ndevices, int first_device)
{
  cJSON *extra = cJSON_CreateObject();
  cJSON_AddItemToObject(extra, "job", cJSON_Duplicate(t->job, 1));
  if (device >= 0) cJSON_AddNumberToObject(extra, "device", device);
  if (ndevices >= 0) {
    cJSON *devs = cJSON_AddArrayToObject(extra, "devices");
    for (int d = 0; d < ndevices; d++) cJSON_AddItemToArray(devs, cJSON_CreateNumber(first_device + d));
  }
  return extra;
}

/* normal: one run on the whole machine. */
static void run_normal(ctx *c, const sf_profile_test *t, int rep, const char *label)
{
  char jid[64];
  strv av = {0}, env = {0};
  cJSON *extra = job_extra(t, -1, -1, 0);
  snprintf(jid, sizeof jid, "%d.0", rep);
  run_argv(c, t, jid, extra, 0, &av);
  launch(c, 1, &av, &env, NULL, NULL, label);
  cJSON_Delete(extra);
  sv_free(&av);
  sv_free(&env);
  c->units_done++;
}

/* progression: 1..N workers one after another, each bound to its first cores (groups label.k). */
static void run_progression(ctx *c, const sf_profile_test *t, int rep, const char *label)
{
  char jid[64];
  int mx = t->max_workers ? t->max_workers : c->cores.ncores;
  if (!t->max_workers && mx > sf_machine_max_cpu_workers()) mx = sf_machine_max_cpu_workers();
  for (int k = t->min_workers; k <= mx && !sf_launch_interrupted(); k++) {
    if (k > c->cores.ncores)
      sf_warn("jobs: %s: %d workers on %d cores (oversubscribed)", label, k, c->cores.ncores);
    strv av = {0}, env = {0};
    cJSON *extra = job_extra(t, -1, k, 0);
    snprintf(jid, sizeof jid, "%d.%d", rep, k - 1);
    int bound = k <= c->cores.ncores ? k : c->cores.ncores;
    cpuid_env(c, 0, bound, &env, k);
    run_argv(c, t, jid, extra, k, &av);
    int *pus = pus_of(c, 0, bound);
    char sub[600];
    snprintf(sub, sizeof sub, "%s.%d", label, k);
    launch(c, 1, &av, &env, &pus, NULL, sub);
    free(pus);
    cJSON_Delete(extra);
    sv_free(&av);
    sv_free(&env);
    c->units_done++;
  }
}

/* The device count of a per-device test: --devices, the test's, else one per package or NUMA node. */
static int per_device_count(const ctx *c, const sf_profile_test *t)
{
  int ndev = c->devices_cli ? c->devices_cli : t->devices;
  if (ndev <= 0) ndev = c->cores.npackages > c->cores.nnuma ? c->cores.npackages : c->cores.nnuma;
  if (c->cores.ncores / ndev < 1)
    sf_die(SF_EXIT_USAGE, "%s:%d: test '%s': %d devices but only %d usable cores (set partition_scheme.devices "
                          "or --devices to at most %d)",
           c->prof->path, t->line, t->name, ndev, c->cores.ncores, c->cores.ncores);
  return ndev;
}

/* The cgroup v2 cpusets of the copies, or NULL (noted once: each copy is then bound to its cores). */
static char *per_device_cgroups(const ctx *c, int ndev, char **lists, char ***cg_dirs)
{
  char *cg_parent = NULL, why[512] = "";
  if (c->dry || c->no_cgroup) return NULL;
  cg_parent = cgroup_setup(ndev, lists, cg_dirs, why, sizeof why);
  static int warned;
  if (!cg_parent && !warned) {
    warned = 1;
    printf("[jobs] note: cgroup v2 cpuset not used (%s); binding each copy to its cores instead "
           "(--no-cgroup silences this)\n",
           why);
  }
  return cg_parent;
}

/* per-device: N concurrent copies on disjoint core sets. */
static void run_per_device(ctx *c, const sf_profile_test *t, int rep, const char *label)
{
  char jid[64];
  const int ncpu_fixed = mentions_ncpu(t, &c->overrides);
  const int ndev = per_device_count(c, t), per = c->cores.ncores / ndev;
  strv *avs = sf_calloc((size_t)ndev, sizeof *avs, "runs"), *envs = sf_calloc((size_t)ndev, sizeof *envs, "runs");
  int **pus = sf_calloc((size_t)ndev, sizeof *pus, "runs");
  char **lists = sf_calloc((size_t)ndev, sizeof *lists, "runs");
  for (int d = 0; d < ndev; d++) {
    cJSON *extra = job_extra(t, d, 1, d);
    snprintf(jid, sizeof jid, "%d.%d", rep, d);
    cpuid_env(c, d * per, per, &envs[d], ncpu_fixed ? 0 : per);
    run_argv(c, t, jid, extra, 0, &avs[d]);
    pus[d] = pus_of(c, d * per, per);
    lists[d] = pu_list_string(pus[d]);
    cJSON_Delete(extra);
  }
  char **cg_dirs = NULL;
  char *cg_parent = per_device_cgroups(c, ndev, lists, &cg_dirs);
  for (int d = 0; d < ndev; d++) printf("[jobs]   device %d: PUs %s\n", d, lists[d]);
  launch(c, (size_t)ndev, avs, envs, pus, cg_dirs, label);
  cgroup_teardown(cg_parent, cg_dirs, ndev);
  for (int d = 0; d < ndev; d++) {
    sv_free(&avs[d]);
    sv_free(&envs[d]);
    free(pus[d]);
    free(lists[d]);
  }
  free(avs);
  free(envs);
  free(pus);
  free(lists);
  c->units_done++;
}

static void run_test(ctx *c, const sf_profile_test *t, int rep)
{
  char label[512];
  snprintf(label, sizeof label, "%s.%s", c->prof->suite, t->name);
  if (t->part == SF_PART_NORMAL) run_normal(c, t, rep, label);
  else if (t->part == SF_PART_PROGRESSION) run_progression(c, t, rep, label);
  else run_per_device(c, t, rep, label);
}

/* ---- the command ---------------------------------------------------------------------------- */

/* What the command line asks for besides the ctx fields it sets. */
typedef struct {
  const char *profile;
  int repeat;
  strv names; /* --name: the tests to run, all when empty */
} jobs_args;

/* Arguments after "--": appended to every run; key=value after a non-option (or a complete
 * --opt=value) becomes --set key=value. */
static void parse_overrides(ctx *c, int argc, char **argv, int first)
{
  for (int k = first; k < argc; k++) {
    const char *prev = k > first ? argv[k - 1] : NULL;
    int prev_takes_value = prev && prev[0] == '-' && !strchr(prev, '=');
    if (argv[k][0] != '-' && strchr(argv[k], '=') && !prev_takes_value) {
      sv_push(&c->overrides, "--set");
    }
    sv_push(&c->overrides, argv[k]);
  }
}

/* The positive count after option a at argv[*i], at most most. */
static int count_arg(int argc, char **argv, int *i, const char *a, long most)
{
  char *end;
  if (*i + 1 >= argc) sf_die(SF_EXIT_USAGE, "jobs: %s expects a count", a);
  long v = strtol(argv[++*i], &end, 10);
  if (*end || end == argv[*i] || v < 1 || v > most)
    sf_die(SF_EXIT_USAGE, "jobs: %s '%s': expected a positive integer", a, argv[*i]);
  return (int)v;
}

/* The command line into c and args; returns 1 when it asked for help (printed). */
static int parse_args(ctx *c, jobs_args *args, int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      parse_overrides(c, argc, argv, i + 1);
      break;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 1;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
      if (i + 1 >= argc) sf_die(SF_EXIT_USAGE, "jobs: %s expects a directory", a);
      c->out = argv[++i];
    } else if (!strcmp(a, "--repeat")) {
      args->repeat = count_arg(argc, argv, &i, a, 100000);
    } else if (!strcmp(a, "--devices")) {
      c->devices_cli = count_arg(argc, argv, &i, a, 4096);
    } else if (!strcmp(a, "--name")) {
      int any = 0;
      while (i + 1 < argc && argv[i + 1][0] != '-') {
        char *list = sf_strdup(argv[++i]);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) sv_push(&args->names, tok);
        free(list);
        any = 1;
      }
      if (!any) sf_die(SF_EXIT_USAGE, "jobs: --name expects one or more test names");
    } else if (!strcmp(a, "--no-cgroup")) {
      c->no_cgroup = 1;
    } else if (!strcmp(a, "--dry-run")) {
      c->dry = 1;
    } else if (a[0] == '-') {
      usage(stderr);
      sf_die(SF_EXIT_USAGE, "jobs: unknown option '%s' (benchmark overrides go after '--')", a);
    } else if (!args->profile) {
      args->profile = a;
    } else {
      sf_die(SF_EXIT_USAGE, "jobs: unexpected argument '%s' (PROFILE is already '%s')", a, args->profile);
    }
  }
  if (!args->profile) {
    usage(stderr);
    sf_die(SF_EXIT_USAGE, "jobs: missing PROFILE");
  }
  return 0;
}

/* Without -o: a dated directory under SF_OUTROOT (a dry run may use "."), written into buf. */
static const char *default_out_dir(int dry, char *buf, size_t len)
{
  const char *root = sf_switch("SF_OUTROOT");
  if (!root || !*root) {
    if (!dry) sf_die(SF_EXIT_USAGE, "jobs: missing -o OUT (or set SF_OUTROOT for a dated directory under it)");
    root = ".";
  }
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  char stamp[64];
  strftime(stamp, sizeof stamp, "results-%Y-%m-%d.%H:%M:%S", &tm);
  snprintf(buf, len, "%s/%s", root, stamp);
  return buf;
}

/* The selected tests as flags (malloc'ed): --name must name tests of the profile; the order stays the
 * file's. A selected test's config file must exist (a dry run only warns). */
static char *select_tests(const sf_profile *prof, const strv *names, const char *ppath, int dry)
{
  char *selected = sf_calloc(prof->n + 1, 1, "selection");
  for (size_t k = 0; k < names->n; k++) {
    size_t i;
    for (i = 0; i < prof->n; i++)
      if (!strcmp(prof->tests[i].name, names->v[k])) break;
    if (i == prof->n) {
      fprintf(stderr, "scaffold: error: jobs: unknown test '%s' in %s; its tests are:", names->v[k], ppath);
      for (size_t j = 0; j < prof->n; j++) fprintf(stderr, " %s", prof->tests[j].name);
      fputc('\n', stderr);
      exit(SF_EXIT_USAGE);
    }
    selected[i] = 1;
  }
  for (size_t i = 0; i < prof->n; i++)
    if (!names->n) selected[i] = 1;
  for (size_t i = 0; i < prof->n; i++) {
    const sf_profile_test *t = &prof->tests[i];
    if (selected[i] && t->config && !sf_file_exists(t->config)) {
      if (dry) printf("[jobs] warning: %s:%d: test '%s': config file %s not found\n", ppath, t->config_line, t->name, t->config);
      else sf_die(SF_EXIT_USAGE, "%s:%d: test '%s': config file %s not found", ppath, t->config_line, t->name, t->config);
    }
  }
  return selected;
}

static char *own_executable(void)
{
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? (buf[n] = '\0', sf_strdup(buf)) : sf_strdup("/proc/self/exe");
}

/* The suite: repeat outermost, then the selected tests in file order; a test that needs CUDA
 * workers is skipped where there are none (why). */
static void run_suite(ctx *c, const char *selected, size_t nsel, int repeat, int cuda, const char *why)
{
  const sf_profile *prof = c->prof;
  for (int rep = 0; rep < repeat && !sf_launch_interrupted(); rep++) {
    size_t ti = 0;
    for (size_t i = 0; i < prof->n && !sf_launch_interrupted(); i++) {
      if (!selected[i]) continue;
      const sf_profile_test *t = &prof->tests[i];
      if (t->requires_cuda && !cuda) {
        printf("[jobs] skipping %s.%s: requires CUDA workers (%s)\n", prof->suite, t->name, why);
        ti++;
        continue;
      }
      char what[128];
      if (t->part == SF_PART_PER_DEVICE) snprintf(what, sizeof what, "per-device");
      else if (t->part == SF_PART_PROGRESSION) snprintf(what, sizeof what, "progression, %d runs", part_units(c, t));
      else snprintf(what, sizeof what, "normal");
      progress(c, rep, repeat, ti++, nsel, t, what);
      double t1 = sf_now();
      int before = c->failed;
      run_test(c, t, rep);
      if (!c->dry && !sf_launch_interrupted())
        printf("[jobs] %s.%s: %s in %.1fs\n", prof->suite, t->name, c->failed > before ? "FAILED" : "done",
               sf_now() - t1);
    }
  }
}

/* The closing lines; the exit status. */
static int report_end(const ctx *c)
{
  int rc = 0;
  if (sf_launch_interrupted()) {
    printf("[jobs] interrupted by signal %d; the running jobs were stopped\n", sf_launch_interrupted());
    rc = SF_EXIT_INTERRUPTED;
  } else if (c->dry) {
    printf("[jobs] dry run: %d run(s) planned, nothing was started\n", c->runs);
  } else {
    printf("[jobs] %d run(s), %d failed\n", c->runs, c->failed);
    if (c->failed) rc = SF_EXIT_FAILURE;
  }
  printf("Total time: %.1fs\n", sf_now() - c->t0);
  return rc;
}

int sf_cmd_jobs(int argc, char **argv)
{
  ctx c;
  memset(&c, 0, sizeof c);
  jobs_args args = {.repeat = 1};
  if (parse_args(&c, &args, argc, argv)) return 0;
  char *ppath = sf_resolve_config_path("profiles", args.profile);
  if (!sf_file_exists(ppath))
    sf_die(SF_EXIT_USAGE, "jobs: profile '%s' not found (looked for %s)", args.profile, ppath);
  char default_out[512];
  if (!c.out) c.out = default_out_dir(c.dry, default_out, sizeof default_out);

  sf_profile prof;
  sf_profile_load(&prof, ppath);
  c.prof = &prof;
  char *selected = select_tests(&prof, &args.names, ppath, c.dry);

  char why[256];
  int cuda = sf_machine_has_cuda(why, sizeof why);
  sf_machine_cores_get(&c.cores);
  if (c.cores.ncores < 1) sf_die(SF_EXIT_FAILURE, "jobs: hwloc found no usable core");
  char *exe = own_executable();
  c.exe = exe;
  size_t nsel = 0;
  for (size_t i = 0; i < prof.n; i++) {
    if (!selected[i]) continue;
    nsel++;
    if (!prof.tests[i].requires_cuda || cuda) c.units_total += part_units(&c, &prof.tests[i]);
  }
  c.units_total *= args.repeat;
  if (!c.dry && sf_mkdir_p(c.out) != 0) sf_die(SF_EXIT_FAILURE, "jobs: cannot create %s: %s", c.out, strerror(errno));
  printf("[jobs] suite %s: %zu test(s) x %d repeat(s), %d usable core(s), %d package(s), %d NUMA node(s); results in %s\n",
         prof.suite, nsel, args.repeat, c.cores.ncores, c.cores.npackages, c.cores.nnuma, c.out);
  fflush(stdout);

  sf_launch_signals_install();
  sf_launch_set_grace(15.0); /* each `run` child escalates to SIGKILL on its benchmark after 5 s */
  c.t0 = sf_now();
  run_suite(&c, selected, nsel, args.repeat, cuda, why);
  int rc = report_end(&c);
  free(exe);
  free(selected);
  free(ppath);
  sv_free(&args.names);
  sv_free(&c.overrides);
  sf_machine_cores_free(&c.cores);
  sf_profile_free(&prof);
  return rc;
}
