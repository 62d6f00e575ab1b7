/* The start-up notice of a dm* or heft run on a machine class with no shipped perfmodels
 * (src/runtime/perfmodels.c calls it; docs/perfmodels.md). Internal to the runtime layer. */
#ifndef SF_PERFMODELS_NOTICE_H
#define SF_PERFMODELS_NOTICE_H

/* Prints, after `first` (the line saying which shipped classes there are and why none matches),
 * what the scheduler `sched` does meanwhile (StarPU calibrates while running, the first steps'
 * placements are uninformed), what StarPU already learnt on this host in its default model
 * directory, and how to calibrate the class (`scaffold calibrate`). */
void sf_perfmodels_uncalibrated_notice(const char *sched, const char *first);

/* A dm* or heft run on the shipped class `cls` (perfmodels_stale.c): when the class's history files
 * (`shipped_codelets`, its sampling/codelets/45) hold models of this build's codelets under other symbols,
 * prints "runtime: perfmodels CLS: N of M codelets were calibrated for other kernels ..." (and, with
 * sf_perfmodels_set_verbose, one line per codelet); `cache_codelets` (the per-user copy, may be NULL) says
 * how many of them earlier runs here have recalibrated. */
void sf_perfmodels_stale_notice(const char *sched, const char *cls, const char *shipped_codelets,
                                const char *cache_codelets);

#endif
