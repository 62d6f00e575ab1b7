/* Task submission to the runtimes other than StarPU (runtime: openmp | sequential; scaffold/runtime.h,
 * docs/runtimes.md). A task is the op's "run on these pointers" function, the same CPU function the
 * StarPU codelet calls: run(buffers, args), where buffers[i] describes handle i's host memory with
 * the layout of StarPU's block / vector interface (STARPU_BLOCK_GET_PTR, _NX, ... read it; a plain C
 * struct here, no StarPU call behind it), and args is the op's argument struct. Dependencies follow
 * from the handles and their access modes, in submission order, as with StarPU's sequential
 * consistency; commutative writes may run in either order but never at once. */
#ifndef SF_HOST_EXEC_H
#define SF_HOST_EXEC_H

#include "scaffold/tensor.h"

/* Access modes of a task's handles. */
enum {
  SF_ACCESS_R = 1,
  SF_ACCESS_W = 2,
  SF_ACCESS_RW = 3,
  SF_ACCESS_COMMUTE = 4, /* with SF_ACCESS_RW: commutative update (OpenMP mutexinoutset) */
};

typedef void (*sf_run_fn)(void *buffers[], void *args);

/* Submits run(buffers of h[0..n-1], args) with the given access modes and priority (0..2, higher
 * first where the runtime honours priorities). args is a heap block the runtime frees after the run
 * (NULL for none). name is kept by pointer (static). n <= SF_HOST_MAX_BUFFERS. */
#define SF_HOST_MAX_BUFFERS 256
void sf_host_submit(const char *name, sf_run_fn run, void *args, int n, const sf_handle *h, const int *modes,
                    int prio);
/* Inside a host task's run function: the task's buffer count; 0 outside one (then the task is
 * StarPU's, which knows its own). */
int sf_host_nbuffers(void);
/* The run times of every host task so far, summed over threads (the kernels' share of a step, for
 * scripts/bench-runtimes' per-task overhead). */
double sf_host_kernel_seconds(void);
/* The OpenMP executor's submitter thread: seconds spent creating OpenMP tasks (`omp task depend`, where
 * libgomp tracks the dependencies), so far; 0 under the other runtimes. */
double sf_host_spawn_seconds(void);

#endif
