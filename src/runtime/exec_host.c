/* Task submission for the host executors (scaffold/host_exec.h): the sequential executor runs each
 * task at once in the calling thread, in submission order; the OpenMP executor (exec_openmp.c)
 * queues it for its team. */
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"
#include "scaffold/common.h"
#include "scaffold/runtime.h"

void sf_host_submit(const char *name, sf_run_fn run, void *args, int n, const sf_handle *h, const int *modes,
                    int prio)
{
  if (n < 0 || n > SF_HOST_MAX_BUFFERS) SF_ABORT("%s: %d buffers (at most %d)", name, n, SF_HOST_MAX_BUFFERS);
  sf_rt_kind k = sf_runtime_which();
  if (k == SF_RT_SEQUENTIAL) {
    void *buf[SF_HOST_MAX_BUFFERS];
    for (int i = 0; i < n; i++) buf[i] = &SF_HD(h[i])->iface;
    sf_host_run_fn(run, buf, n, args);
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
