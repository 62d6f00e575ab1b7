/* Lowering the scheduling priority of the runtime's worker threads (config worker_nice): each worker
 * raises its own nice value, which needs no privilege. Why: StarPU's CPU workers (Debian's 1.3 is
 * built with non-blocking drivers) spin while idle, so with one worker per core the application
 * thread that submits each step and waits for it, and an MPI progress thread, only get a core when
 * the kernel's time slice runs out; a lower worker priority lets them preempt a worker at once. */
#ifndef SF_WORKER_PRIORITY_H
#define SF_WORKER_PRIORITY_H

/* config worker_nice -1 (auto): 5 in one process; 0 under mpirun, where StarPU-MPI's progress thread
 * busy-polls on the workers' cores and, at a higher priority than theirs, would take most of a core
 * (docs/performance.md, "Worker priority"). Other values are returned as they are. */
long sf_worker_nice_resolve(long worker_nice, int distributed);
/* Before the workers start: the increment (config worker_nice, resolved as above; distributed: under mpirun)
 * and the process's nice value, read on the calling thread. Then, run on each worker thread, apply sets its
 * nice value to the process's plus the increment, at most 19. */
void sf_worker_priority_prepare(long worker_nice, int distributed);
void sf_worker_priority_apply(void *unused);
/* The nice values the workers reached (lowest, highest) and how many applied it; all 0 before any. */
void sf_worker_priority_summary(int *lo, int *hi, int *count);
/* "2 at nice 5 (the process's 0 + worker_nice auto: 5)", or "at the process's nice 0 (worker_nice 0)" */
char *sf_worker_priority_describe(char *buf, unsigned long len);

#endif
