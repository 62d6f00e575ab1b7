/* Task submission shared by every insert_task_* (codelets/codelet_common.h): descriptor arrays,
 * heap args, declared flops, priorities and the process-wide flops counter. */
#include "codelet_common.h"

#include <errno.h>
#include <string.h>

static double g_flops; /* tasks are submitted from one thread */
static long g_tasks;

double sf_tasks_flops_counter(void) { return g_flops; }
long sf_tasks_count_counter(void) { return g_tasks; }
void sf_tasks_counters_reset(void)
{
  g_flops = 0;
  g_tasks = 0;
}

void *sf_args_dup(const void *args, size_t size)
{
  void *p = sf_malloc(size, "codelet arguments");
  memcpy(p, args, size);
  return p;
}

enum starpu_data_access_mode sf_accum_mode(sf_accum acc)
{
  return acc == SF_ACC_COMMUTE ? (enum starpu_data_access_mode)(STARPU_RW | STARPU_COMMUTE) : STARPU_W;
}

void sf_submit(struct starpu_codelet *cl, const sf_topt *o, void *args, size_t args_size, const sf_buf *b,
               double flops)
{
  void *heap = args ? sf_args_dup(args, args_size) : NULL;
  int prio = o ? o->prio : 0;
  int rc = starpu_task_insert(cl, STARPU_CL_ARGS, heap, args ? args_size : 0, STARPU_DATA_MODE_ARRAY, b->d, b->n,
                              STARPU_FLOPS, flops, STARPU_PRIORITY, prio, STARPU_NAME, cl->name, 0);
  if (rc == -ENODEV)
    sf_die(SF_EXIT_FAILURE, "no worker can run codelet %s (check ncpu/ncuda and the codelet's implementations)",
           cl->name);
  if (rc != 0) SF_ABORT("starpu_task_insert(%s) failed with %d", cl->name, rc);
  g_flops += flops;
  g_tasks++;
}
