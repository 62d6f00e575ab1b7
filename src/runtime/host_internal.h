/* Private to the runtime layer: the host executors' data record and the OpenMP executor's entry
 * points (runtime: openmp | sequential; scaffold/runtime.h, scaffold/host_exec.h). */
#ifndef SF_HOST_INTERNAL_H
#define SF_HOST_INTERNAL_H

#include <starpu.h>

#include "scaffold/host_exec.h"

/* A handle under the host executors. The interface comes first: a task's buffers[i] points at it,
 * so the codelets' CPU functions read it with StarPU's accessor macros (a plain struct; StarPU is
 * not running). `dep` is the handle's address in OpenMP depend clauses. */
typedef struct sf_host_data {
  union {
    struct starpu_block_interface blk;
    struct starpu_vector_interface vec;
  } iface;
  int is_block;
  const char *name;
  char dep;
} sf_host_data;

#define SF_HD(h) ((sf_host_data *)(h))

/* Registration on caller-owned memory (p may not be NULL); the record is freed by sf_host_unregister. */
sf_handle sf_host_block_register(void *p, size_t nx, size_t ny, size_t nz, size_t ldy, size_t ldz, size_t elemsize,
                                 const char *name);
sf_handle sf_host_vector_register(void *p, size_t n, size_t elemsize, const char *name);
void sf_host_unregister(sf_handle h);
/* A vector's two contiguous parts (len0, n - len0) as handles of their own; split / unsplit order
 * the parts' tasks after the whole's and the whole's after the parts' (a no-op task on all three). */
void sf_host_split_plan(sf_handle h, size_t len0, sf_handle parts[2]);
void sf_host_split_order(sf_handle h, sf_handle parts[2]);

/* One submitted task: the run function, its args (freed after the run) and the buffers. */
typedef struct sf_host_task {
  const char *name;
  sf_run_fn run;
  void *args;
  int n, prio;
  void *buf[SF_HOST_MAX_BUFFERS];
  char *dep[SF_HOST_MAX_BUFFERS];
  int mode[SF_HOST_MAX_BUFFERS];
} sf_host_task;

/* exec_task.c: runs run(buffers, args) in this thread (buffer count visible to sf_host_nbuffers, time
 * counted) and frees args; sf_host_run does so for t and frees it. */
void sf_host_run_fn(sf_run_fn run, void *buffers[], int n, void *args);
void sf_host_run(sf_host_task *t);

/* The OpenMP executor (exec_openmp.c): a team of nworkers threads that run the submitted tasks. */
void sf_omp_start(int nworkers);
void sf_omp_submit(sf_host_task *t);
void sf_omp_wait_all(void);
void sf_omp_stop(void);

#endif
