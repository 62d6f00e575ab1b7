/* The machine class of `scaffold simulate` (simulate.h): where its folder is, what devices its bus files
 * describe (bus/<name>.config, the SimGrid platform bus/<name>.platform.v4.xml), which worker kinds its
 * codelet models cover, and, for a derived class, its DERIVED file. Also the parsers of --mix and
 * --schedulers. Everything is checked before any simulation starts. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/machine_class.h"
#include "scaffold/runtime.h"
#include "simulate.h"
#include "scaffold/switches.h"

/* A folder, or a class name: the user's own class of that name (`scaffold calibrate`) when it has models,
 * else the shipped one (scaffold/machine_class.h) */
static char *class_path(const char *arg)
{
  if (strchr(arg, '/')) return sf_strdup(arg);
  char user[PATH_MAX];
  if (sf_machine_classes_user_root(user, sizeof user) == 0) {
    char *dir = sf_path_join(user, arg), *sampling = sf_path_join(dir, "sampling");
    int mine = sf_dir_exists(sampling);
    free(sampling);
    if (mine) return dir;
    free(dir);
  }
  int explicit_root;
  return sf_path_join(sf_machine_classes_shipped_root(&explicit_root), arg);
}

/* bus/<name>.config: "N # Number of CPUs", NUMA, CUDA, OpenCL, ... in that order. */
static int read_bus_config(sim_class *c, char *err, size_t errlen)
{
  char rel[512];
  snprintf(rel, sizeof rel, "sampling/bus/%s.config", c->name);
  char *path = sf_path_join(c->dir, rel);
  FILE *f = fopen(path, "r");
  int v[4], n = 0;
  char line[256];
  while (f && n < 4 && fgets(line, sizeof line, f))
    if (line[0] != '#' && sscanf(line, "%d", &v[n]) == 1) n++;
  if (f) fclose(f);
  if (n < 4) {
    snprintf(err, errlen, "class '%s': %s %s; expected StarPU's bus configuration (CPUs, NUMA nodes, CUDA and "
             "OpenCL devices) as `scaffold calibrate` writes it", c->name, path, f ? "is incomplete" : "is missing");
    free(path);
    return -1;
  }
  free(path);
  c->ncpus = v[0];
  c->ncuda = v[2];
  c->nopencl = v[3];
  snprintf(rel, sizeof rel, "sampling/bus/%s.platform.v4.xml", c->name);
  path = sf_path_join(c->dir, rel);
  int ok = sf_file_exists(path);
  if (!ok)
    snprintf(err, errlen, "class '%s': no SimGrid platform file %s; recalibrate the class with `scaffold calibrate` "
             "(it saves the platform with the bus files)", c->name, path);
  free(path);
  return ok ? 0 : -1;
}

/* Which worker kinds the codelet models were calibrated for (entries "Model for cuda0_impl0", ...). */
static void scan_models(sim_class *c)
{
  char *d = sf_path_join(c->dir, "sampling/codelets/45");
  DIR *dir = opendir(d);
  struct dirent *e;
  while (dir && (e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char *p = sf_path_join(d, e->d_name);
    char *text = sf_read_file(p, NULL);
    if (text) {
      c->has_cuda_models |= strstr(text, "Model for cuda0_impl") != NULL;
      c->has_opencl_models |= strstr(text, "Model for opencl0_impl") != NULL;
    }
    free(text);
    free(p);
  }
  if (dir) closedir(dir);
  free(d);
}

static char *trim(char *s)
{
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
  return s;
}

/* DERIVED: "from = CLASS", "note = TEXT", "env = KEY=VALUE" (repeatable); # comments. */
static int read_derived(sim_class *c, char *err, size_t errlen)
{
  char *path = sf_path_join(c->dir, "DERIVED");
  FILE *f = fopen(path, "r");
  if (!f) {
    free(path);
    return 0;
  }
  char line[1024], from[256] = "", note[640] = "";
  int lineno = 0, rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    char *s = trim(line), *eq = strchr(s, '=');
    if (!*s || *s == '#') continue;
    if (!eq) {
      snprintf(err, errlen, "%s:%d: expected 'key = value' (keys: from, note, env), got '%s'", path, lineno, s);
      rc = -1;
      break;
    }
    *eq = 0;
    char *k = trim(s), *v = trim(eq + 1);
    if (!strcmp(k, "from")) snprintf(from, sizeof from, "%s", v);
    else if (!strcmp(k, "note")) snprintf(note, sizeof note, "%s", v);
    else if (!strcmp(k, "env") && strchr(v, '=') && c->nenv < SIM_MAX_ENV) c->env[c->nenv++] = sf_strdup(v);
    else {
      snprintf(err, errlen, "%s:%d: unknown key '%s' or bad value '%s' (expected from = CLASS, note = TEXT, "
               "env = KEY=VALUE, at most %d env lines)", path, lineno, k, v, SIM_MAX_ENV);
      rc = -1;
    }
  }
  fclose(f);
  if (rc == 0 && !from[0]) {
    snprintf(err, errlen, "%s: no 'from = CLASS' line: a derived class must say what it was derived from", path);
    rc = -1;
  }
  if (rc == 0) {
    char buf[1024];
    snprintf(buf, sizeof buf, "derived from %s%s%s", from, note[0] ? ": " : "", note);
    c->derived = sf_strdup(buf);
  }
  free(path);
  return rc;
}

int sim_class_load(const char *arg, sim_class *c, char *err, size_t errlen)
{
  memset(c, 0, sizeof *c);
  c->dir = class_path(arg);
  const char *slash = strrchr(c->dir, '/');
  c->name = sf_strdup(slash && slash[1] ? slash + 1 : c->dir);
  if (!sf_dir_exists(c->dir)) {
    snprintf(err, errlen, "--class '%s': no class folder %s (classes: the user's own, made by `scaffold calibrate`, "
             "then perfmodels/<name>/, or a folder made by scripts/derive-class)", arg, c->dir);
    return -1;
  }
  if (read_bus_config(c, err, errlen) != 0 || read_derived(c, err, errlen) != 0) return -1;
  scan_models(c);
  return 0;
}

void sim_class_free(sim_class *c)
{
  for (int i = 0; i < c->nenv; i++) free(c->env[i]);
  free(c->dir);
  free(c->name);
  free(c->derived);
  memset(c, 0, sizeof *c);
}

char *sim_class_label(const sim_class *c)
{
  size_t n = strlen(c->name) + (c->derived ? strlen(c->derived) : 0) + 8;
  char *s = sf_malloc(n, "class label");
  if (c->derived) snprintf(s, n, "%s (%s)", c->name, c->derived);
  else snprintf(s, n, "%s", c->name);
  return s;
}

int sim_class_check_mix(const sim_class *c, const sim_mix *m, char *err, size_t errlen)
{
  const char *bad = NULL;
  int want = 0, have = 0;
  if (m->ncpu > c->ncpus) bad = "CPU workers", want = m->ncpu, have = c->ncpus;
  else if (m->ncuda > c->ncuda) bad = "CUDA workers", want = m->ncuda, have = c->ncuda;
  else if (m->nopencl > c->nopencl) bad = "OpenCL workers", want = m->nopencl, have = c->nopencl;
  if (bad) {
    snprintf(err, errlen, "mix %d:%d:%d asks for %d %s but class '%s' has %d (its bus files and SimGrid platform); "
             "derive a larger class with scripts/derive-class", m->ncpu, m->ncuda, m->nopencl, want, bad, c->name, have);
    return -1;
  }
  if ((m->ncuda > 0 && !c->has_cuda_models) || (m->nopencl > 0 && !c->has_opencl_models)) {
    snprintf(err, errlen, "mix %d:%d:%d uses %s workers but class '%s' has no codelet models for them (calibrate the "
             "class with such a worker: `scaffold calibrate`)", m->ncpu, m->ncuda, m->nopencl,
             m->ncuda > 0 && !c->has_cuda_models ? "CUDA" : "OpenCL", c->name);
    return -1;
  }
  if (m->ncpu + m->ncuda + m->nopencl == 0) {
    snprintf(err, errlen, "mix 0:0:0 has no worker");
    return -1;
  }
  return 0;
}

int sim_parse_mixes(const char *s, sim_mix *out, int max, char *err, size_t errlen)
{
  int n = 0;
  const char *p = s;
  while (*p) {
    int a, b, c, used = 0;
    if (n == max || sscanf(p, "%d:%d:%d%n", &a, &b, &c, &used) != 3 || a < 0 || b < 0 || c < 0 ||
        (p[used] && p[used] != ',')) {
      snprintf(err, errlen, "--mix '%s': expected NCPU:NCUDA:NOPENCL[,NCPU:NCUDA:NOPENCL...] with counts >= 0 (at "
               "most %d mixes), e.g. 2:0:0,1:0:1", s, max);
      return -1;
    }
    out[n++] = (sim_mix){a, b, c};
    p += used + (p[used] == ',');
  }
  if (n == 0) {
    snprintf(err, errlen, "--mix is empty; expected NCPU:NCUDA:NOPENCL[,...]");
    return -1;
  }
  return n;
}

/* The policies of the `schedulers` harness profile (docs/scheduling.md). */
static const char *const all_schedulers[] = {"eager", "lws", "ws", "prio", "dm", "dmda", "dmdas", "dmdar",
                                             "modular-heft", "modular-heft2", "modular-heft-prio",
                                             "modular-heteroprio"};

int sim_parse_schedulers(const char *s, char **out, int max, char *err, size_t errlen)
{
  int n = 0;
  if (!strcmp(s, "all")) {
    for (size_t i = 0; i < sizeof all_schedulers / sizeof all_schedulers[0] && n < max; i++)
      out[n++] = sf_strdup(all_schedulers[i]);
    return n;
  }
  char *copy = sf_strdup(s), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char valid[2048];
    const char *canon = sf_runtime_resolve_scheduler(t, valid, sizeof valid);
    if (!canon || n == max) {
      snprintf(err, errlen, "--schedulers: %s '%s'; valid: all, or a comma-separated list of %s",
               canon ? "too many names at" : "unknown StarPU scheduling policy", t, valid);
      for (int i = 0; i < n; i++) free(out[i]);
      free(copy);
      return -1;
    }
    out[n++] = sf_strdup(t);
  }
  free(copy);
  if (n == 0) snprintf(err, errlen, "--schedulers is empty; expected all or a comma-separated list");
  return n ? n : -1;
}
