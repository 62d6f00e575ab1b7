/* Shipped StarPU performance models (perfmodels/<class>/, docs/perfmodels.md). Before starpu_init,
 * sf_perfmodels_setup picks the shipped class whose perfmodels/<class>/MATCH fits this machine, copies
 * its sampling tree into a per-user cache ($XDG_CACHE_HOME/scaffold-starpu/perfmodels/<class>, only
 * when the shipped set changed) and sets STARPU_PERF_MODEL_DIR and STARPU_HOSTNAME to it, so the dm*
 * and heft schedulers start calibrated and StarPU keeps refining the copy (never the source tree).
 *
 * The user stays in charge: with STARPU_PERF_MODEL_DIR, STARPU_HOSTNAME or STARPU_HOME set, nothing
 * changes. SF_PERFMODELS_DIR replaces the shipped directory (default: <source dir>/perfmodels).
 * Problems (unreadable MATCH, cache not writable) warn and leave StarPU's default; they never fail. */
#ifndef SF_PERFMODELS_H
#define SF_PERFMODELS_H

#include <stddef.h>

/* Called by sf_runtime_init before starpu_init. `sched` is the scheduler StarPU will use (the
 * STARPU_SCHED value; NULL or "" = StarPU's default, lws): the one-line note on the perfmodel set is
 * printed only for a scheduler that uses perfmodels (dm*, *heft*). Calling it again in the same
 * process keeps the set it chose unless the environment was changed in between. */
void sf_perfmodels_setup(const char *sched);

/* "perfmodels: epyc-2core (shipped, cache /home/u/.cache/scaffold-starpu/perfmodels/epyc-2core)",
 * "perfmodels: StarPU default (STARPU_HOME=/x set by the user)", ... Returns buf. */
char *sf_perfmodels_describe(char *buf, size_t len);

/* The class in use ("epyc-2core"), or NULL when StarPU's default set is used. */
const char *sf_perfmodels_class(void);

/* 1 if the StarPU policy `sched` schedules with performance models (dm, dmda, dmdar, dmdas,
 * modular-heft*, pheft, ...). */
int sf_perfmodels_sched_uses_models(const char *sched);

#endif
