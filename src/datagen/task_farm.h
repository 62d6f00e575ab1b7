/* A farm of independent CPU tasks without data handles, as the data generation phases use them
 * (class search batches, fractal instances, volumes: their inputs and outputs are files or the
 * caller's arrays): submit one task per argument, then wait for all of them. StarPU stays inside
 * task_farm.c; a kind names the tasks (traces) and its history perfmodel.
 *
 *   static sf_farm_kind kind = {.name = "ifs_instance", .model = "sf_ifs_instance", .run = run_one};
 *   sf_task_farm *f = sf_farm_begin(&kind);
 *   for each job: if (sf_farm_submit(f, &job) != 0) ...;   (job stays valid until the wait)
 *   sf_farm_wait(f);                                        (all done; f is freed) */
#ifndef SF_DATAGEN_TASK_FARM_H
#define SF_DATAGEN_TASK_FARM_H

#include <stdint.h>

typedef struct sf_farm_kind {
  const char *name;                                     /* the tasks' name in traces */
  const char *model;                                    /* history perfmodel symbol; NULL: none */
  void (*run)(void *arg);                               /* one task's work, on a CPU worker */
  void (*footprint)(const void *arg, uint64_t key[2]);  /* the perfmodel footprint of a task's work
                                                         * (NULL: StarPU's, from the buffers: none) */
  struct sf_farm_impl *impl;                            /* the codelet, made at first use: leave NULL */
} sf_farm_kind;

typedef struct sf_task_farm sf_task_farm;

sf_task_farm *sf_farm_begin(sf_farm_kind *kind);
/* Submits a task running kind->run(arg). Returns 0, or a negative errno from StarPU (-ENODEV: no
 * worker can run it, e.g. ncpu 0) and submits nothing. */
int sf_farm_submit(sf_task_farm *f, void *arg);
/* Tasks submitted so far. */
long sf_farm_count(const sf_task_farm *f);
/* Waits for every submitted task and frees the farm. Returns 0, or -1 if StarPU reports a failed
 * wait. */
int sf_farm_wait(sf_task_farm *f);

#endif
