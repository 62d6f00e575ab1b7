/* Running one host task (scaffold/host_exec.h), for both host executors: the sequential one runs it in
 * the submitting thread (exec_host.c), the OpenMP one in a team thread (exec_openmp.c). Counts the
 * time spent in task bodies and makes the running task's buffer count visible to its kernel. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "host_internal.h"
#include "scaffold/common.h"
#include "scaffold/runtime.h"

static __thread int tl_nbuffers; /* of the host task running in this thread */
static atomic_llong g_kernel_ns;  /* summed run times of every host task */

int sf_host_nbuffers(void) { return tl_nbuffers; }

double sf_host_kernel_seconds(void) { return (double)atomic_load(&g_kernel_ns) * 1e-9; }

void sf_host_run_fn(sf_run_fn run, void *buffers[], int n, void *args)
{
  struct timespec a, b;
  tl_nbuffers = n;
  clock_gettime(CLOCK_MONOTONIC, &a);
  run(buffers, args);
  clock_gettime(CLOCK_MONOTONIC, &b);
  tl_nbuffers = 0;
  atomic_fetch_add(&g_kernel_ns, (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
  free(args);
}

void sf_host_run(sf_host_task *t)
{
  sf_host_run_fn(t->run, t->buf, t->n, t->args);
  free(t);
}
