/* Machine classes (scaffold/machine_class.h, docs/perfmodels.md): what this machine is (/proc/cpuinfo,
 * hwloc, the NVIDIA driver's /proc entries), whether a class's MATCH file fits it, where classes live (the
 * user's cache, then the shipped perfmodels/ folder) and which one is this machine's. A MATCH file is data
 * from wherever the class came from: only its documented keys are read, and nothing in it is run. */
#include "scaffold/machine_class.h"

#include <dirent.h>
#include <errno.h>
#include <hwloc.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/switches.h"

#ifdef SF_SOURCE_DIR
#define SF_PERFMODELS_DEFAULT_DIR SF_SOURCE_DIR "/perfmodels"
#else
#define SF_PERFMODELS_DEFAULT_DIR "perfmodels"
#endif

/* ---- this machine ---- */

static void cpuinfo_value(const char *line, const char *key, char *out, size_t len)
{
  size_t k = strlen(key);
  if (out[0] || strncmp(line, key, k) != 0) return;
  const char *p = line + k;
  while (*p == ' ' || *p == '\t') p++;
  if (*p != ':') return;
  p++;
  while (*p == ' ' || *p == '\t') p++;
  snprintf(out, len, "%s", p);
  size_t n = strlen(out);
  while (n && (out[n - 1] == '\n' || out[n - 1] == ' ')) out[--n] = '\0';
}

static void cpu_read(sf_machine *m)
{
  memset(m, 0, sizeof *m);
  char fam[32] = "", model[32] = "";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
      cpuinfo_value(line, "model name", m->model_name, sizeof m->model_name);
      cpuinfo_value(line, "cpu family", fam, sizeof fam);
      cpuinfo_value(line, "model", model, sizeof model);
      cpuinfo_value(line, "flags", m->flags, sizeof m->flags);
      cpuinfo_value(line, "Features", m->flags, sizeof m->flags);
    }
    free(line);
    fclose(f);
  }
  m->family = fam[0] ? strtol(fam, NULL, 10) : -1;
  m->model = model[0] ? strtol(model, NULL, 10) : -1;
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) == 0) {
    if (hwloc_topology_load(t) == 0) m->cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    hwloc_topology_destroy(t);
  }
  if (m->cores <= 0) m->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
}

static int has_flag(const char *flags, const char *want, size_t wl)
{
  for (const char *p = flags; *p;) {
    while (*p == ' ' || *p == '\t') p++;
    size_t n = strcspn(p, " \t");
    if (n == wl && !strncmp(p, want, wl)) return 1;
    p += n;
  }
  return 0;
}

static char *trim(char *s)
{
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
  return s;
}

/* A MATCH file is data from wherever the class came from: its model_name regex is matched only
 * when it is short and has no back-reference, the one ERE feature glibc cannot match in
 * polynomial time. */
#define MATCH_REGEX_MAX 256
static int cheap_regex(const char *re)
{
  if (strlen(re) > MATCH_REGEX_MAX) return 0;
  for (const char *p = re; *p; p++)
    if (*p == '\\' && p[1]) {
      if (p[1] >= '1' && p[1] <= '9') return 0;
      p++;
    }
  return 1;
}

/* Reads perfmodels/<class>/MATCH: "key = value" lines, '#' comment lines. Every key given must hold:
 *   model_name = ERE    POSIX extended regex searched in /proc/cpuinfo "model name"
 *   cpu_family = N      /proc/cpuinfo "cpu family"
 *   cores = N           cores as hwloc counts them
 *   flags = f1 f2 ...   each one present in /proc/cpuinfo "flags"
 * Returns 1 (this machine), 0 (not this machine; `why` says which key differs) or -1 (unusable
 * file: warned). */
int sf_machine_match_file(const char *path, const sf_machine *m, char *why, size_t wl)
{
  char *text = sf_read_file(path, NULL);
  if (!text) {
    sf_warn("perfmodels: cannot read %s: %s; class ignored", path, strerror(errno));
    return -1;
  }
  int result = 1, nkeys = 0, lineno = 0;
  why[0] = '\0';
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    lineno++;
    char *s = trim(line);
    if (!*s || *s == '#') continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      sf_warn("perfmodels: %s line %d: expected 'key = value', got '%s'; class ignored", path, lineno, s);
      result = -1;
      break;
    }
    *eq = '\0';
    char *key = trim(s), *val = trim(eq + 1);
    nkeys++;
    int ok;
    if (!strcmp(key, "model_name") || !strcmp(key, "gpu_model")) {
      const char *have = !strcmp(key, "model_name") ? m->model_name : m->gpu_model;
      if (!cheap_regex(val)) {
        sf_warn("perfmodels: %s line %d: %s '%.60s%s' is longer than %d characters or holds a back-reference "
                "(\\1-\\9), which can make matching take exponential time; class ignored", path, lineno, key, val,
                strlen(val) > 60 ? "..." : "", MATCH_REGEX_MAX);
        result = -1;
        break;
      }
      regex_t re;
      int rc = regcomp(&re, val, REG_EXTENDED | REG_NOSUB);
      if (rc != 0) {
        char msg[256];
        regerror(rc, &re, msg, sizeof msg);
        sf_warn("perfmodels: %s line %d: %s '%s' is not a POSIX extended regex (%s); class ignored", path, lineno,
                key, val, msg);
        result = -1;
        break;
      }
      ok = regexec(&re, have, 0, NULL, 0) == 0;
      regfree(&re);
      if (!ok) snprintf(why, wl, "%s '%s' !~ /%s/", key, have, val);
    } else if (!strcmp(key, "cpu_family") || !strcmp(key, "cores") || !strcmp(key, "model") ||
               !strcmp(key, "nvidia_gpus")) {
      char *end;
      long want = strtol(val, &end, 10);
      if (end == val || *end) {
        sf_warn("perfmodels: %s line %d: %s must be an integer, got '%s'; class ignored", path, lineno, key, val);
        result = -1;
        break;
      }
      long have = !strcmp(key, "cores") ? m->cores : !strcmp(key, "model") ? m->model
                  : !strcmp(key, "nvidia_gpus") ? m->nvidia_gpus : m->family;
      ok = have == want;
      if (!ok) snprintf(why, wl, "%s %ld, not %ld", key, have, want);
    } else if (!strcmp(key, "flags")) {
      ok = 1;
      for (char *p = val; *p && ok;) {
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strcspn(p, " \t");
        if (n && !has_flag(m->flags, p, n)) {
          ok = 0;
          snprintf(why, wl, "CPU flag '%.*s' missing", (int)n, p);
        }
        p += n;
      }
    } else {
      sf_warn("perfmodels: %s line %d: unknown key '%s' (known: model_name, cpu_family, model, cores, flags, nvidia_gpus, gpu_model); class ignored",
              path, lineno, key);
      result = -1;
      break;
    }
    if (!ok && result == 1) result = 0;
  }
  if (result >= 0 && nkeys == 0) {
    sf_warn("perfmodels: %s has no keys; class ignored", path);
    result = -1;
  }
  free(text);
  return result;
}


/* The NVIDIA driver lists one folder per GPU in /proc/driver/nvidia/gpus, with a "Model:" line in each
 * folder's "information" file: no CUDA library is needed to tell a GPU node from a host without one. */
static void gpus_read(sf_machine *m)
{
  const char *root = "/proc/driver/nvidia/gpus";
  DIR *d = opendir(root);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (m->nvidia_gpus++ == 0) {
      char path[PATH_MAX], line[256];
      snprintf(path, sizeof path, "%s/%s/information", root, e->d_name);
      FILE *f = fopen(path, "r");
      while (f && fgets(line, sizeof line, f)) cpuinfo_value(line, "Model", m->gpu_model, sizeof m->gpu_model);
      if (f) fclose(f);
    }
  }
  closedir(d);
}

void sf_machine_read(sf_machine *m)
{
  cpu_read(m);
  gpus_read(m);
}

/* ---- where classes live ---- */
int sf_machine_classes_user_root(char *out, size_t len)
{
  const char *x = getenv("XDG_CACHE_HOME");
  if (x && x[0] == '/') { /* the XDG spec ignores a relative value */
    snprintf(out, len, "%s/scaffold-starpu/classes", x);
    return 0;
  }
  const char *home = getenv("HOME");
  if (!home || !home[0]) return -1;
  snprintf(out, len, "%s/.cache/scaffold-starpu/classes", home);
  return 0;
}

const char *sf_machine_classes_shipped_root(int *explicit_root)
{
  const char *root = sf_switch("SF_PERFMODELS_DIR");
  *explicit_root = root && root[0];
  return *explicit_root ? root : SF_PERFMODELS_DEFAULT_DIR;
}

int sf_machine_class_name_ok(const char *name)
{
  size_t n = strlen(name);
  return n > 0 && n < 64 && name[0] != '.' &&
         strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static void add_reason(char *reasons, size_t rlen, const char *fmt, const char *a, const char *b)
{
  size_t k = strlen(reasons);
  if (k + 1 < rlen) snprintf(reasons + k, rlen - k, fmt, k ? "; " : "", a, b);
}

/* The first class in root (name order) whose MATCH fits m: 1, else 0. */
static int find_in(const char *root, int user, const char *needs, const sf_machine *m, sf_machine_class *out,
                   char *reasons, size_t rlen)
{
  struct dirent **ents = NULL;
  int n = scandir(root, &ents, NULL, alphasort), found = 0;
  if (n < 0 && errno != ENOENT) add_reason(reasons, rlen, "%scannot read %s: %s", root, strerror(errno));
  for (int i = 0; i < n; i++) {
    const char *name = ents[i]->d_name;
    if (!found && sf_machine_class_name_ok(name)) {
      char *dir = sf_path_join(root, name), *mp = sf_path_join(dir, "MATCH"), why[512] = "";
      char *need = needs ? sf_path_join(dir, needs) : NULL;
      int has = !need || access(need, F_OK) == 0;
      free(need);
      if (has && sf_dir_exists(dir) && sf_file_exists(mp)) {
        int r = sf_machine_match_file(mp, m, why, sizeof why);
        if (r == 1) {
          snprintf(out->name, sizeof out->name, "%s", name);
          snprintf(out->dir, sizeof out->dir, "%s", dir);
          out->user = user;
          found = 1;
        } else if (r == 0) {
          add_reason(reasons, rlen, "%s%s: %s", name, why);
        }
      }
      free(dir);
      free(mp);
    }
    free(ents[i]);
  }
  free(ents);
  return found;
}

int sf_machine_class_find(sf_machine_class *out, const char *needs, char *reasons, size_t rlen)
{
  memset(out, 0, sizeof *out);
  if (rlen) reasons[0] = '\0';
  sf_machine m;
  sf_machine_read(&m);
  char user[PATH_MAX];
  if (sf_machine_classes_user_root(user, sizeof user) == 0 && find_in(user, 1, needs, &m, out, reasons, rlen)) return 1;
  int explicit_root;
  const char *shipped = sf_machine_classes_shipped_root(&explicit_root);
  if (find_in(shipped, 0, needs, &m, out, reasons, rlen)) return 1;
  if (explicit_root && !sf_dir_exists(shipped))
    add_reason(reasons, rlen, "%sSF_PERFMODELS_DIR %s: %s", shipped, "not a directory");
  return 0;
}

/* ---- a class for this machine ---- */
void sf_machine_class_default_name(const sf_machine *m, char *out, size_t len)
{
  const char *vendor = strstr(m->model_name, "AMD") ? "amd" : strstr(m->model_name, "Intel") ? "intel" : "cpu";
  char gpus[32] = "";
  if (m->nvidia_gpus > 0) snprintf(gpus, sizeof gpus, "-%dgpu", m->nvidia_gpus);
  snprintf(out, len, "%s-f%ldm%ld-%dcore%s", vendor, m->family, m->model, m->cores, gpus);
}

/* The CPU flags that decide which kernels run (scaffold/cpu_isa.h), in the order a reader expects. */
static const char *const kernel_flags[] = {"avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", NULL};

/* A POSIX ERE that matches exactly s. */
static void regex_literal(const char *s, char *out, size_t len)
{
  size_t k = 0;
  if (k + 1 < len) out[k++] = '^';
  for (; *s && k + 3 < len; s++) {
    if (strchr(".[]()*+?{}|^$\\", *s)) out[k++] = '\\';
    out[k++] = *s;
  }
  if (k + 1 < len) out[k++] = '$';
  out[k] = '\0';
}

char *sf_machine_match_text(const sf_machine *m, const char *head)
{
  char re[600], flags[256] = "", gre[300];
  regex_literal(m->model_name, re, sizeof re);
  for (int i = 0; kernel_flags[i]; i++) {
    size_t wl = strlen(kernel_flags[i]), k = strlen(flags);
    const char *p = m->flags;
    int has = 0;
    while (*p && !has) {
      while (*p == ' ') p++;
      size_t n = strcspn(p, " ");
      has = n == wl && !strncmp(p, kernel_flags[i], wl);
      p += n;
    }
    if (has) snprintf(flags + k, sizeof flags - k, "%s%s", k ? " " : "", kernel_flags[i]);
  }
  char *text = NULL;
  size_t tl = 0;
  FILE *f = open_memstream(&text, &tl);
  if (!f) SF_ABORT("open_memstream: out of memory");
  fprintf(f, "# %s\n# Every key given must hold for the class to be used (docs/perfmodels.md, \"MATCH\").\n", head);
  fprintf(f, "model_name = %s\ncpu_family = %ld\nmodel = %ld\ncores = %d\n", re, m->family, m->model, m->cores);
  if (flags[0]) fprintf(f, "flags = %s\n", flags);
  fprintf(f, "nvidia_gpus = %d\n", m->nvidia_gpus);
  if (m->gpu_model[0]) {
    regex_literal(m->gpu_model, gre, sizeof gre);
    fprintf(f, "gpu_model = %s\n", gre);
  }
  fclose(f);
  return text;
}
