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

/* ---- the identity of the models: stale classes (docs/perfmodels.md, "The identity of a perfmodel") ----
 * Every perfmodel symbol ends in its codelet family's identity, a hash of the family's sources made at
 * build time (codelets/codelet_common.h, cmake/PerfmodelIds.cmake). A class's model file whose symbol
 * names a codelet of this build but not its current symbol was calibrated for other kernels: stale. */

/* Called by each codelet's constructor (SF_CODELET): op "conv3d_fwd", family "conv3d", symbol
 * "sf_conv3d_fwd_avx512_openblas_v2_1a2b3c4d". The strings must live as long as the process. */
void sf_perfmodels_register(const char *op, const char *family, const char *symbol);
/* The number of codelets registered (0 in a program that links none). */
int sf_perfmodels_ncodelets(void);

/* The comparison of a class's model files with this build's symbols. */
typedef struct {
  int ncodelets; /* this build's codelets */
  int nstale;    /* the class has a model of the codelet, none under this build's symbol */
  int nabsent;   /* the class has no model of the codelet at all */
  int nfiles;    /* model files of the class (<symbol>.<class>) */
  char families[512]; /* the families with a stale codelet, "conv3d, loss" */
  char *detail;  /* one line per stale or absent codelet (malloc'ed; NULL when none) */
} sf_perfmodels_staleness;

/* Compares the history files <symbol>.<cls> in `codelets_dir` (a class's sampling/codelets/45) with
 * this build's symbols. Returns 0, or -1 (errno set) when the directory cannot be read. */
int sf_perfmodels_check(const char *codelets_dir, const char *cls, sf_perfmodels_staleness *s);
void sf_perfmodels_staleness_free(sf_perfmodels_staleness *s);
/* For `scaffold simulate --allow-stale`, on a private copy of a class only: renames each stale codelet's
 * model <old symbol>.<cls> in `codelets_dir` (the first in name order when there are several) to this
 * build's symbol, so StarPU reads the old times for today's kernels. Returns the number renamed, or -1. */
int sf_perfmodels_alias_stale(const char *codelets_dir, const char *cls);
/* "perfmodels CLS: N of M codelets were calibrated for other kernels (list with -v; families: ...)", into
 * buf. Returns buf. */
char *sf_perfmodels_stale_summary(const sf_perfmodels_staleness *s, const char *cls, char *buf, size_t len);
/* -v of `scaffold benchmark` / `scaffold steps`: the start-up report lists the stale codelets. */
void sf_perfmodels_set_verbose(int verbose);

#endif
