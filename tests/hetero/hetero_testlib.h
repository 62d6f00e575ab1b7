/* Helpers of the heterogeneous-run tests (tests/hetero): StarPU started through sf_runtime_init with
 * a chosen scheduler, CPU / OpenCL worker counts and more_determinism (the same path as `scaffold
 * benchmark`, so the OpenCL-on-CPU environment and the bitwise placement rule are the runtime's own),
 * one STARPU_HOME per process, and per-kind task counts from StarPU's worker profiling. */
#ifndef SF_HETERO_TESTLIB_H
#define SF_HETERO_TESTLIB_H

/* 1 when an OpenCL device StarPU could use is visible (a GPU, or a CPU device such as PoCL). */
int het_have_opencl(void);
/* Starts StarPU (own STARPU_HOME temp dir, created at the first call) with profiling on. */
void het_start(const char *scheduler, int ncpu, int nopencl, int determinism);
/* Tasks executed since het_start by CPU workers and by OpenCL workers. */
void het_task_counts(long *cpu, long *opencl);
void het_stop(void);
/* Removes the STARPU_HOME temp dir (end of main). */
void het_cleanup(void);

#endif
