/* The shared StarPU runtime: one starpu_init for the whole process, built from the config's
 * `scheduler`, `ncpu`, `ncuda` and `nopencl` keys (docs/architecture.md §4), with OpenBLAS forced to one
 * thread (StarPU workers supply the parallelism).
 *
 * Precedence: a key the config sets wins over StarPU's environment variable (STARPU_SCHED,
 * STARPU_NCPU, STARPU_NCUDA, STARPU_NOPENCL); a key left at "StarPU's choice" ("" / -1) leaves
 * the environment variable in charge. `nopencl: 0` (the default) disables OpenCL workers unless
 * STARPU_NOPENCL is set. `scheduler` takes StarPU's policy names (validated against the linked
 * StarPU's list); "heft" is accepted as an alias of "modular-heft" since StarPU 1.3 has no plain
 * heft. An unknown name exits with status 2 naming it and listing the valid ones.
 *
 * Workers: CPU only (default, nopencl 0), OpenCL only (--set ncpu=0 --set nopencl=1) or mixed
 * (--set ncpu=1 --set nopencl=1). With OpenCL workers wanted and no GPU OpenCL device visible, init
 * sets STARPU_OPENCL_ON_CPUS=1 and STARPU_OPENCL_ONLY_ON_CPUS=1 (PoCL; unless the user set either),
 * builds the OpenCL kernels, and under more_determinism keeps codelets whose OpenCL variant is not
 * bitwise the CPU one off OpenCL workers (scaffold/opencl_devices.h, docs/heterogeneous.md). */
#ifndef SF_RUNTIME_H
#define SF_RUNTIME_H

#include <stddef.h>

#include "scaffold/config.h"

/* The task runtime under the graph (the `runtime` key; docs/runtimes.md). Everything above the
 * runtime layer (codelets' insert helpers, the graph, training, datagen) goes through the same
 * interface whichever runs it: data registration (scaffold/tensor.h), task submission (the
 * codelets' sf_submit; scaffold/host_exec.h for the runtimes other than StarPU), waiting (below).
 *   starpu      StarPU (and StarPU-MPI, CUDA, OpenCL, traces, perfmodels): the default.
 *   openmp      GCC's libgomp: `omp task depend(...) priority(...)` on the handles, one team of ncpu
 *               worker threads (plus the thread that turns submissions into tasks); CPU only.
 *   sequential  every task runs when it is submitted, in submission order, in the calling thread. */
typedef enum sf_rt_kind { SF_RT_STARPU = 0, SF_RT_OPENMP = 1, SF_RT_SEQUENTIAL = 2 } sf_rt_kind;
/* The runtime in use: set by sf_runtime_init (StarPU before it). */
sf_rt_kind sf_runtime_which(void);
/* "starpu", "openmp", "sequential". */
const char *sf_runtime_kind_name(sf_rt_kind k);
/* Parses a `runtime` value; returns -1 for an unknown name. */
int sf_runtime_parse(const char *name, sf_rt_kind *out);
/* The up-front refusals of a runtime other than StarPU: mpirun (more than one rank), CUDA / OpenCL
 * workers, trace: 1. Returns 0, or -1 with the offending key in *key and the reason in err. Usable
 * before sf_runtime_init (config validation). */
int sf_runtime_check_config(const sf_config *c, const char **key, char *err, size_t errlen);
/* libgomp reads OMP_MAX_TASK_PRIORITY once, when it loads, so it cannot be set later by the process:
 * when it is unset, this sets it and re-executes the program (argv) once, so task priorities reach
 * the openmp runtime. Call first thing in main (no output, no file before it). */
void sf_runtime_prepare_process(char **argv);

/* trace: fxt (src/runtime/fxt.c, docs/tracing.md). sf_runtime_fxt_available: this StarPU records FxT
 * traces. sf_runtime_init points StarPU's raw trace at a private directory (sf_runtime_fxt_prepare); after
 * sf_runtime_shutdown, sf_runtime_fxt_finish(dir) converts it with starpu_fxt_tool into dir (paje.trace,
 * dag.dot, tasks.rec, data.rec, trace.html, the raw file as fxt.prof) and checks they exist. Returns 0 (also
 * when no FxT trace was asked), or -1 with a message in err. */
int sf_runtime_fxt_available(void);
void sf_runtime_fxt_prepare(const sf_config *c);
int sf_runtime_fxt_finish(const char *dir, char *err, size_t errlen);

/* Starts the runtime the config's `runtime` key names (StarPU by default). Returns the total worker count (> 0); dies with a message if StarPU cannot start.
 * Calling it again while running is an error (SF_ABORT). */
int sf_runtime_init(const sf_config *c);
void sf_runtime_shutdown(void);
int sf_runtime_is_initialized(void);
/* Waits until every task submitted so far has run (starpu_task_wait_for_all, or the host executor's). */
void sf_runtime_wait_all(void);
int sf_runtime_ncpu_workers(void);
int sf_runtime_nworkers(void);
/* The scheduler policy name in use ("lws", "dmda", ...), valid after init. */
const char *sf_runtime_scheduler(void);
/* One line for logs/results, e.g. "StarPU 1.3.10, scheduler lws, 2 workers (2 CPU, 0 CUDA, 0 OpenCL)".
 * Returns buf. */
char *sf_runtime_describe(char *buf, size_t len);

/* Validates a scheduler name against the linked StarPU's policies, resolving the "heft" alias.
 * Returns the canonical name, or NULL if unknown (then `valid`, if non-NULL, receives the
 * comma-separated list of valid names). Usable before sf_runtime_init. */
const char *sf_runtime_resolve_scheduler(const char *name, char *valid, size_t valid_len);

#endif
