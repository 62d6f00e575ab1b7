/* What the kernel benchmarks (tests/kernels_conv/bench_*.c, not tests) share: the calling thread's CPU time,
 * so time spent descheduled on a machine shared with other jobs does not count against a kernel (cache misses
 * other jobs cause still do), and the median of a run's repetitions (sorted in place). */
#ifndef SF_BENCHUTIL_H
#define SF_BENCHUTIL_H

#include <stdlib.h>
#include <time.h>

static inline double bench_thread_seconds(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static inline double bench_median(double *t, int n)
{
  qsort(t, (size_t)n, sizeof(double), bench_cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

#endif
