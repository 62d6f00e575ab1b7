/* The measuring steps of `scaffold calibrate` (calibrate_run.h). Children are this executable
 * (/proc/self/exe) run with an explicit argument list and a few environment variables; their output goes to
 * a log in the staging folder, whose tail is the error message when one fails. */
#include "calibrate_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/kernel_tuning_setup.h"

#include <sf_git_commit.h> /* SF_GIT_COMMIT: generated (cmake/GitCommit.cmake) */

#define MAX_ARGS 48

/* ---- children ---- */
typedef struct {
  char *argv[MAX_ARGS]; /* malloc'ed, NULL-terminated */
  int n;
} args;

static void arg_s(args *a, const char *v)
{
  if (a->n + 1 >= MAX_ARGS) SF_ABORT("calibrate: too many child arguments");
  a->argv[a->n++] = sf_strdup(v);
  a->argv[a->n] = NULL;
}

static void arg(args *a, const char *fmt, long v)
{
  char buf[64];
  snprintf(buf, sizeof buf, fmt, v);
  arg_s(a, buf);
}

static void args_free(args *a)
{
  for (int i = 0; i < a->n; i++) free(a->argv[i]);
  a->n = 0;
}

static void shape_args(args *a, const sf_calib_run *r)
{
  arg(a, "--set", 0), arg(a, "problem_scale=%ld", r->ps), arg(a, "--set", 0), arg(a, "unet_base_channels=%ld", r->base);
  arg(a, "--set", 0), arg(a, "local_batch_size=%ld", r->batch), arg(a, "--set", 0), arg(a, "ncpu=%ld", r->ncpu);
  arg(a, "--set", 0), arg(a, "nopencl=%ld", r->nopencl), arg(a, "--set", 0), arg(a, "slabs=%ld", r->slabs);
  arg(a, "--set", 0), arg(a, "torch_amp=%ld", r->amp);
}

static void tail_of(const char *log, char *out, size_t len)
{
  size_t n = 0;
  char *text = sf_read_file(log, &n);
  const char *p = text ? text + (n > 400 ? n - 400 : 0) : "(no log)";
  snprintf(out, len, "%s (log %s)", p, log);
  for (char *q = out; *q; q++)
    if (*q == '\n') *q = ' ';
  free(text);
}

/* Runs `scaffold <a>` with env ("K=V" strings, NULL-terminated) added; 0 when it exits 0 */
static int child(sf_calib_ctx *x, args *a, const char *const *env, char *log, size_t loglen)
{
  snprintf(log, loglen, "%s/logs/%02d-%s.log", x->staging, ++x->nlogs, a->argv[1]);
  pid_t pid = fork();
  if (pid < 0) return snprintf(x->last_error, sizeof x->last_error, "fork: %s", strerror(errno)), -1;
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(127);
    for (int i = 0; env && env[i]; i++) putenv((char *)env[i]);
    execv("/proc/self/exe", a->argv);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  args_free(a);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  tail_of(log, x->last_error, sizeof x->last_error);
  return -1;
}

int sf_calib_tune(sf_calib_ctx *x, const sf_calib_run *r)
{
  args a = {.n = 0};
  arg(&a, "scaffold", 0), arg(&a, "tune", 0), arg(&a, "--class", 0), arg_s(&a, x->folder.name);
  if (x->ship) arg(&a, "--ship", 0);
  arg(&a, "--budget-ms", 0), arg(&a, "15", 0);
  shape_args(&a, r);
  char log[PATH_MAX + 64];
  return child(x, &a, NULL, log, sizeof log);
}

static double median_from_log(const char *log, int *ncpu)
{
  char *text = sf_read_file(log, NULL), *line = text ? strstr(text, "SFSTEPS {") : NULL;
  double med = -1;
  if (line) {
    char *end = strchr(line, '\n');
    if (end) *end = '\0';
    cJSON *j = cJSON_Parse(line + 8);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "median_step_s"), *w = cJSON_GetObjectItemCaseSensitive(j, "workers");
    if (cJSON_IsNumber(m)) med = m->valuedouble;
    *ncpu = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, w)
    {
      const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "kind");
      if (cJSON_IsString(k) && !strcasecmp(k->valuestring, "cpu")) (*ncpu)++;
    }
    cJSON_Delete(j);
  }
  free(text);
  return med;
}

int sf_calib_steps(sf_calib_ctx *x, const sf_calib_run *r, int warmup, int steps, int calibrate, double *median_s,
                   int *ncpu)
{
  args a = {.n = 0};
  arg(&a, "scaffold", 0), arg(&a, "steps", 0);
  shape_args(&a, r);
  arg(&a, "--set", 0), arg(&a, "scheduler=dmda", 0), arg(&a, "--warmup", 0), arg(&a, "%ld", warmup);
  arg(&a, "--steps", 0), arg(&a, "%ld", steps), arg(&a, "--json", 0);
  /* bus files record the OpenCL devices StarPU sees (a run that sees others rewrites them): PoCL counts only with
   * STARPU_OPENCL_ON_CPUS, so every run of a plan with OpenCL runs sets it, and the class's bus files describe
   * the machine with its OpenCL device, which a simulation of an OpenCL mix needs */
  static char dir[PATH_MAX + 96], host[96], cal[32], tuning[PATH_MAX + 96];
  snprintf(dir, sizeof dir, "STARPU_PERF_MODEL_DIR=%s", x->staging);
  snprintf(host, sizeof host, "STARPU_HOSTNAME=%s", x->folder.name);
  snprintf(cal, sizeof cal, "STARPU_CALIBRATE=%d", calibrate);
  snprintf(tuning, sizeof tuning, "SF_KERNEL_TUNING=%s", sf_file_exists(x->record) ? x->record : "0");
  const char *env[8] = {dir, host, cal, tuning, "STARPU_SILENT=1"};
  int ne = 5;
  if (x->opencl_bus) env[ne++] = "STARPU_OPENCL_ON_CPUS=1";
  /* StarPU's default 50 % resets a footprint's samples when one run deviates (a cold first step) */
  if (!getenv("STARPU_HISTORY_MAX_ERROR")) env[ne++] = "STARPU_HISTORY_MAX_ERROR=1000";
  char log[PATH_MAX + 64];
  if (child(x, &a, env, log, sizeof log) != 0) return -1;
  int cpus = 0;
  double med = median_from_log(log, &cpus);
  if (median_s) *median_s = med, *ncpu = cpus;
  if (median_s && (med <= 0 || cpus <= 0))
    return snprintf(x->last_error, sizeof x->last_error, "no SFSTEPS line with a step time in %s", log), -1;
  return 0;
}

/* ---- the models ---- */
/* Copies the files of dir whose names end in ".<cls>" (history files) or start with "<cls>." (bus files)
 * into dst; the count, or -1 */
static int copy_class_files(const char *dir, const char *dst, const char *cls, int history)
{
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t cl = strlen(cls);
  int n = 0;
  struct dirent *e;
  while (n >= 0 && (e = readdir(d))) {
    size_t nl = strlen(e->d_name);
    int mine = history ? nl > cl + 1 && e->d_name[nl - cl - 1] == '.' && !strcmp(e->d_name + nl - cl, cls)
                       : !strncmp(e->d_name, cls, cl) && e->d_name[cl] == '.';
    if (!mine) continue;
    char *src = sf_path_join(dir, e->d_name), *to = sf_path_join(dst, e->d_name);
    size_t len = 0;
    char *data = sf_read_file(src, &len);
    n = data && sf_write_file_atomic(to, data, len) == 0 ? n + 1 : -1;
    free(data);
    free(src);
    free(to);
  }
  closedir(d);
  return n;
}

/* StarPU's history files: after a "# hash ..." header, one line per footprint whose 8th field is its sample
 * count; counts the footprints and those with fewer than 10 samples (StarPU's STARPU_CALIBRATE_MINIMUM) */
static void count_samples(const char *dir, int *total, int *under)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *p = sf_path_join(dir, e->d_name), *text = sf_read_file(p, NULL);
    int in_table = 0;
    for (char *save = NULL, *l = text ? strtok_r(text, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
      if (l[0] == '#') {
        in_table = !strncmp(l, "# hash", 6);
        continue;
      }
      double f[7]; /* after the hex hash: size flops mean dev sum sum2 n */
      if (in_table && sscanf(l, "%*s %lf %lf %lf %lf %lf %lf %lf", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6]) == 7) {
        (*total)++;
        if (f[6] < 10) (*under)++;
      }
    }
    free(text);
    free(p);
  }
  if (d) closedir(d);
}

void sf_calib_count_staging(sf_calib_ctx *x, int *footprints, int *under)
{
  char dir[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/codelets/45", x->staging);
  *footprints = *under = 0;
  count_samples(dir, footprints, under);
}

int sf_calib_install_models(sf_calib_ctx *x, char *err, size_t errlen)
{
  char fresh[PATH_MAX + 32], old[PATH_MAX + 32], cur[PATH_MAX + 16], sub[PATH_MAX + 64], from[PATH_MAX + 64];
  snprintf(fresh, sizeof fresh, "%s/.sampling-new-%d", x->folder.dir, (int)getpid());
  snprintf(old, sizeof old, "%s/.sampling-old-%d", x->folder.dir, (int)getpid());
  snprintf(cur, sizeof cur, "%s/sampling", x->folder.dir);
  sf_remove_tree(fresh);
  snprintf(sub, sizeof sub, "%s/codelets/45", fresh);
  snprintf(from, sizeof from, "%s/codelets/45", x->staging);
  int ok = sf_mkdir_p(sub) == 0 && (x->model_files = copy_class_files(from, sub, x->folder.name, 1)) > 0;
  snprintf(sub, sizeof sub, "%s/bus", fresh);
  snprintf(from, sizeof from, "%s/bus", x->staging);
  ok = ok && sf_mkdir_p(sub) == 0 && (x->bus_files = copy_class_files(from, sub, x->folder.name, 0)) > 0;
  if (!ok) {
    snprintf(err, errlen, "the calibrating runs left no usable models in %s (model files %d, bus files %d)", x->staging,
             x->model_files, x->bus_files);
    sf_remove_tree(fresh);
    return -1;
  }
  snprintf(sub, sizeof sub, "%s/codelets/45", fresh);
  count_samples(sub, &x->footprints, &x->under10);
  int had = sf_dir_exists(cur);
  if ((had && rename(cur, old) != 0) || rename(fresh, cur) != 0) {
    snprintf(err, errlen, "cannot move the new models into %s: %s", cur, strerror(errno));
    return -1;
  }
  if (had) sf_remove_tree(old);
  printf("calibrate: %d model files and %d bus files in %s; footprints with fewer than 10 samples: %d of %d\n",
         x->model_files, x->bus_files, cur, x->under10, x->footprints);
  return 0;
}

/* ---- what the class records ---- */
static int write_text(const char *dir, const char *name, const char *text, char *err, size_t errlen)
{
  char *p = sf_path_join(dir, name);
  int rc = sf_write_file_atomic(p, text, strlen(text));
  if (rc) snprintf(err, errlen, "cannot write %s: %s", p, strerror(errno));
  free(p);
  return rc;
}

int sf_calib_measure(sf_calib_ctx *x, const sf_calib_run *r, char *err, size_t errlen)
{
  double med = 0;
  int ncpu = 0;
  if (sf_calib_steps(x, r, 2, 10, 0, &med, &ncpu) != 0) {
    snprintf(err, errlen, "measuring the calibrated class: %s", x->last_error);
    return -1;
  }
  char now[32], text[1024];
  snprintf(text, sizeof text,
           "# Measured on the calibrated class by scaffold calibrate (%s, commit %s): median step of `scaffold steps`,\n"
           "# 10 steps after 2 warm-up, dmda, STARPU_CALIBRATE=0. Read by scripts/validate-sim and tests/sim.\n"
           "# problem_scale base_channels ncpu nopencl scheduler median_step_s\n%ld %ld %d %ld dmda %.6g\n",
           sf_class_utc_now(now, sizeof now), SF_GIT_COMMIT, r->ps, r->base, ncpu, r->nopencl, med);
  printf("calibrate: measured ps %ld base %ld on %d CPU workers (dmda, calibrated): median step %.6g s\n", r->ps, r->base,
         ncpu, med);
  return write_text(x->folder.dir, "MEASURED", text, err, errlen);
}

int sf_calib_baseline(sf_calib_ctx *x, char *err, size_t errlen)
{
  char out[PATH_MAX + 64], base[PATH_MAX + 32], log[PATH_MAX + 64];
  log[0] = '\0';
  snprintf(out, sizeof out, "%s/standard", x->staging);
  snprintf(base, sizeof base, "%s/baseline-standard.json", x->folder.dir);
  printf("calibrate: harness baseline: scaffold jobs standard -o %s (14 runs of 10-25 s)\n", out);
  args a = {.n = 0};
  arg(&a, "scaffold", 0), arg(&a, "jobs", 0), arg(&a, "standard", 0), arg(&a, "-o", 0), arg_s(&a, out);
  args s = {.n = 0};
  arg(&s, "scaffold", 0), arg(&s, "summary", 0), arg_s(&s, out), arg(&s, "-o", 0), arg_s(&s, base);
  if (child(x, &a, NULL, log, sizeof log) != 0 || child(x, &s, NULL, log, sizeof log) != 0) {
    snprintf(err, errlen, "harness baseline: %s", x->last_error);
    return -1;
  }
  if (x->ship) {
    char shipped[PATH_MAX + 64];
    snprintf(shipped, sizeof shipped, "%s/baselines/standard/%s.json", SF_SOURCE_DIR, x->folder.name);
    size_t len = 0;
    char *data = sf_read_file(base, &len);
    int rc = data ? sf_write_file_atomic(shipped, data, len) : -1;
    free(data);
    if (rc) return snprintf(err, errlen, "cannot write %s: %s", shipped, strerror(errno)), -1;
    printf("calibrate: wrote %s\n", shipped);
  }
  printf("calibrate: wrote %s\n", base);
  return 0;
}

int sf_calib_stamp(sf_calib_ctx *x, const char *mode, const sf_calib_plan *p, char *err, size_t errlen)
{
  char now[32], machine[512], *text = NULL, desc[160];
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) SF_ABORT("open_memstream: out of memory");
  fprintf(f, "# Who measured this class, when, with which code (scaffold calibrate; docs/perfmodels.md). The perfmodel\n"
             "# symbols and the tuning record's name carry the kernels' identity; this file is for people.\n");
  fprintf(f, "date = %s\ncommit = %s\nmachine = %s\nmode = %s\nseconds = %.0f\n", sf_class_utc_now(now, sizeof now),
          SF_GIT_COMMIT, sf_class_machine_line(machine, sizeof machine), mode, sf_now() - x->t0);
  fprintf(f, "footprints = %d\nfootprints_under_10_samples = %d\ntuning_record = %s\n", x->footprints, x->under10,
          sf_file_exists(x->record) ? sf_tuning_record_name() : "none");
  for (int i = 0; i < p->n; i++) fprintf(f, "run = %s\n", sf_calib_run_describe(&p->run[i], desc, sizeof desc));
  fclose(f);
  int rc = write_text(x->folder.dir, "CALIBRATED", text, err, errlen);
  free(text);
  if (rc == 0)
    printf("calibrate: class %s done in %.0f s: %s (runs on machines matching %s/MATCH use it)\n", x->folder.name,
           sf_now() - x->t0, x->folder.dir, x->folder.dir);
  return rc;
}

/* ---- begin, end ---- */
int sf_calib_begin(sf_calib_ctx *x, int ship, char *err, size_t errlen)
{
  x->ship = ship;
  x->t0 = sf_now();
  x->nlogs = 0;
  x->lock_fd = -1;
  x->staging[0] = '\0';
  if (sf_class_folder_prepare(&x->folder, err, errlen) != 0) return -1;
  char lock[PATH_MAX + 16];
  snprintf(lock, sizeof lock, "%s/.calibrate.lock", x->folder.dir);
  x->lock_fd = sf_lock_acquire(lock, "calibrating this class");
  if (x->lock_fd < 0) return snprintf(err, errlen, "cannot lock %s: %s", lock, strerror(errno)), -1;
  snprintf(x->record, sizeof x->record, "%s/tuning/%s", x->folder.dir, sf_tuning_record_name());
  snprintf(x->staging, sizeof x->staging, "%s/.staging-%d", x->folder.dir, (int)getpid());
  char logs[PATH_MAX + 64];
  snprintf(logs, sizeof logs, "%s/logs", x->staging);
  if (sf_mkdir_p(logs) != 0) return snprintf(err, errlen, "cannot create %s: %s", logs, strerror(errno)), -1;
  return 0;
}

void sf_calib_end(sf_calib_ctx *x, int failed)
{
  if (x->staging[0] && failed) fprintf(stderr, "calibrate: the logs of the runs are kept in %s/logs\n", x->staging);
  else if (x->staging[0]) sf_remove_tree(x->staging);
  if (x->lock_fd >= 0) sf_lock_release(x->lock_fd);
}
