/* config worker_nice: each worker thread of the runtime lowers its own priority (worker_priority.h). */
#include "worker_priority.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scaffold/common.h"

static long g_increment;
static int g_auto; /* the increment came from worker_nice -1 */
static int g_base, g_lo, g_hi, g_count;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

/* The calling thread's nice value (Linux: a per-thread attribute, addressed by thread id). */
static int thread_nice(void)
{
  errno = 0;
  int n = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
  return errno ? 0 : n;
}

long sf_worker_nice_resolve(long worker_nice, int distributed)
{
  if (worker_nice >= 0) return worker_nice;
  return distributed ? 0 : 5;
}

void sf_worker_priority_prepare(long worker_nice, int distributed)
{
  pthread_mutex_lock(&g_mu);
  g_increment = sf_worker_nice_resolve(worker_nice, distributed);
  g_auto = worker_nice < 0;
  g_base = thread_nice();
  g_lo = g_hi = g_count = 0;
  pthread_mutex_unlock(&g_mu);
}

void sf_worker_priority_apply(void *unused)
{
  (void)unused;
  if (g_increment <= 0) return;
  long want = g_base + g_increment;
  if (want > 19) want = 19;
  if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), (int)want) != 0)
    sf_warn("worker_nice: a worker thread could not set its nice value to %ld: errno %d", want, errno);
  int now = thread_nice();
  pthread_mutex_lock(&g_mu);
  if (g_count == 0 || now < g_lo) g_lo = now;
  if (g_count == 0 || now > g_hi) g_hi = now;
  g_count++;
  pthread_mutex_unlock(&g_mu);
}

void sf_worker_priority_summary(int *lo, int *hi, int *count)
{
  pthread_mutex_lock(&g_mu);
  *lo = g_lo, *hi = g_hi, *count = g_count;
  pthread_mutex_unlock(&g_mu);
}

char *sf_worker_priority_describe(char *buf, unsigned long len)
{
  int lo, hi, n;
  sf_worker_priority_summary(&lo, &hi, &n);
  char key[48];
  if (g_auto) snprintf(key, sizeof key, "worker_nice auto: %ld%s", g_increment, g_increment ? "" : " under mpirun");
  else snprintf(key, sizeof key, "worker_nice %ld", g_increment);
  if (g_increment <= 0 || n == 0) snprintf(buf, len, "at the process's nice %d (%s)", g_base, key);
  else if (lo == hi) snprintf(buf, len, "%d at nice %d (the process's %d + %s)", n, lo, g_base, key);
  else snprintf(buf, len, "%d at nice %d to %d (the process's %d + %s)", n, lo, hi, g_base, key);
  return buf;
}
