/* Shipped StarPU perfmodels (scaffold/perfmodels.h, docs/perfmodels.md): matches this machine against
 * perfmodels/<class>/MATCH (model name regex, cpu family, core count, CPU flags), copies the class's
 * sampling tree into the per-user cache under a lock (temporary directory + rename, only when the
 * shipped set's SHA-256 differs from the one stamped in the cache) and points StarPU at the copy with
 * STARPU_PERF_MODEL_DIR / STARPU_HOSTNAME. Anything that goes wrong warns and leaves StarPU's default. */
#include "scaffold/perfmodels.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <limits.h>
#include <pwd.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/sha256.h"
#include "perfmodels_notice.h"
#include "scaffold/switches.h"

#ifdef SF_SOURCE_DIR
#define SF_PERFMODELS_DEFAULT_DIR SF_SOURCE_DIR "/perfmodels"
#else
#define SF_PERFMODELS_DEFAULT_DIR "perfmodels"
#endif
#define STAMP_NAME ".shipped-sha256" /* in the cache copy: SHA-256 of the shipped tree it came from */

enum { PM_UNSET, PM_SHIPPED, PM_USER, PM_DEFAULT };
static int g_state = PM_UNSET;
static char g_class[64];
static char g_cache[PATH_MAX];
static char g_note[PATH_MAX + 256];

int sf_perfmodels_sched_uses_models(const char *sched)
{
  return sched && (strstr(sched, "dm") != NULL || strstr(sched, "heft") != NULL);
}

const char *sf_perfmodels_class(void) { return g_state == PM_SHIPPED ? g_class : NULL; }

char *sf_perfmodels_describe(char *buf, size_t len)
{
  snprintf(buf, len, "%s", g_note[0] ? g_note : "perfmodels: not set up (StarPU not started)");
  return buf;
}

/* ---- this machine ---- */
typedef struct {
  char model_name[256]; /* /proc/cpuinfo "model name" ("" if none) */
  long family;          /* "cpu family", -1 if none */
  char flags[4096];     /* "flags" (x86) or "Features" (arm), space separated */
  int cores;            /* hwloc's HWLOC_OBJ_CORE count */
} machine;

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

static void machine_read(machine *m)
{
  memset(m, 0, sizeof *m);
  char fam[32] = "";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
      cpuinfo_value(line, "model name", m->model_name, sizeof m->model_name);
      cpuinfo_value(line, "cpu family", fam, sizeof fam);
      cpuinfo_value(line, "flags", m->flags, sizeof m->flags);
      cpuinfo_value(line, "Features", m->flags, sizeof m->flags);
    }
    free(line);
    fclose(f);
  }
  m->family = fam[0] ? strtol(fam, NULL, 10) : -1;
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
static int match_class(const char *path, const machine *m, char *why, size_t wl)
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
    if (!strcmp(key, "model_name")) {
      if (!cheap_regex(val)) {
        sf_warn("perfmodels: %s line %d: model_name '%.60s%s' is longer than %d characters or holds a back-reference "
                "(\\1-\\9), which can make matching take exponential time; class ignored", path, lineno, val,
                strlen(val) > 60 ? "..." : "", MATCH_REGEX_MAX);
        result = -1;
        break;
      }
      regex_t re;
      int rc = regcomp(&re, val, REG_EXTENDED | REG_NOSUB);
      if (rc != 0) {
        char msg[256];
        regerror(rc, &re, msg, sizeof msg);
        sf_warn("perfmodels: %s line %d: model_name '%s' is not a POSIX extended regex (%s); class ignored", path,
                lineno, val, msg);
        result = -1;
        break;
      }
      ok = regexec(&re, m->model_name, 0, NULL, 0) == 0;
      regfree(&re);
      if (!ok) snprintf(why, wl, "model name '%s' !~ /%s/", m->model_name, val);
    } else if (!strcmp(key, "cpu_family") || !strcmp(key, "cores")) {
      char *end;
      long want = strtol(val, &end, 10);
      if (end == val || *end) {
        sf_warn("perfmodels: %s line %d: %s must be an integer, got '%s'; class ignored", path, lineno, key, val);
        result = -1;
        break;
      }
      long have = !strcmp(key, "cores") ? m->cores : m->family;
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
      sf_warn("perfmodels: %s line %d: unknown key '%s' (known: model_name, cpu_family, cores, flags); class ignored",
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

/* ---- the shipped tree: hash and copy ---- */
static int skip_name(const char *n) { return !strcmp(n, ".") || !strcmp(n, ".."); }

/* SHA-256 over every directory and regular file under dir (sorted, relative names, sizes, contents). */
static int hash_tree(sf_sha256_ctx *c, const char *dir, const char *rel)
{
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, alphasort);
  if (n < 0) return -1;
  int rc = 0;
  for (int i = 0; i < n; i++) {
    const char *name = ents[i]->d_name;
    if (rc == 0 && !skip_name(name)) {
      char *full = sf_path_join(dir, name), *r = rel[0] ? sf_path_join(rel, name) : sf_strdup(name);
      struct stat st;
      char head[PATH_MAX + 64];
      if (lstat(full, &st) != 0) {
        rc = -1;
      } else if (S_ISDIR(st.st_mode)) {
        int k = snprintf(head, sizeof head, "D %s\n", r);
        sf_sha256_update(c, head, (size_t)k);
        rc = hash_tree(c, full, r);
      } else if (S_ISREG(st.st_mode)) {
        size_t len = 0;
        char *data = sf_read_file(full, &len);
        if (!data) {
          rc = -1;
        } else {
          int k = snprintf(head, sizeof head, "F %s %zu\n", r, len);
          sf_sha256_update(c, head, (size_t)k);
          sf_sha256_update(c, data, len);
          free(data);
        }
      }
      if (rc != 0 && errno == 0) errno = EIO;
      free(full);
      free(r);
    }
    free(ents[i]);
  }
  free(ents);
  return rc;
}

static int copy_file(const char *src, const char *dst)
{
  size_t len = 0;
  char *data = sf_read_file(src, &len);
  if (!data) return -1;
  int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  int rc = fd < 0 ? -1 : 0;
  for (size_t off = 0; rc == 0 && off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) rc = -1;
    else off += (size_t)w;
  }
  int e = errno;
  if (fd >= 0 && close(fd) != 0 && rc == 0) rc = -1, e = errno;
  free(data);
  errno = e;
  return rc;
}

/* cp -r src dst (dst must not exist); directories and regular files only. On failure `bad` names the
 * path that failed. */
static int copy_tree(const char *src, const char *dst, char *bad, size_t blen)
{
  if (mkdir(dst, 0755) != 0) {
    snprintf(bad, blen, "%s", dst);
    return -1;
  }
  struct dirent **ents;
  int n = scandir(src, &ents, NULL, alphasort);
  if (n < 0) {
    snprintf(bad, blen, "%s", src);
    return -1;
  }
  int rc = 0;
  for (int i = 0; i < n; i++) {
    if (rc == 0 && !skip_name(ents[i]->d_name)) {
      char *s = sf_path_join(src, ents[i]->d_name), *d = sf_path_join(dst, ents[i]->d_name);
      struct stat st;
      if (lstat(s, &st) != 0) {
        snprintf(bad, blen, "%s", s);
        rc = -1;
      } else if (S_ISDIR(st.st_mode)) {
        rc = copy_tree(s, d, bad, blen);
      } else if (S_ISREG(st.st_mode) && copy_file(s, d) != 0) {
        snprintf(bad, blen, "%s", d);
        rc = -1;
      }
      free(s);
      free(d);
    }
    free(ents[i]);
  }
  free(ents);
  return rc;
}

/* StarPU 1.3 asserts when it cannot save a model at shutdown: every directory of the copy must be
 * writable before StarPU is pointed at it. */
static int tree_dirs_writable(const char *dir, char *bad, size_t blen)
{
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(bad, blen, "%s", dir);
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(bad, blen, "%s", dir);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d))) {
    if (skip_name(e->d_name)) continue;
    char *p = sf_path_join(dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rc = tree_dirs_writable(p, bad, blen);
    free(p);
  }
  int saved = errno;
  closedir(d);
  errno = saved;
  return rc;
}

/* $XDG_CACHE_HOME/scaffold-starpu/perfmodels, or ~/.cache/scaffold-starpu/perfmodels. */
static int cache_base(char *out, size_t len)
{
  const char *x = getenv("XDG_CACHE_HOME");
  if (x && x[0] == '/') { /* the XDG spec ignores a relative value */
    snprintf(out, len, "%s/scaffold-starpu/perfmodels", x);
    return 0;
  }
  const char *home = getenv("HOME");
  if (!home || !home[0]) {
    struct passwd *pw = getpwuid(getuid());
    home = pw ? pw->pw_dir : NULL;
  }
  if (!home || !home[0]) return -1;
  snprintf(out, len, "%s/.cache/scaffold-starpu/perfmodels", home);
  return 0;
}

/* snprintf for paths: -1 with errno ENAMETOOLONG when it does not fit. */
__attribute__((format(printf, 3, 4))) static int pathf(char *out, size_t len, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out, len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return 0;
}

/* Makes base/<cls> an up-to-date, writable copy of src. Returns 0, or -1 with err set. *copied says
 * whether this call (re)copied it. */
static int install_copy(const char *cls, const char *src, const char *base, char *cache, size_t clen,
                        int *copied, char *err, size_t errlen)
{
  char bad[PATH_MAX + 32];
  *copied = 0;
  char lockp[PATH_MAX], tmp[PATH_MAX], stamp_path[PATH_MAX], aside[PATH_MAX];
  if (pathf(cache, clen, "%s/%s", base, cls) || pathf(lockp, sizeof lockp, "%s/.lock-%s", base, cls) ||
      pathf(tmp, sizeof tmp, "%s/.tmp-%s-%ld", base, cls, (long)getpid()) ||
      pathf(aside, sizeof aside, "%s/.old-%s-%ld", base, cls, (long)getpid()) ||
      pathf(stamp_path, sizeof stamp_path, "%s/%s", cache, STAMP_NAME)) {
    snprintf(err, errlen, "perfmodel cache path under %s is too long", base);
    return -1;
  }
  if (sf_mkdir_p(base) != 0) {
    snprintf(err, errlen, "cannot create the perfmodel cache %s: %s", base, strerror(errno));
    return -1;
  }
  int fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(err, errlen, "cannot write the perfmodel cache lock %s: %s", lockp, strerror(errno));
    return -1;
  }
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  int rc = -1;
  sf_sha256_ctx c;
  unsigned char dig[32];
  char hex[66];
  sf_sha256_init(&c);
  errno = 0;
  if (hash_tree(&c, src, "") != 0) {
    snprintf(err, errlen, "cannot read the shipped perfmodels %s: %s", src, strerror(errno ? errno : EIO));
    goto out;
  }
  sf_sha256_final(&c, dig);
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", dig[i]);
  hex[64] = '\n';
  hex[65] = '\0';
  char *old = sf_read_file(stamp_path, NULL);
  int fresh = old && !strcmp(old, hex) && sf_dir_exists(cache);
  free(old);
  if (!fresh) {
    if (sf_dir_exists(tmp)) sf_remove_tree(tmp);
    char *tstamp = sf_path_join(tmp, STAMP_NAME);
    int ok = copy_tree(src, tmp, bad, sizeof bad) == 0;
    if (!ok) snprintf(err, errlen, "cannot copy the shipped perfmodels into %s: %s", bad, strerror(errno));
    if (ok && sf_write_file_atomic(tstamp, hex, strlen(hex)) != 0) {
      snprintf(err, errlen, "cannot write %s: %s", tstamp, strerror(errno));
      ok = 0;
    }
    free(tstamp);
    if (ok) {
      if (sf_dir_exists(cache)) { /* swap in the new copy, then drop the old one */
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, cache, RENAME_EXCHANGE) != 0) {
          if (rename(cache, aside) != 0 || rename(tmp, cache) != 0) {
            snprintf(err, errlen, "cannot replace %s: %s", cache, strerror(errno));
            ok = 0;
          } else {
            sf_remove_tree(aside);
          }
        }
      } else if (rename(tmp, cache) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, cache, strerror(errno));
        ok = 0;
      }
    }
    if (sf_dir_exists(tmp)) sf_remove_tree(tmp); /* a failed copy, or the old copy after the swap */
    if (!ok) goto out;
    *copied = 1;
  }
  if (tree_dirs_writable(cache, bad, sizeof bad) != 0) {
    snprintf(err, errlen, "the perfmodel cache %s is not writable (StarPU updates the models there): %s", bad,
             strerror(errno));
    goto out;
  }
  rc = 0;
out:
  close(fd); /* releases the lock */
  return rc;
}

/* ---- the choice ---- */
/* Where StarPU 1.3.10 keeps its models without STARPU_PERF_MODEL_DIR: <home>/.starpu/sampling with
 * <home> = $XDG_CACHE_HOME, else $STARPU_HOME, else $HOME (Debian's build reads XDG_CACHE_HOME first). */
static void starpu_default_note(const char *why)
{
  const char *home = getenv("XDG_CACHE_HOME");
  if (!home || !home[0]) home = getenv("HOME");
  snprintf(g_note, sizeof g_note, "perfmodels: StarPU default (%s/.starpu/sampling; %s)", home ? home : "~", why);
}

void sf_perfmodels_setup(const char *sched)
{
  int loud = sf_perfmodels_sched_uses_models(sched);
  if (g_state == PM_SHIPPED) { /* a second sf_runtime_init in this process: keep our set if still ours */
    const char *d = getenv("STARPU_PERF_MODEL_DIR"), *h = getenv("STARPU_HOSTNAME");
    if (d && h && !strcmp(d, g_cache) && !strcmp(h, g_class) && !getenv("STARPU_HOME")) return;
  }
  g_state = PM_DEFAULT;
  g_class[0] = g_cache[0] = '\0';

  static const char *const user_vars[] = {"STARPU_PERF_MODEL_DIR", "STARPU_HOSTNAME", "STARPU_HOME"};
  for (size_t i = 0; i < sizeof user_vars / sizeof user_vars[0]; i++) {
    const char *v = getenv(user_vars[i]);
    if (!v) continue;
    g_state = PM_USER;
    if (i == 0)
      snprintf(g_note, sizeof g_note, "perfmodels: StarPU's, from %s=%s (set by the user; shipped sets not used)",
               user_vars[i], v);
    else
      snprintf(g_note, sizeof g_note, "perfmodels: StarPU default (%s=%s set by the user; shipped sets not used)",
               user_vars[i], v);
    if (loud) sf_info("runtime: %s", g_note);
    return;
  }

  const char *root = sf_switch("SF_PERFMODELS_DIR");
  int explicit_root = root && root[0];
  if (!explicit_root) root = SF_PERFMODELS_DEFAULT_DIR;
  struct dirent **ents = NULL;
  int n = scandir(root, &ents, NULL, alphasort);
  if (n < 0) {
    if (explicit_root || errno != ENOENT)
      sf_warn("perfmodels: cannot read the shipped perfmodels directory %s%s: %s; using StarPU's default perfmodels",
              explicit_root ? "(SF_PERFMODELS_DIR) " : "", root, strerror(errno));
    starpu_default_note("no shipped perfmodels directory");
    if (loud && !explicit_root && errno == ENOENT) {
      char first[PATH_MAX + 256];
      snprintf(first, sizeof first, "no shipped perfmodels at %s: no perfmodels exist for this machine class; the %s "
               "scheduler will calibrate from scratch", root, sched);
      sf_perfmodels_uncalibrated_notice(sched, first);
    }
    return;
  }
  machine m;
  machine_read(&m);
  char cls[64] = "", why[512] = "", reasons[1024] = "";
  for (int i = 0; i < n; i++) {
    const char *name = ents[i]->d_name;
    size_t nl = strlen(name);
    int valid = name[0] != '.' && nl > 0 && nl < sizeof cls && strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                                            "0123456789._-") == nl;
    if (!cls[0] && valid) {
      char *dir = sf_path_join(root, name), *mp = sf_path_join(dir, "MATCH");
      if (sf_dir_exists(dir) && sf_file_exists(mp)) {
        int r = match_class(mp, &m, why, sizeof why);
        if (r == 1) snprintf(cls, sizeof cls, "%s", name);
        else if (r == 0) {
          size_t k = strlen(reasons);
          snprintf(reasons + k, sizeof reasons - k, "%s%s: %s", k ? "; " : "", name, why);
        }
      }
      free(dir);
      free(mp);
    }
    free(ents[i]);
  }
  free(ents);

  if (!cls[0]) {
    starpu_default_note("no shipped class matches this machine");
    if (loud) {
      char first[PATH_MAX + 2048];
      snprintf(first, sizeof first, "no shipped class in %s matches this machine (model name '%s', %d cores%s%s): no "
               "perfmodels exist for this machine class; the %s scheduler will calibrate from scratch",
               root, m.model_name, m.cores, reasons[0] ? "; " : "", reasons, sched);
      sf_perfmodels_uncalibrated_notice(sched, first);
    }
    return;
  }

  char src[PATH_MAX], base[PATH_MAX], err[2 * PATH_MAX + 128];
  snprintf(src, sizeof src, "%s/%s/sampling", root, cls);
  int copied = 0;
  if (!sf_dir_exists(src)) {
    snprintf(err, sizeof err, "class %s matches this machine but %s is not a directory", cls, src);
  } else if (cache_base(base, sizeof base) != 0) {
    snprintf(err, sizeof err, "no cache directory for the perfmodels (neither XDG_CACHE_HOME nor HOME is set)");
  } else if (install_copy(cls, src, base, g_cache, sizeof g_cache, &copied, err, sizeof err) == 0) {
    setenv("STARPU_PERF_MODEL_DIR", g_cache, 1);
    setenv("STARPU_HOSTNAME", cls, 1);
    snprintf(g_class, sizeof g_class, "%s", cls);
    g_state = PM_SHIPPED;
    snprintf(g_note, sizeof g_note, "perfmodels: %s (shipped, cache %s%s)", cls, g_cache,
             copied ? ", copied now" : "");
    if (loud) {
      sf_info("runtime: %s", g_note);
      char shipped[PATH_MAX + 32], cached[PATH_MAX + 32];
      snprintf(shipped, sizeof shipped, "%s/codelets/45", src);
      snprintf(cached, sizeof cached, "%s/codelets/45", g_cache);
      sf_perfmodels_stale_notice(sched, cls, shipped, cached);
    }
    return;
  }
  g_cache[0] = '\0';
  sf_warn("perfmodels: %s; continuing with StarPU's default perfmodels (dm* schedulers calibrate from scratch)", err);
  starpu_default_note("the shipped set could not be used");
}
