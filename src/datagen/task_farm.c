/* Independent CPU tasks without data handles for the data generation phases (task_farm.h): one
 * codelet per kind, made at its first use (a CPU function that calls kind->run, and the kind's
 * history perfmodel with its footprint hashed as crc32c of two 64-bit words), tasks that the farm
 * waits for itself (not detached), so other users' tasks are never waited for. Under runtime openmp
 * or sequential the farm's tasks go to the host executor (scaffold/host_exec.h), without handles, and
 * the farm waits for every task (the data generation phases submit nothing else meanwhile). */
#include "task_farm.h"

#include <errno.h>
#include <starpu.h>
#include <stdlib.h>

#include "scaffold/common.h"
#include "scaffold/host_exec.h"
#include "scaffold/runtime.h"

struct sf_farm_impl {
  struct starpu_codelet cl;
  struct starpu_perfmodel model;
};

struct sf_task_farm {
  sf_farm_kind *kind;
  struct starpu_task **tasks;
  long n, cap;
};

typedef struct {
  const sf_farm_kind *kind;
  void *arg;
} farm_arg;

static void farm_cpu(void *buffers[], void *cl_arg)
{
  (void)buffers;
  const farm_arg *a = cl_arg;
  a->kind->run(a->arg);
}

static uint32_t farm_footprint(struct starpu_task *task)
{
  const farm_arg *a = task->cl_arg;
  uint64_t key[2] = {0, 0};
  a->kind->footprint(a->arg, key);
  return starpu_hash_crc32c_be_n(key, sizeof key, 0);
}

/* The kind's codelet (and perfmodel), kept for the process's lifetime: StarPU writes a perfmodel's
 * history at shut-down and may start again later. */
static struct starpu_codelet *codelet_of(sf_farm_kind *k)
{
  if (k->impl) return &k->impl->cl;
  struct sf_farm_impl *m = sf_calloc(1, sizeof *m, "task farm codelet");
  m->cl.cpu_funcs[0] = farm_cpu;
  m->cl.cpu_funcs_name[0] = "farm_cpu";
  m->cl.nbuffers = 0;
  m->cl.name = k->name;
  if (k->model) {
    m->model.type = STARPU_HISTORY_BASED;
    m->model.symbol = k->model;
    if (k->footprint) m->model.footprint = farm_footprint;
    m->cl.model = &m->model;
  }
  k->impl = m;
  return &m->cl;
}

sf_task_farm *sf_farm_begin(sf_farm_kind *kind)
{
  SF_ASSERT(kind && kind->run && kind->name);
  sf_task_farm *f = sf_calloc(1, sizeof *f, "task farm");
  f->kind = kind;
  return f;
}

int sf_farm_submit(sf_task_farm *f, void *arg)
{
  if (sf_runtime_which() != SF_RT_STARPU) {
    farm_arg *a = sf_malloc(sizeof *a, "task farm argument");
    a->kind = f->kind;
    a->arg = arg;
    sf_host_submit(f->kind->name, farm_cpu, a, 0, NULL, NULL, 0);
    f->n++;
    return 0;
  }
  if (f->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 64;
    struct starpu_task **t = realloc(f->tasks, (size_t)f->cap * sizeof *t);
    if (!t) sf_die(SF_EXIT_FAILURE, "out of memory for %ld %s tasks", f->cap, f->kind->name);
    f->tasks = t;
  }
  farm_arg *a = sf_malloc(sizeof *a, "task farm argument");
  a->kind = f->kind;
  a->arg = arg;
  struct starpu_task *task = starpu_task_create();
  task->cl = codelet_of(f->kind);
  task->cl_arg = a;
  task->cl_arg_size = sizeof *a;
  task->cl_arg_free = 1;
  task->detach = 0; /* waited for in sf_farm_wait (and destroyed there) */
  task->name = f->kind->name;
  int rc = starpu_task_submit(task);
  if (rc != 0) {
    task->destroy = 1;
    starpu_task_destroy(task); /* frees a */
    return rc < 0 ? rc : -EINVAL;
  }
  f->tasks[f->n++] = task;
  return 0;
}

long sf_farm_count(const sf_task_farm *f) { return f->n; }

int sf_farm_wait(sf_task_farm *f)
{
  int host = sf_runtime_which() != SF_RT_STARPU;
  if (host) sf_runtime_wait_all();
  int rc = !host && f->n && starpu_task_wait_array(f->tasks, (unsigned)f->n) != 0 ? -1 : 0;
  free(f->tasks);
  free(f);
  return rc;
}
