/* StarPU perfmodels of this machine's class (scaffold/perfmodels.h, docs/perfmodels.md): the class is the
 * first whose MATCH fits this machine, among the user's calibrated classes and then the shipped ones
 * (machine_class.c); its sampling tree is copied into the per-user cache under a lock (temporary directory +
 * rename, only when the class's SHA-256 differs from the one stamped in the cache) and StarPU is pointed at
 * the copy with STARPU_PERF_MODEL_DIR / STARPU_HOSTNAME. Anything that goes wrong warns and leaves StarPU's
 * default. */
#include "scaffold/perfmodels.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/machine_class.h"
#include "scaffold/sha256.h"
#include "perfmodels_notice.h"
#include "scaffold/switches.h"

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

  sf_machine_class mc;
  char reasons[2048];
  if (!sf_machine_class_find(&mc, "sampling", reasons, sizeof reasons)) {
    starpu_default_note("no class matches this machine");
    if (loud) {
      sf_machine m;
      sf_machine_read(&m);
      char first[PATH_MAX + 4096], user[PATH_MAX] = "?";
      int explicit_root;
      sf_machine_classes_user_root(user, sizeof user);
      snprintf(first, sizeof first, "no class in %s or %s matches this machine (model name '%s', %d cores%s%s): no "
               "perfmodels exist for this machine class; the %s scheduler will calibrate from scratch",
               user, sf_machine_classes_shipped_root(&explicit_root), m.model_name, m.cores, reasons[0] ? "; " : "",
               reasons, sched);
      sf_perfmodels_uncalibrated_notice(sched, first);
    }
    return;
  }
  const char *cls = mc.name, *kind = mc.user ? "calibrated here" : "shipped";

  char src[PATH_MAX + 16], base[PATH_MAX], err[2 * PATH_MAX + 128];
  snprintf(src, sizeof src, "%s/sampling", mc.dir);
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
    snprintf(g_note, sizeof g_note, "perfmodels: %s (%s, cache %s%s)", cls, kind, g_cache,
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
