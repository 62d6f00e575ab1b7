/* Theoretical lower bounds on a window of training steps (config key `bound`, docs/scheduling.md),
 * from StarPU's bound recorder (starpu_bound_*, GLPK built into Debian's StarPU 1.3), our task-graph
 * recorder (scaffold/graph_record.h) and the history-based perfmodels' expected task durations:
 *   - the area bound: no dependencies, every task of the window spread over the workers as an LP
 *     (starpu_bound_compute after a window recorded without dependencies);
 *   - for a window recorded with dependencies: the DAG (StarPU's bound.dot, starpu_bound_print_dot,
 *     where StarPU's dependency recording is on; else our graph.json and graph.dot),
 *     the critical path (every task at its fastest expected duration) and StarPU's scheduling MILP
 *     written by us in its lp_solve format (bound_deps.lp, quadratic in the tasks; StarPU's own
 *     writer searches the DAG once per task pair and did not finish in 300 s on the smallest
 *     training step). max(area bound per step, critical path, work / workers) is a lower bound
 *     that always finishes; the MILP is solved off-line (scripts/bound-solve, lp_solve with a time limit).
 * Durations are in milliseconds, as StarPU's. A task whose codelet has no calibrated estimate for
 * any worker makes the bounds meaningless: they are then reported as uncalibrated (negative). */
#ifndef SF_BOUND_H
#define SF_BOUND_H

#include <stddef.h>

/* Starts recording the tasks submitted from now on. deps = 0: StarPU counts them per codelet and
 * footprint (the area bound). deps = 1: our task-graph recorder records each task and its
 * predecessors, and with starpu_dag = 1 StarPU's bound recorder records its own DAG too (bound.dot).
 * StarPU 1.3's bound recorder (with or without dependencies) made the benchmark abort at
 * problem_scale 5 with 64 base channels (coherency assertion "the handle does not have a valid
 * value" after the window, every scheduler; bench_train_step ran the same shape fine), so the
 * benchmark does not use it (src/train/step_probes.c): only bench_train_step calls sf_bound_start.
 * Drops any earlier recording. */
void sf_bound_start(int deps, int starpu_dag);
void sf_bound_stop(void);

/* After a window recorded without dependencies: the area bound in ms, or -1 when StarPU found no
 * estimate for some task (uncalibrated perfmodel) or the LP failed. */
double sf_bound_area_ms(void);

typedef struct {
  int lp_written;    /* 1: bound_deps.lp was written within the time limit */
  double lp_write_s; /* seconds writing the LP took */
  long lp_bytes;     /* size of bound_deps.lp */
  long ntasks;       /* tasks in the LP */
  long nedges;       /* dependency constraints in the LP */
  long nuncal;       /* tasks without an estimate on any worker */
  double work_ms;    /* sum of the fastest expected durations */
  int nworkers;      /* workers of the run: work_ms / nworkers is a lower bound too */
  int starpu_dag;    /* 1: the DAG file is StarPU's bound.dot; 0: ours, graph.json and graph.dot */
  double cp_ms;      /* critical path, each task at its fastest expected duration (-1 if uncalibrated) */
} sf_bound_deps;

/* After a window recorded with dependencies: writes StarPU's dir/bound.dot (starpu_dag = 1) or our
 * recorded graph as dir/graph.json and graph.dot, computes the critical path from the recorded
 * graph and writes dir/bound_deps.lp unless that takes more than timeout_s (then no LP:
 * lp_written = 0). Returns 0 (d filled) or -1 with a message in err. */
int sf_bound_deps_compute(const char *dir, double timeout_s, sf_bound_deps *d, char *err, size_t errlen);

/* One window's figures and the report: prints the "bound:" lines and writes dir/bound.json
 * (measured and bound times in seconds, ratios). area_ms from the no-deps window over
 * area_steps steps measured in area_s seconds (area_steps 0: no area window, "area": null); d (may
 * be NULL) from the deps window of one step measured in deps_s seconds. Returns 0 or -1 with a
 * message in err. */
int sf_bound_report(const char *dir, int area_steps, double area_s, double area_ms, const sf_bound_deps *d,
                    double deps_s, char *err, size_t errlen);

#endif
