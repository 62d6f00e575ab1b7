/* When a test process dies by a signal, one line on stderr says which signal, its process id, and
 * where that process's sanitizer reports are, so CTest's "Subprocess aborted" always comes with a
 * reason: a failed assertion (StarPU's STARPU_ASSERT, assert()) prints its own message above the
 * line; an ASan/UBSan error or a LeakSanitizer failure goes to log_path's DIR/name.PID file
 * (ASAN_OPTIONS / UBSAN_OPTIONS, as scripts/test-sanitize sets them), which the line names.
 * Linked as an object into every sf_add_test executable (tests/CMakeLists.txt): its constructor
 * installs the handlers, nothing calls it. A signal that already has a handler is left to it
 * (ASan's SIGSEGV/SIGBUS/SIGFPE: ASan reports and aborts, which arrives here as SIGABRT). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SF_CRASH_NOTE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_CRASH_NOTE_ASAN 1
#endif
#endif

static const int g_signals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
static char g_name[64];       /* the test's program name */
static char g_asan_log[512];  /* ASAN_OPTIONS log_path prefix, "" when reports go to stderr */
static char g_ubsan_log[512]; /* UBSAN_OPTIONS log_path prefix */

/* The value of the last log_path=... in a sanitizer options string (':' / ',' / ' ' separated). */
static void log_path_of(const char *env, char *out, size_t cap)
{
  out[0] = '\0';
  const char *opts = getenv(env);
  for (const char *p = opts ? strstr(opts, "log_path=") : NULL; p; p = strstr(p + 1, "log_path=")) {
    if (p != opts && !strchr(": ,", p[-1])) continue;
    const char *v = p + strlen("log_path=");
    size_t n = strcspn(v, ": ,");
    if (n >= cap) n = cap - 1;
    memcpy(out, v, n);
    out[n] = '\0';
  }
  if (!strcmp(out, "stderr") || !strcmp(out, "stdout")) out[0] = '\0';
}

static const char *signal_name(int sig)
{
  switch (sig) {
  case SIGABRT: return "SIGABRT (abort)";
  case SIGSEGV: return "SIGSEGV (invalid memory access)";
  case SIGBUS: return "SIGBUS (bus error)";
  case SIGFPE: return "SIGFPE (arithmetic exception)";
  case SIGILL: return "SIGILL (illegal instruction)";
  default: return "a signal";
  }
}

/* Async-signal-safe output: write(2) of strings and of a decimal number. */
static void put(const char *s)
{
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0 && errno != EINTR) return;
    if (w > 0) {
      s += w;
      n -= (size_t)w;
    }
  }
}

/* v in decimal, written at the end of buf (24 bytes); returns where it starts. */
static const char *decimal(long v, char *buf)
{
  int i = 23;
  buf[i] = '\0';
  do {
    buf[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0 && i > 0);
  return buf + i;
}

static void put_long(long v)
{
  char buf[24];
  put(decimal(v, buf));
}

#ifdef SF_CRASH_NOTE_ASAN
/* "PREFIX.PID" into buf (the file a sanitizer's log_path=PREFIX gives process PID); 0 if too long. */
static int log_file(char *buf, size_t cap, const char *prefix, long pid)
{
  char digits[24];
  const char *d = decimal(pid, digits);
  size_t np = strlen(prefix), nd = strlen(d);
  if (np + 1 + nd + 1 > cap) return 0;
  memcpy(buf, prefix, np);
  buf[np] = '.';
  memcpy(buf + np + 1, d, nd + 1);
  return 1;
}

/* Names the sanitizer log files this process wrote (access(2) is async-signal-safe). */
static void put_sanitizer_logs(long pid)
{
  const char *prefixes[] = {g_asan_log, g_ubsan_log};
  int found = 0;
  for (int k = 0; k < 2; k++) {
    char path[600];
    if (!prefixes[k][0] || !log_file(path, sizeof path, prefixes[k], pid) || access(path, F_OK) != 0) continue;
    put(found++ ? ", " : "; its sanitizer report (ASan/UBSan error, LeakSanitizer failure or leaks): ");
    put(path);
  }
  if (!found) {
    put("; no sanitizer log file for this process (");
    put(g_asan_log[0] ? g_asan_log : g_ubsan_log);
    put(".");
    put_long(pid);
    put(" absent)");
  }
}
#endif

static void on_fatal_signal(int sig)
{
  int saved = errno;
  long pid = (long)getpid();
  put("\n");
  put(g_name);
  put(": test process ");
  put_long(pid);
  put(" killed by ");
  put(signal_name(sig));
  put(". A failed assertion (STARPU_ASSERT, assert) prints its message above");
#ifdef SF_CRASH_NOTE_ASAN
  if (g_asan_log[0] || g_ubsan_log[0])
    put_sanitizer_logs(pid);
  else
    put("; a sanitizer report (ASan/UBSan error, LeakSanitizer failure or leaks) would be above on stderr");
#endif
  put("\n");
  errno = saved;
  signal(sig, SIG_DFL); /* die by the same signal, so the exit status stays what CTest reports */
  raise(sig);
}

__attribute__((constructor)) static void sf_crash_note_install(void)
{
  const char *n = program_invocation_short_name;
  snprintf(g_name, sizeof g_name, "%s", n && *n ? n : "test");
  log_path_of("ASAN_OPTIONS", g_asan_log, sizeof g_asan_log);
  log_path_of("UBSAN_OPTIONS", g_ubsan_log, sizeof g_ubsan_log);
  for (size_t i = 0; i < sizeof g_signals / sizeof g_signals[0]; i++) {
    struct sigaction old;
    if (sigaction(g_signals[i], NULL, &old) != 0) continue;
    if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue; /* someone else's */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(g_signals[i], &sa, NULL);
  }
}
