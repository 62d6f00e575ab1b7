/* Task submission shared by every insert_task_* (codelets/codelet_common.h): descriptor arrays,
 * heap args, declared flops, priorities and the process-wide flops counter. The caller's sf_topt
 * picks the path: mpi = 1 (the tasks of a spatially distributed replica, scaffold/dist.h) goes
 * through starpu_mpi_task_insert, where every rank of the replica submits every task and StarPU-MPI
 * runs it on the owner of the data it writes and moves the data it reads; mpi = 0 takes the plain
 * starpu_task_insert path. Under runtime openmp or sequential (scaffold/runtime.h) the task goes to
 * the host executor instead: the codelet's CPU function (its "run on these pointers" function) with
 * the handles' access modes and the priority (scaffold/host_exec.h). The submitting thread's time inside
 * sf_submit is summed with the counters (sf_tasks_submit_seconds_counter), the submission cost per task. */
#include "codelet_common.h"
#include "scaffold/graph_record.h" /* export_graph: the one hook per submission path */

#include <errno.h>
#include <string.h>

#include "scaffold/runtime.h"

#ifdef SF_HAVE_MPI
#include <starpu_mpi.h>
#endif

static double g_flops; /* tasks are submitted from one thread */
static long g_tasks;
static double g_submit_s; /* time spent in sf_submit */

double sf_tasks_flops_counter(void) { return g_flops; }
long sf_tasks_count_counter(void) { return g_tasks; }
double sf_tasks_submit_seconds_counter(void) { return g_submit_s; }
void sf_tasks_counters_reset(void)
{
  g_flops = 0;
  g_tasks = 0;
  g_submit_s = 0;
}

void *sf_args_dup(const void *args, size_t size)
{
  void *p = sf_malloc(size, "codelet arguments");
  memcpy(p, args, size);
  return p;
}

enum starpu_data_access_mode sf_accum_mode(sf_accum acc)
{
  switch (acc) {
  case SF_ACC_COMMUTE: return (enum starpu_data_access_mode)(STARPU_RW | STARPU_COMMUTE);
  case SF_ACC_ADD: return STARPU_RW;
  case SF_ACC_PARTIAL: break;
  }
  return STARPU_W;
}

#ifdef SF_HAVE_MPI
/* The StarPU-MPI path: the task runs on the owner of the data it writes (all of one owner, or all
 * replicated per node); on the other ranks starpu_mpi_task_insert only posts the sends of data they
 * own, and the argument copy is ours to free. */
static void submit_mpi(struct starpu_codelet *cl, const sf_topt *o, void *args, size_t args_size, const sf_buf *b,
                       double flops)
{
  int inited = 1, me = -1, xrank = -1;
#ifndef STARPU_SIMGRID /* under SMPI the program's main is no MPI process; StarPU-MPI's calls work (dist.c) */
  MPI_Initialized(&inited);
#endif
  if (!inited) SF_ABORT("%s: submitted with sf_topt.mpi = 1, but MPI is not running", cl->name);
  starpu_mpi_comm_rank(MPI_COMM_WORLD, &me);
  for (int i = 0; i < b->n; i++)
    if (b->d[i].mode & (STARPU_W | STARPU_REDUX)) {
      int r = starpu_mpi_data_get_rank(b->d[i].handle);
      if (r == -1) SF_ABORT("%s: buffer %d is written but not registered with StarPU-MPI", cl->name, i);
      if (xrank == -1) xrank = r;
      else if (r != xrank) SF_ABORT("%s: written buffers belong to ranks %d and %d", cl->name, xrank, r);
    }
  if (xrank == -1) SF_ABORT("%s: a task without written data cannot be placed on a rank", cl->name);
  int here = xrank == me || xrank == STARPU_MPI_PER_NODE;
  void *heap = args ? sf_args_dup(args, args_size) : NULL;
  int prio = o->prio;
  int rc = starpu_mpi_task_insert(MPI_COMM_WORLD, cl, STARPU_CL_ARGS, heap, args ? args_size : 0,
                                  STARPU_DATA_MODE_ARRAY, b->d, b->n, STARPU_FLOPS, flops, STARPU_PRIORITY, prio,
                                  STARPU_NAME, cl->name, 0);
  if (rc != 0) SF_ABORT("starpu_mpi_task_insert(%s) failed with %d", cl->name, rc);
  if (!here) {
    free(heap); /* no task was created here */
    return;
  }
  sf_graph_record_task(cl, prio, flops, b->d, b->n);
  g_flops += flops;
  g_tasks++;
}
#endif

/* The host executors' path: StarPU's access modes become scaffold/host_exec.h's. */
static void submit_host(struct starpu_codelet *cl, const sf_topt *o, void *args, size_t args_size, const sf_buf *b,
                        double flops)
{
  if (!cl->cpu_funcs[0]) SF_ABORT("%s: no CPU function for runtime %s", cl->name, sf_runtime_kind_name(sf_runtime_which()));
  sf_handle h[SF_HOST_MAX_BUFFERS];
  int modes[SF_HOST_MAX_BUFFERS];
  for (int i = 0; i < b->n; i++) {
    enum starpu_data_access_mode m = b->d[i].mode;
    h[i] = (sf_handle)b->d[i].handle;
    modes[i] = ((m & STARPU_R) ? SF_ACCESS_R : 0) | ((m & STARPU_W) ? SF_ACCESS_W : 0) |
               ((m & STARPU_COMMUTE) ? SF_ACCESS_COMMUTE : 0);
  }
  g_flops += flops;
  g_tasks++;
  sf_host_submit(cl->name, cl->cpu_funcs[0], args ? sf_args_dup(args, args_size) : NULL, b->n, h, modes,
                 o ? o->prio : 0);
}

static void submit_any(struct starpu_codelet *cl, const sf_topt *o, void *args, size_t args_size, const sf_buf *b,
                       double flops)
{
  if (o && o->flops_share > 0) flops *= o->flops_share;
  if (sf_runtime_which() != SF_RT_STARPU) {
    if (o && o->mpi) SF_ABORT("%s: submitted with sf_topt.mpi = 1 under runtime %s", cl->name,
                              sf_runtime_kind_name(sf_runtime_which()));
    submit_host(cl, o, args, args_size, b, flops);
    return;
  }
  if (o && o->mpi) {
#ifdef SF_HAVE_MPI
    submit_mpi(cl, o, args, args_size, b, flops);
    return;
#else
    SF_ABORT("%s: submitted with sf_topt.mpi = 1, but this build has no MPI", cl->name);
#endif
  }
  void *heap = args ? sf_args_dup(args, args_size) : NULL;
  int prio = o ? o->prio : 0;
  int rc = starpu_task_insert(cl, STARPU_CL_ARGS, heap, args ? args_size : 0, STARPU_DATA_MODE_ARRAY, b->d, b->n,
                              STARPU_FLOPS, flops, STARPU_PRIORITY, prio, STARPU_NAME, cl->name, 0);
  if (rc == -ENODEV)
    sf_die(SF_EXIT_FAILURE, "no worker can run codelet %s (check ncpu/ncuda and the codelet's implementations)",
           cl->name);
  if (rc != 0) SF_ABORT("starpu_task_insert(%s) failed with %d", cl->name, rc);
  sf_graph_record_task(cl, prio, flops, b->d, b->n);
  g_flops += flops;
  g_tasks++;
}

void sf_submit(struct starpu_codelet *cl, const sf_topt *o, void *args, size_t args_size, const sf_buf *b,
               double flops)
{
  double t0 = sf_now();
  submit_any(cl, o, args, args_size, b, flops);
  g_submit_s += sf_now() - t0;
}
