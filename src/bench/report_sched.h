/* The scheduler x worker-mix matrix of the `schedulers` profile (report_sched.c): groups named
 * schedulers.<scheduler>__<mix>__<size>, rows = schedulers (StarPU's in the profile's order, then
 * others), columns = "<mix>__<size>" sorted; shared by the text and HTML reports. */
#ifndef SF_REPORT_SCHED_H
#define SF_REPORT_SCHED_H

#include <stdio.h>

#include "scaffold/bench.h"

typedef struct {
  char *rows[64], *cols[16];
  int nr, nc;
} sf_sched_matrix;

/* Returns the row count (0: no schedulers.* group). */
int sf_sched_matrix_build(sf_sched_matrix *m, const sf_summary *s);
const sf_group *sf_sched_matrix_cell(const sf_sched_matrix *m, const sf_summary *s, int r, int c);
/* The baseline's perf of a group (NaN when none): the report row's perf_base. */
double sf_sched_matrix_base(const sf_report *r, const sf_group *g);
/* 1 when the baseline's group has successful runs but too few samples for a steady rate. */
int sf_sched_matrix_base_unmeasured(const sf_report *r, const sf_group *g);
/* A group's samples/s as a percentage of what its lower bound allows (NaN without a bound). Above
 * 100 the "bound" is not one for that run: the perfmodels it came from describe other conditions
 * (calibrated under another load, or stale); both renderings flag such cells. */
double sf_sched_bound_pct(const sf_group *g);
#define SF_SCHED_BOUND_NOTE                                                                                 \
  "measured faster than the lower bound: the perfmodels behind that bound were calibrated under other " \
  "conditions (another load, stale models), so it is no bound for this run; recalibrate (`scaffold calibrate`) " \
  "on a quiet machine"
void sf_sched_matrix_free(sf_sched_matrix *m);
/* The text rendering (after the report table; nothing when there is no schedulers.* group). */
void sf_report_print_schedulers(const sf_report *r, const sf_summary *s, FILE *out);

#endif
