/* The OpenMP executor (runtime: openmp; scaffold/runtime.h): GCC's libgomp runs every submitted
 * task as `#pragma omp task depend(in/out/inout/mutexinoutset: the handles) priority(p)`.
 *
 * OpenMP tasks need a parallel region around the code that creates them, but the graph submits from
 * the application's thread, outside any. So one extra thread (the submitter) opens the region: a team
 * of nworkers + 1 threads, whose thread 0 takes the submissions from a queue and creates the tasks,
 * while the other nworkers threads wait at the region's barrier and run the tasks there. The
 * submitter blocks on the queue when it is empty and never runs tasks itself, so nworkers threads
 * compute, as StarPU's nworkers CPU workers do with the application thread submitting. Waiting
 * counts finished tasks (no taskwait, which would put the submitter to work too). The submitter's time
 * creating the tasks is summed for the per-task cost breakdown (sf_host_spawn_seconds). */
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "host_internal.h"
#include "scaffold/common.h"
#include "worker_priority.h"

typedef struct item {
  struct item *next;
  sf_host_task *t; /* NULL: leave the region */
} item;

static pthread_t g_thread;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv_queue = PTHREAD_COND_INITIALIZER, g_cv_done = PTHREAD_COND_INITIALIZER;
static item *g_head, *g_tail;
static long g_submitted;           /* by the application thread */
static atomic_long g_finished;     /* by the team */
static atomic_int g_waiting;       /* the application thread waits in sf_omp_wait_all */
static atomic_int g_started;       /* workers that have set their priority (sf_omp_start waits for all) */
static int g_nworkers, g_running;
static atomic_llong g_spawn_ns;    /* the submitter's time creating tasks */

double sf_host_spawn_seconds(void) { return (double)atomic_load(&g_spawn_ns) * 1e-9; }

static long long now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static item *pop_wait(void)
{
  pthread_mutex_lock(&g_mu);
  while (!g_head) pthread_cond_wait(&g_cv_queue, &g_mu);
  item *it = g_head;
  g_head = it->next;
  if (!g_head) g_tail = NULL;
  pthread_mutex_unlock(&g_mu);
  return it;
}

static void push(sf_host_task *t)
{
  item *it = sf_malloc(sizeof *it, "OpenMP queue item");
  it->next = NULL;
  it->t = t;
  pthread_mutex_lock(&g_mu);
  if (g_tail) g_tail->next = it;
  else g_head = it;
  g_tail = it;
  pthread_cond_signal(&g_cv_queue);
  pthread_mutex_unlock(&g_mu);
}

static void finish(sf_host_task *t)
{
  sf_host_run(t);
  atomic_fetch_add(&g_finished, 1);
  if (atomic_load(&g_waiting)) {
    pthread_mutex_lock(&g_mu);
    pthread_cond_broadcast(&g_cv_done);
    pthread_mutex_unlock(&g_mu);
  }
}

/* One OpenMP task for t, its dependencies sorted by access mode. */
static void spawn(sf_host_task *t, int max_prio)
{
  char *din[SF_HOST_MAX_BUFFERS], *dout[SF_HOST_MAX_BUFFERS], *dio[SF_HOST_MAX_BUFFERS], *dmx[SF_HOST_MAX_BUFFERS];
  int nin = 0, nout = 0, nio = 0, nmx = 0;
  for (int i = 0; i < t->n; i++) {
    int m = t->mode[i];
    if (m & SF_ACCESS_COMMUTE) dmx[nmx++] = t->dep[i];
    else if (m == SF_ACCESS_R) din[nin++] = t->dep[i];
    else if (m == SF_ACCESS_W) dout[nout++] = t->dep[i];
    else dio[nio++] = t->dep[i];
  }
  int prio = t->prio < 0 ? 0 : t->prio > max_prio ? max_prio : t->prio;
#pragma omp task firstprivate(t) priority(prio) depend(iterator(i0 = 0 : nin), in : *din[i0])                     \
    depend(iterator(i1 = 0 : nout), out : *dout[i1]) depend(iterator(i2 = 0 : nio), inout : *dio[i2])              \
    depend(iterator(i3 = 0 : nmx), mutexinoutset : *dmx[i3])
  finish(t);
}

static void *submitter(void *arg)
{
  (void)arg;
  int max_prio = omp_get_max_task_priority();
#pragma omp parallel num_threads(g_nworkers + 1)
  {
    if (omp_get_thread_num() != 0) { /* a worker: lower its priority (worker_nice), then run tasks */
      sf_worker_priority_apply(NULL);
      atomic_fetch_add(&g_started, 1);
    } else {
      for (;;) {
        item *it = pop_wait();
        sf_host_task *t = it->t;
        free(it);
        if (!t) break;
        long long t0 = now_ns();
        spawn(t, max_prio);
        atomic_fetch_add(&g_spawn_ns, now_ns() - t0);
      }
    }
  } /* the workers run the tasks at this barrier */
  return NULL;
}

void sf_omp_start(int nworkers)
{
  SF_ASSERT(!g_running && nworkers >= 1);
  g_nworkers = nworkers;
  g_submitted = 0;
  atomic_store(&g_finished, 0);
  atomic_store(&g_started, 0);
  omp_set_dynamic(0);
  if (pthread_create(&g_thread, NULL, submitter, NULL) != 0) sf_die(SF_EXIT_FAILURE, "cannot start the OpenMP team");
  while (atomic_load(&g_started) < nworkers) sched_yield(); /* so that the run header reports every worker */
  g_running = 1;
}

void sf_omp_submit(sf_host_task *t)
{
  SF_ASSERT(g_running);
  g_submitted++;
  push(t);
}

void sf_omp_wait_all(void)
{
  if (!g_running) return;
  pthread_mutex_lock(&g_mu);
  atomic_store(&g_waiting, 1);
  while (atomic_load(&g_finished) < g_submitted) pthread_cond_wait(&g_cv_done, &g_mu);
  atomic_store(&g_waiting, 0);
  pthread_mutex_unlock(&g_mu);
}

void sf_omp_stop(void)
{
  if (!g_running) return;
  sf_omp_wait_all();
  push(NULL);
  pthread_join(g_thread, NULL);
  g_running = 0;
}
