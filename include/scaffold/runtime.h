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

/* Starts StarPU. Returns the total worker count (> 0); dies with a message if StarPU cannot start.
 * Calling it again while running is an error (SF_ABORT). */
int sf_runtime_init(const sf_config *c);
void sf_runtime_shutdown(void);
int sf_runtime_is_initialized(void);
/* Waits until every task submitted so far has run (starpu_task_wait_for_all). */
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
