/* Task submission for the host executors (scaffold/host_exec.h): the sequential executor runs each
 * task at once in the calling thread, in submission order; the OpenMP executor (exec_openmp.c)
 * queues it for its team. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_internal.h"
#include "scaffold/common.h"
#include "scaffold/runtime.h"

static __thread int tl_nbuffers; /* of the host task running in this thread */
static atomic_llong g_kernel_ns;  /* summed run times of every host task */

int sf_host_nbuffers(void) { return tl_nbuffers; }

double sf_host_kernel_seconds(void) { return (double)atomic_load(&g_kernel_ns) * 1e-9; }

static void run_fn(sf_run_fn run, void *buffers[], int n, void *args)
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
  run_fn(t->run, t->buf, t->n, t->args);
  free(t);
}

void sf_host_submit(const char *name, sf_run_fn run, void *args, int n, const sf_handle *h, const int *modes,
                    int prio)
{
  if (n < 0 || n > SF_HOST_MAX_BUFFERS) SF_ABORT("%s: %d buffers (at most %d)", name, n, SF_HOST_MAX_BUFFERS);
  sf_rt_kind k = sf_runtime_which();
  if (k == SF_RT_SEQUENTIAL) {
    void *buf[SF_HOST_MAX_BUFFERS];
    for (int i = 0; i < n; i++) buf[i] = &SF_HD(h[i])->iface;
    run_fn(run, buf, n, args);
    return;
  }
  if (k != SF_RT_OPENMP) SF_ABORT("%s: host task submitted under runtime %s", name, sf_runtime_kind_name(k));
  sf_host_task *t = sf_malloc(sizeof *t, "host task");
  t->name = name;
  t->run = run;
  t->args = args;
  t->n = n;
  t->prio = prio;
  for (int i = 0; i < n; i++) {
    SF_ASSERT(h[i] != NULL);
    t->buf[i] = &SF_HD(h[i])->iface;
    t->dep[i] = &SF_HD(h[i])->dep;
    t->mode[i] = modes[i];
  }
  sf_omp_submit(t);
}
