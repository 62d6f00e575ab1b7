/* LD_PRELOAD fault injection for the reliability tests (not a test by itself). It counts the calls
 * that change files - fwrite, write, fsync, rename - on paths that contain one of the '|'-separated
 * substrings of $SF_FAULT_MATCH (every path when unset), and at the $SF_FAULT_AT-th such call
 * raises $SF_FAULT_SIGNAL in the calling thread:
 *   KILL (default)  the process dies there, exactly as under an outside `kill -9` at that instant;
 *                   with SF_FAULT_TORN=1 a fwrite/write first writes half its bytes (a torn write)
 *   INT, TERM       delivered to the program's own handler (a reproducible Ctrl-C), at that call
 *                   and at the next SF_FAULT_REPEAT - 1 counted calls (default 1: once)
 * SF_FAULT_LOG=FILE appends "N function path" for every counted call (to size the kill points).
 * SF_FAULT_ALLOC_MIN=BYTES makes the program's own posix_memalign and starpu_malloc_flags calls
 * (the ones made from the executable: sf_aligned_alloc, sf_data_alloc) fail with ENOMEM from that
 * size on - an out-of-memory that hits only the big buffers, never the libraries' own allocations.
 * Only the program named $SF_FAULT_EXE (default scaffold) is affected, not the shells and gnuplot
 * processes that inherit LD_PRELOAD.
 * The n-th call is well defined even with several writer threads (an atomic counter), so a seeded
 * choice of SF_FAULT_AT gives a reproducible kill point. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static atomic_long g_count;
static long g_at = -1;
static int g_sig = SIGKILL, g_torn;
static const char *g_match, *g_log;
static long g_repeat = 1;
static int g_active;
static size_t g_alloc_min;
static void *g_exe_base;

__attribute__((constructor)) static void shim_init(void)
{
  const char *at = getenv("SF_FAULT_AT"), *sig = getenv("SF_FAULT_SIGNAL"), *torn = getenv("SF_FAULT_TORN");
  g_at = at && *at ? atol(at) : -1;
  if (sig && !strcmp(sig, "INT")) g_sig = SIGINT;
  else if (sig && !strcmp(sig, "TERM")) g_sig = SIGTERM;
  g_torn = torn && !strcmp(torn, "1");
  const char *rep = getenv("SF_FAULT_REPEAT");
  g_repeat = rep && atol(rep) > 1 ? atol(rep) : 1;
  g_match = getenv("SF_FAULT_MATCH");
  if (g_match && !*g_match) g_match = NULL;
  g_log = getenv("SF_FAULT_LOG");
  if (g_log && !*g_log) g_log = NULL;
  /* Only in the program named by SF_FAULT_EXE (default "scaffold"), not in the shell running
   * restart.sh nor in the gnuplot that benchmark starts, which inherit LD_PRELOAD. */
  const char *want = getenv("SF_FAULT_EXE");
  char exe[1024];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[k > 0 ? k : 0] = '\0';
  const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
  g_active = !strcmp(base, want && *want ? want : "scaffold");
  const char *amin = getenv("SF_FAULT_ALLOC_MIN");
  g_alloc_min = amin && *amin ? (size_t)strtoull(amin, NULL, 10) : 0;
  Dl_info di;
  if (dladdr((void *)getauxval(AT_PHDR), &di)) g_exe_base = di.dli_fbase;
}

/* 1 when an allocation of `bytes` called from `caller` is to fail. */
static int alloc_fails(size_t bytes, void *caller)
{
  if (!g_active || !g_alloc_min || bytes < g_alloc_min || !g_exe_base) return 0;
  Dl_info di;
  return dladdr(caller, &di) && di.dli_fbase == g_exe_base;
}

int posix_memalign(void **p, size_t align, size_t bytes)
{
  static int (*real)(void **, size_t, size_t);
  if (!real) real = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  if (alloc_fails(bytes, __builtin_return_address(0))) return ENOMEM;
  return real(p, align, bytes);
}

/* StarPU 1.3: int starpu_malloc_flags(void **A, size_t dim, int flags); 0 or -ENOMEM. */
int starpu_malloc_flags(void **a, size_t dim, int flags)
{
  static int (*real)(void **, size_t, int);
  if (!real) real = (int (*)(void **, size_t, int))dlsym(RTLD_NEXT, "starpu_malloc_flags");
  if (alloc_fails(dim, __builtin_return_address(0))) {
    *a = NULL;
    return -ENOMEM;
  }
  return real(a, dim, flags);
}

static int matches(const char *path)
{
  if (!g_match) return 1;
  if (!path) return 0;
  const char *m = g_match;
  while (*m) {
    const char *bar = strchr(m, '|');
    size_t n = bar ? (size_t)(bar - m) : strlen(m);
    if (n) {
      char sub[512];
      if (n >= sizeof sub) n = sizeof sub - 1;
      memcpy(sub, m, n);
      sub[n] = '\0';
      if (strstr(path, sub)) return 1;
    }
    if (!bar) break;
    m = bar + 1;
  }
  return 0;
}

static const char *fd_path(int fd, char *buf, size_t len)
{
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t k = readlink(link, buf, len - 1);
  if (k <= 0) return NULL;
  buf[k] = '\0';
  return buf;
}

static void log_call(long n, const char *fn, const char *path)
{
  if (!g_log) return;
  static ssize_t (*real_write)(int, const void *, size_t);
  if (!real_write) real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  int fd = open(g_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[1200];
  int k = snprintf(line, sizeof line, "%ld %s %s\n", n, fn, path ? path : "?");
  if (k > 0) real_write(fd, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
  close(fd);
}

/* 1 when this counted call is the one to fail at (the caller then tears/kills). */
static int count_call(const char *fn, const char *path)
{
  if (!g_active || !matches(path)) return 0;
  long n = atomic_fetch_add(&g_count, 1) + 1;
  log_call(n, fn, path);
  return g_at > 0 && n >= g_at && (g_sig == SIGKILL ? n == g_at : n < g_at + g_repeat);
}

static void fire(void) { raise(g_sig); }

size_t fwrite(const void *ptr, size_t size, size_t nmemb, FILE *stream)
{
  static size_t (*real)(const void *, size_t, size_t, FILE *);
  if (!real) real = (size_t(*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite");
  char buf[1024];
  int fd = fileno(stream);
  if (fd > 2 && count_call("fwrite", fd_path(fd, buf, sizeof buf))) {
    if (g_sig == SIGKILL && g_torn && size * nmemb > 1) {
      real(ptr, 1, size * nmemb / 2, stream);
      fflush(stream);
    }
    fire();
  }
  return real(ptr, size, nmemb, stream);
}

ssize_t write(int fd, const void *ptr, size_t len)
{
  static ssize_t (*real)(int, const void *, size_t);
  if (!real) real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  char buf[1024];
  if (fd > 2 && count_call("write", fd_path(fd, buf, sizeof buf))) {
    if (g_sig == SIGKILL && g_torn && len > 1) real(fd, ptr, len / 2);
    fire();
  }
  return real(fd, ptr, len);
}

int fsync(int fd)
{
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  char buf[1024];
  if (count_call("fsync", fd_path(fd, buf, sizeof buf))) fire();
  return real(fd);
}

int rename(const char *from, const char *to)
{
  static int (*real)(const char *, const char *);
  if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  if (count_call("rename", to)) fire();
  return real(from, to);
}
