/* Error reporting, checked allocation and the clock declared in scaffold/common.h. */
#include "scaffold/common.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

void sf_abort_at(const char *file, int line, const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "scaffold: internal error at %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

/* exit() from a thread other than the main one (a StarPU worker running a task: an allocation
 * failure in a kernel or a datagen task) would run the atexit handlers and library destructors
 * (OpenBLAS frees its buffers) while the other workers still compute: a crash instead of a clean
 * error. Such a thread flushes the streams and ends the process with _exit. */
static int on_main_thread(void) { return (pid_t)syscall(SYS_gettid) == getpid(); }

void sf_die(int status, const char *fmt, ...)
{
  va_list ap;
  fflush(stdout);
  fputs("scaffold: error: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  if (!on_main_thread()) {
    fflush(NULL);
    _exit(status);
  }
  exit(status);
}

void sf_warn(const char *fmt, ...)
{
  va_list ap;
  fflush(stdout);
  fputs("scaffold: warning: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void sf_info(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stdout, fmt, ap);
  va_end(ap);
  fputc('\n', stdout);
  fflush(stdout);
}

static void oom(size_t bytes, const char *what)
{
  sf_die(SF_EXIT_FAILURE, "out of memory allocating %zu bytes (%.1f MiB) for %s", bytes,
         (double)bytes / (1024.0 * 1024.0), what ? what : "?");
}

void *sf_malloc(size_t bytes, const char *what)
{
  void *p = malloc(bytes ? bytes : 1);
  if (!p) oom(bytes, what);
  return p;
}

void *sf_calloc(size_t n, size_t elem, const char *what)
{
  void *p = calloc(n ? n : 1, elem ? elem : 1);
  size_t bytes;
  if (!p) oom(__builtin_mul_overflow(n, elem, &bytes) ? SIZE_MAX : bytes, what);
  return p;
}

void *sf_aligned_alloc(size_t bytes, const char *what)
{
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) oom(bytes, what);
  return p;
}

char *sf_strdup(const char *s)
{
  size_t n = strlen(s) + 1;
  char *d = sf_malloc(n, "string");
  memcpy(d, s, n);
  return d;
}

static double (*g_clock)(void);

void sf_set_clock(double (*now_s)(void)) { g_clock = now_s; }

double sf_now(void)
{
  if (g_clock) return g_clock();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int sf_parse_long_in(const char *s, long lo, long hi, long *out)
{
  char *end = NULL;
  if (!s || !*s) return -1;
  errno = 0;
  long x = strtol(s, &end, 10);
  if (errno || *end || x < lo || x > hi) return -1;
  *out = x;
  return 0;
}

double sf_epoch_now(void)
{
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* Sanitizer builds (SF_SANITIZE, SF_FUZZ): LeakSanitizer checks leaks when the process exits with
 * status 0 only. An error exit (sf_die, or any exit(nonzero)) leaves whatever it was doing
 * unfreed by design, so a leak report there would be noise, and its exit status 1 would hide the
 * status that the CLI contract promises (2 for usage errors). The on_exit handler runs before
 * LeakSanitizer's own exit check (registered earlier, so run later), which asks
 * __lsan_is_turned_off first. */
#if defined(__SANITIZE_ADDRESS__)
#define SF_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_HAVE_LSAN 1
#endif
#endif
#ifdef SF_HAVE_LSAN
static volatile int sf_error_exit;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return sf_error_exit; }
static void sf_note_exit_status(int status, void *arg)
{
  (void)arg;
  if (status != 0) sf_error_exit = 1;
}
__attribute__((constructor)) static void sf_install_exit_note(void) { on_exit(sf_note_exit_status, NULL); }
#endif
