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

/* starpu_smpirun's arguments before the program: the network of p->net for p->ranks ranks (files in
 * run_dir), SMPI's bandwidth and latency factors at 1, so a message costs what the network's figures
 * say, no guard pages on the actors' stacks, and large blocks for the folded tensors (sf_data_alloc), which
 * would exhaust vm.max_map_count at 32 ranks of ps 7 otherwise. StarPU-MPI counts the bytes each rank sends
 * (STARPU_COMM_STATS). Returns the count. */
static int smpirun_argv(const sim_plan *p, const char *run_dir, char **argv)
{
  char *platform = NULL, *hostfile = NULL, np[16];
  if (sim_network_write(p->net, p->ranks, run_dir, &platform, &hostfile) != 0) {
    fprintf(stderr, "error: cannot write the network files in %s\n", run_dir);
    _exit(126);
  }
  snprintf(np, sizeof np, "%d", p->ranks);
  setenv("STARPU_COMM_STATS", "1", 1);
  int n = 0;
  argv[n++] = "starpu_smpirun";
  argv[n++] = "-platform", argv[n++] = platform;
  argv[n++] = "-hostfile", argv[n++] = hostfile;
  argv[n++] = "-np", argv[n++] = sf_strdup(np);
  argv[n++] = "--cfg=smpi/bw-factor:0:1";
  argv[n++] = "--cfg=smpi/lat-factor:0:1";
  argv[n++] = "--cfg=contexts/guard-size:0"; /* a guard page per actor stack exhausts vm.max_map_count by 16 ranks */
  argv[n++] = "--cfg=smpi/shared-malloc-blocksize:67108864"; /* folded tensors: one mapping per 64 MiB, not per 1 MiB */
  return n;
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
  /* smpirun splits arguments at spaces: a multi-rank run's label is the class name (outputs say "derived") */
  char sets[6][64], steps[16], warm[16], *label = p->ranks > 0 ? c->name : sim_class_label(c);
  snprintf(sets[0], 64, "scheduler=%s", sched);
  snprintf(sets[1], 64, "ncpu=%d", m->ncpu);
  snprintf(sets[2], 64, "ncuda=%d", m->ncuda);
  snprintf(sets[3], 64, "nopencl=%d", m->nopencl);
  snprintf(sets[4], 64, "trace=%d", p->trace);
  snprintf(steps, sizeof steps, "%d", p->steps);
  snprintf(warm, sizeof warm, "%d", p->warmup);
  char *args[] = {"-c", (char *)p->config_yaml, "--set", sets[0], "--set", sets[1], "--set",
                  sets[2], "--set", sets[3], "--set", sets[4], "--steps", steps, "--warmup", warm,
                  "--out", (char *)run_dir, "--machine", label, "--json"};
  char *argv[96];
  int n = p->ranks > 0 ? smpirun_argv(p, run_dir, argv) : 0;
  argv[n++] = p->ranks > 0 ? (char *)p->sim_bin : "scaffold-sim";
  for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) argv[n++] = args[i];
  for (int i = 0; p->sets && p->sets[i] && n < 92; i++) argv[n++] = "--set", argv[n++] = p->sets[i];
  argv[n] = NULL;
  execv(p->ranks > 0 ? p->smpirun : p->sim_bin, argv);
  fprintf(stderr, "cannot run %s: %s\n", p->ranks > 0 ? p->smpirun : p->sim_bin, strerror(errno));
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

static double num(const cJSON *j, const char *key, double dflt)
{
  const cJSON *x = cJSON_GetObjectItem(j, key);
  return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

/* A rank's SFSTEPS line of a multi-rank run: its step time, busy share and bytes sent to each rank. */
static void parse_rank(const cJSON *j, sim_outcome *o)
{
  int rank = (int)num(j, "rank", 0), ranks = (int)num(j, "ranks", 1);
  if (!o->rank_step_s) {
    o->ranks = ranks;
    o->replicas = (int)num(j, "replicas", 1);
    o->shards = (int)num(j, "shards", 1);
    o->rank_step_s = sf_calloc((size_t)ranks, sizeof(double), "per-rank figures");
    o->rank_busy_cpu = sf_calloc((size_t)ranks, sizeof(double), "per-rank figures");
    o->rank_sent = sf_calloc((size_t)ranks, sizeof(double), "per-rank figures");
    o->rank_recv = sf_calloc((size_t)ranks, sizeof(double), "per-rank figures");
  }
  if (rank < 0 || rank >= o->ranks || ranks != o->ranks) return;
  o->nseen++;
  o->rank_step_s[rank] = num(j, "median_step_s", 0);
  o->rank_busy_cpu[rank] = mean_busy(cJSON_GetObjectItem(j, "workers"), "CPU");
  const cJSON *sent = cJSON_GetObjectItem(j, "sent_per_step"), *x;
  int q = 0;
  cJSON_ArrayForEach(x, sent) {
    if (q < o->ranks && cJSON_IsNumber(x)) {
      o->rank_sent[rank] += x->valuedouble;
      o->rank_recv[q] += x->valuedouble;
    }
    q++;
  }
  if (o->rank_step_s[rank] > o->step_s) o->step_s = o->rank_step_s[rank]; /* the slowest rank */
}

void sim_outcome_free(sim_outcome *o)
{
  free(o->rank_step_s);
  free(o->rank_busy_cpu);
  free(o->rank_sent);
  free(o->rank_recv);
  o->rank_step_s = o->rank_busy_cpu = o->rank_sent = o->rank_recv = NULL;
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
  if (cJSON_GetObjectItem(j, "rank") && num(j, "ranks", 1) > 1) parse_rank(j, o);
  if (num(j, "rank", 0) != 0) { /* rank 0's line holds the run's figures */
    cJSON_Delete(j);
    return;
  }
  o->ok = 1;
  if (st->valuedouble > o->step_s) o->step_s = st->valuedouble;
  o->samples_per_s = num(j, "samples_per_s", 0); /* every replica's: fixed up for the slowest rank below */
  o->batch = (int)num(j, "batch", 1);
  if (o->replicas < 1) o->replicas = 1;
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
  if (o->ok && o->ranks > 1 && o->nseen != o->ranks) {
    snprintf(why, sizeof why, "the report of %d of the %d ranks is missing", o->ranks - o->nseen, o->ranks);
    o->ok = 0;
  }
  if (o->ok && o->step_s > 0) o->samples_per_s = (double)o->batch * o->replicas / o->step_s;
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
