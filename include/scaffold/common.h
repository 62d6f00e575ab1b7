/* Project-wide helpers: error reporting in three levels, checked allocation, small utilities.
 *
 *   SF_ABORT(fmt, ...)        "cannot happen": prints file:line and aborts.
 *   SF_ASSERT(cond)           internal invariant (kept in release builds; it is cheap).
 *   sf_die(status, fmt, ...)  a user/config/IO error: prints "scaffold: error: ..." and exits with status.
 *
 * Exit statuses are part of the CLI contract: SF_EXIT_USAGE (2) for bad configuration or arguments,
 * SF_EXIT_FAILURE (1) for runtime failures, SF_EXIT_INTERRUPTED (130) for SIGINT/SIGTERM stops. */
#ifndef SF_COMMON_H
#define SF_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SF_EXIT_FAILURE 1
#define SF_EXIT_USAGE 2
#define SF_EXIT_INTERRUPTED 130

#define SF_ABORT(...) sf_abort_at(__FILE__, __LINE__, __VA_ARGS__)
#define SF_ASSERT(cond) \
  do { if (!(cond)) sf_abort_at(__FILE__, __LINE__, "assertion failed: %s", #cond); } while (0)

__attribute__((noreturn, format(printf, 3, 4))) void sf_abort_at(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn, format(printf, 2, 3))) void sf_die(int status, const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void sf_warn(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void sf_info(const char *fmt, ...);

/* Allocation that never returns NULL: on failure it exits with a message naming the size and what for. */
void *sf_malloc(size_t bytes, const char *what);
void *sf_calloc(size_t n, size_t elem, const char *what);
void *sf_aligned_alloc(size_t bytes, const char *what); /* 64-byte aligned, free with free() */
char *sf_strdup(const char *s);

/* Wall clock in seconds (CLOCK_MONOTONIC), or the clock installed by sf_set_clock. */
double sf_now(void);
/* Replaces the clock sf_now reads (NULL restores CLOCK_MONOTONIC). The runtime installs StarPU's
 * simulated clock under its SimGrid mode (scaffold-sim, docs/simulation.md), where the wall clock says
 * nothing about the simulated machine. */
void sf_set_clock(double (*now_s)(void));
/* Parses a whole decimal integer within [lo, hi] into *out. Returns 0, or -1 (empty, trailing text, out of
 * range) leaving *out unchanged. */
int sf_parse_long_in(const char *s, long lo, long hi, long *out);
/* Seconds since the Unix epoch (gettimeofday), for timestamps in results and rate logs. */
double sf_epoch_now(void);

static inline size_t sf_min_sz(size_t a, size_t b) { return a < b ? a : b; }
static inline size_t sf_max_sz(size_t a, size_t b) { return a > b ? a : b; }
static inline int sf_ceil_div(int a, int b) { return (a + b - 1) / b; }

#endif
