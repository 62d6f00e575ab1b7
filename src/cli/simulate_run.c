/* One run of scaffold-sim for `scaffold simulate` (simulate.h): a private copy of the class's models (StarPU
 * may write to them; with --allow-stale its stale models renamed to this build's symbols, so StarPU reads
 * them: every figure of such a run is marked stale), the environment StarPU's SimGrid mode reads before the program's own main runs
 * (STARPU_HOSTNAME, STARPU_PERF_MODEL_DIR: the platform is loaded first), the run's log, and its
 * "SFSTEPS {json}" line read back into the study's cell. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/perfmodels.h"
#include "simulate.h"

static int copy_tree(const char *src, const char *dst)
{
  if (sf_mkdir_p(dst) != 0) return -1;
  DIR *d = opendir(src);
  if (!d) return -1;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *s = sf_path_join(src, e->d_name), *t = sf_path_join(dst, e->d_name);
    if (sf_dir_exists(s)) rc = copy_tree(s, t);
    else {
      size_t n = 0;
      char *data = sf_read_file(s, &n);
      rc = data && sf_write_file_atomic(t, data, n) == 0 ? 0 : -1;
      free(data);
    }
    free(s);
    free(t);
  }
  closedir(d);
  return rc;
}

/* The child: environment, log, exec. Never returns. */
static void exec_sim(const sim_plan *p, const char *sched, const sim_mix *m, const char *run_dir,
                     const char *models, const char *log)
{
  const sim_class *c = p->cls;
  setenv("STARPU_HOSTNAME", c->name, 1);
  setenv("STARPU_PERF_MODEL_DIR", models, 1);
  setenv("STARPU_HOME", run_dir, 1);
  for (int i = 0; i < c->nenv; i++) putenv(c->env[i]);
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) _exit(126);
  dup2(fd, 1);
  dup2(fd, 2);
  close(fd);
  char sets[6][64], steps[16], warm[16], *label = sim_class_label(c);
  snprintf(sets[0], 64, "scheduler=%s", sched);
  snprintf(sets[1], 64, "ncpu=%d", m->ncpu);
  snprintf(sets[2], 64, "ncuda=%d", m->ncuda);
  snprintf(sets[3], 64, "nopencl=%d", m->nopencl);
  snprintf(sets[4], 64, "trace=%d", p->trace);
  snprintf(steps, sizeof steps, "%d", p->steps);
  snprintf(warm, sizeof warm, "%d", p->warmup);
  char *argv[] = {"scaffold-sim", "-c", (char *)p->config_yaml, "--set", sets[0], "--set", sets[1], "--set",
                  sets[2], "--set", sets[3], "--set", sets[4], "--steps", steps, "--warmup", warm,
                  "--out", (char *)run_dir, "--machine", label, "--json", NULL};
  execv(p->sim_bin, argv);
  fprintf(stderr, "cannot run %s: %s\n", p->sim_bin, strerror(errno));
  _exit(127);
}

static double mean_busy(const cJSON *workers, const char *kind)
{
  double sum = 0;
  int n = 0;
  const cJSON *w;
  cJSON_ArrayForEach(w, workers) {
    const cJSON *k = cJSON_GetObjectItem(w, "kind"), *b = cJSON_GetObjectItem(w, "busy_share");
    if (cJSON_IsString(k) && !strcmp(k->valuestring, kind) && cJSON_IsNumber(b)) {
      sum += b->valuedouble;
      n++;
    }
  }
  return n ? sum / n : -1;
}

static void parse_result(const char *json, sim_outcome *o)
{
  cJSON *j = cJSON_Parse(json);
  const cJSON *st = j ? cJSON_GetObjectItem(j, "median_step_s") : NULL;
  if (!cJSON_IsNumber(st)) {
    snprintf(o->why, sizeof o->why, "unreadable SFSTEPS line");
    cJSON_Delete(j);
    return;
  }
  o->ok = 1;
  o->step_s = st->valuedouble;
  o->samples_per_s = cJSON_GetObjectItem(j, "samples_per_s")->valuedouble;
  o->tasks = (long)cJSON_GetObjectItem(j, "tasks_per_step")->valuedouble;
  o->transfer_mib = cJSON_GetObjectItem(j, "transfer_bytes")->valuedouble / (1024.0 * 1024.0);
  const cJSON *w = cJSON_GetObjectItem(j, "workers");
  o->busy_cpu = mean_busy(w, "CPU");
  o->busy_cuda = mean_busy(w, "CUDA");
  o->busy_opencl = mean_busy(w, "OpenCL");
  cJSON_Delete(j);
}

/* Reads the log: the SFSTEPS line into o, the reason of a failure into o->why, the report to stdout (each
 * "predicted ..." line marked when the class is stale). */
static void read_log(const char *log, int status, int echo, const char *stale, sim_outcome *o)
{
  FILE *f = fopen(log, "r");
  char line[8192], why[256] = "";
  while (f && fgets(line, sizeof line, f)) {
    if (!strncmp(line, "SFSTEPS ", 8)) {
      parse_result(line + 8, o);
      continue;
    }
    if (strstr(line, "[assert failure]") || strstr(line, "error:") || strstr(line, "cannot run"))
      snprintf(why, sizeof why, "%.*s", (int)strcspn(line, "\n"), line);
    if (echo && line[0] != '[' && line[0] != '\n' && !strstr(line, "simgrid_update_xml")) {
      if (stale && !strncmp(line, "predicted ", 10)) printf("%.*s%s\n", (int)strcspn(line, "\n"), line, SIM_STALE_MARK);
      else fputs(line, stdout);
    }
  }
  if (f) fclose(f);
  if (o->ok && status == 0) return;
  o->ok = 0;
  if (why[0]) snprintf(o->why, sizeof o->why, "%s", why);
  else if (!o->why[0]) snprintf(o->why, sizeof o->why, "scaffold-sim exited with status %d", status);
}

void sim_run_one(const sim_plan *p, const char *sched, const sim_mix *m, int echo, sim_outcome *o)
{
  memset(o, 0, sizeof *o);
  char name[256];
  snprintf(name, sizeof name, "%s_%d-%d-%d", sched, m->ncpu, m->ncuda, m->nopencl);
  char *run_dir = sf_path_join(p->out_dir, name), *models = sf_path_join(run_dir, "perfmodels");
  char *log = sf_path_join(run_dir, "scaffold-sim.log"), *src = sf_path_join(p->cls->dir, "sampling");
  sf_remove_tree(models);
  char *codelets = sf_path_join(models, "codelets/45");
  if (copy_tree(src, models) != 0) {
    snprintf(o->why, sizeof o->why, "cannot copy the class models %s to %s", src, models);
  } else if (p->stale && sf_perfmodels_alias_stale(codelets, p->cls->name) < 0) {
    /* --allow-stale: the old models under this build's symbols, in this run's copy only */
    snprintf(o->why, sizeof o->why, "cannot rename the stale models in %s", codelets);
  } else {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) exec_sim(p, sched, m, run_dir, models, log);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) snprintf(o->why, sizeof o->why, "cannot start %s", p->sim_bin);
    else read_log(log, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), echo, p->stale, o);
    sf_remove_tree(models); /* the shipped class is the record */
  }
  free(codelets);
  free(run_dir);
  free(models);
  free(log);
  free(src);
}
