/* The start-up notice of a dm* or heft run on a machine class with no shipped perfmodels
 * (src/runtime/perfmodels.c calls it; docs/perfmodels.md). Internal to the runtime layer. */
#ifndef SF_PERFMODELS_NOTICE_H
#define SF_PERFMODELS_NOTICE_H

/* Prints, after `first` (the line saying which shipped classes there are and why none matches),
 * what the scheduler `sched` does meanwhile (StarPU calibrates while running, the first steps'
 * placements are uninformed), what StarPU already learnt on this host in its default model
 * directory, and how to calibrate the class (scripts/calibrate). */
void sf_perfmodels_uncalibrated_notice(const char *sched, const char *first);

#endif
