/* The fuzz targets' shared plumbing (see fuzz_common.h): sf_die redirected to a longjmp
 * (__wrap_sf_die, linked with -Wl,--wrap=sf_die), the allocations of a dying call freed after it,
 * inputs as memfd or temporary files, and the failure report of an oracle. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "fuzz_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scaffold/fsutil.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_FUZZ_HAVE_LSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(SF_FUZZ_HAVE_LSAN)
#define SF_FUZZ_HAVE_LSAN 1
#endif

sf_fuzz_die_ctx sf_fuzz_die;

void sf_fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "FUZZ ORACLE FAILED at %s:%d: %s: ", file, line, cond);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

/* Replaces sf_die for every caller outside src/util/common.c. */
__attribute__((noreturn)) void __wrap_sf_die(int status, const char *fmt, ...);
void __wrap_sf_die(int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sf_fuzz_die.msg, sizeof sf_fuzz_die.msg, fmt, ap);
  va_end(ap);
  if (!sf_fuzz_die.active) {
    fprintf(stderr, "FUZZ: sf_die(%d) outside an expected error path: %s\n", status, sf_fuzz_die.msg);
    abort();
  }
  SF_FUZZ_ASSERT(sf_fuzz_die.msg[0] != '\0', "sf_die(%d) with an empty message", status);
  sf_fuzz_die.status = status;
  longjmp(sf_fuzz_die.env, 1);
}

/* ---- what a dying call left allocated ---------------------------------------------------------
 * An open-addressing set of the live allocations made inside sf_fuzz_try (linear probing,
 * tombstones), filled by the sanitizer runtime's malloc/free hooks. No allocation in the hooks.
 * Only the thread inside sf_fuzz_try is tracked: the hooks see every thread's allocations, and
 * libFuzzer starts threads of its own (one starting mid-run allocated and freed its stack attributes
 * while tracking was on, racing the table, and track_reset then freed that block a second time). */
#define TRACK_BITS 18
#define TRACK_CAP (1u << TRACK_BITS)
#define TOMB ((const volatile void *)1)
static const volatile void *track_tab[TRACK_CAP];
static uint32_t track_used[TRACK_CAP / 2]; /* slots written since the last reset */
static size_t track_nused;
static int tracking, track_overflow;
static pthread_t track_thread; /* the thread inside sf_fuzz_try */

static int track_mine(void) { return tracking && pthread_equal(pthread_self(), track_thread); }

static size_t track_hash(const volatile void *p)
{
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 29;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> (64 - TRACK_BITS));
}

__attribute__((unused)) static void track_malloc(const volatile void *p, size_t size)
{
  (void)size;
  if (!p || !track_mine()) return;
  if (track_nused >= TRACK_CAP / 2) {
    track_overflow = 1;
    return;
  }
  size_t i = track_hash(p);
  while (track_tab[i] && track_tab[i] != TOMB) i = (i + 1) & (TRACK_CAP - 1);
  if (!track_tab[i]) track_used[track_nused++] = (uint32_t)i;
  track_tab[i] = p;
}

__attribute__((unused)) static void track_free(const volatile void *p)
{
  if (!p || !track_mine()) return;
  for (size_t i = track_hash(p); track_tab[i]; i = (i + 1) & (TRACK_CAP - 1))
    if (track_tab[i] == p) {
      track_tab[i] = TOMB;
      return;
    }
}

/* Frees (free_live) or forgets every recorded allocation; stops tracking. */
static void track_reset(int free_live)
{
  tracking = 0;
  for (size_t k = 0; k < track_nused; k++) {
    const volatile void *p = track_tab[track_used[k]];
    if (free_live && p && p != TOMB) free((void *)p);
    track_tab[track_used[k]] = NULL;
  }
  track_nused = 0;
}

#ifdef SF_FUZZ_HAVE_LSAN
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
#endif

int sf_fuzz_try(void (*fn)(void *arg), void *arg)
{
#ifdef SF_FUZZ_HAVE_LSAN
  static int hooks;
  if (!hooks) hooks = __sanitizer_install_malloc_and_free_hooks(track_malloc, track_free) ? 1 : -1;
  if (hooks < 0) sf_fuzz_fail(__FILE__, __LINE__, "hooks", "cannot install the sanitizer malloc/free hooks");
  track_reset(0);
  track_overflow = 0;
  track_thread = pthread_self();
  tracking = 1;
#endif
  sf_fuzz_die.msg[0] = '\0';
  sf_fuzz_die.active = 1;
  if (setjmp(sf_fuzz_die.env) != 0) {
    sf_fuzz_die.active = 0;
    /* Without the complete record, freeing a part could leave dangling pointers in the rest:
     * free nothing (the memory stays, as in the real program's exit). */
    track_reset(!track_overflow);
    return sf_fuzz_die.status;
  }
  fn(arg);
  sf_fuzz_die.active = 0;
  track_reset(0);
  return 0;
}

/* ---- inputs as files ------------------------------------------------------------------------ */

static int g_memfd = -1;
static char g_memfd_path[64];
static char *g_tmpdir;
static char g_tmp_path[4096];

const char *sf_fuzz_memfd_path(const uint8_t *data, size_t size)
{
  if (g_memfd < 0) {
    g_memfd = memfd_create("sf-fuzz-input", 0);
    if (g_memfd < 0) sf_fuzz_fail(__FILE__, __LINE__, "memfd_create", "%s", strerror(errno));
    snprintf(g_memfd_path, sizeof g_memfd_path, "/proc/self/fd/%d", g_memfd);
  }
  if (ftruncate(g_memfd, 0) != 0) sf_fuzz_fail(__FILE__, __LINE__, "ftruncate", "%s", strerror(errno));
  size_t done = 0;
  while (done < size) {
    ssize_t w = pwrite(g_memfd, data + done, size - done, (off_t)done);
    if (w <= 0) sf_fuzz_fail(__FILE__, __LINE__, "pwrite", "%s", strerror(errno));
    done += (size_t)w;
  }
  return g_memfd_path;
}

static void remove_tmpdir(void)
{
  if (g_tmpdir) sf_remove_tree(g_tmpdir);
}

const char *sf_fuzz_tmp_dir(void)
{
  if (!g_tmpdir) {
    /* $TMPDIR first: scripts/fuzz-smoke points it at a scratch directory that it removes, since
     * libFuzzer's crash and time-out exits skip atexit. */
    const char *t = getenv("TMPDIR");
    const char *base = t && *t ? t : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/sf-fuzz-XXXXXX", base);
    if (!mkdtemp(buf)) sf_fuzz_fail(__FILE__, __LINE__, "mkdtemp", "%s: %s", buf, strerror(errno));
    g_tmpdir = buf;
    atexit(remove_tmpdir);
  }
  return g_tmpdir;
}

const char *sf_fuzz_tmp_path(const char *name)
{
  int n = snprintf(g_tmp_path, sizeof g_tmp_path, "%s/%s", sf_fuzz_tmp_dir(), name);
  if (n < 0 || (size_t)n >= sizeof g_tmp_path)
    sf_fuzz_fail(__FILE__, __LINE__, "tmp path", "%s/%s is longer than %zu bytes", sf_fuzz_tmp_dir(), name,
                 sizeof g_tmp_path - 1);
  return g_tmp_path;
}

void sf_fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
  FILE *f = fopen(path, "wb");
  if (!f) sf_fuzz_fail(__FILE__, __LINE__, "fopen", "%s: %s", path, strerror(errno));
  if (size && fwrite(data, 1, size, f) != size) sf_fuzz_fail(__FILE__, __LINE__, "fwrite", "%s", path);
  if (fclose(f) != 0) sf_fuzz_fail(__FILE__, __LINE__, "fclose", "%s: %s", path, strerror(errno));
}

FILE *sf_fuzz_devnull(void)
{
  static FILE *f;
  if (!f) f = fopen("/dev/null", "w");
  if (!f) sf_fuzz_fail(__FILE__, __LINE__, "fopen", "/dev/null: %s", strerror(errno));
  return f;
}
