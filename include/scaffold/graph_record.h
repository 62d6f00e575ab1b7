/* The task graph as a file, without FxT (config key `export_graph`, docs/tracing.md "Task graph
 * export"): while recording is on, the one task-submission function hands every task it submits to
 * sf_graph_record_task; the recorder numbers the tasks in submission order, computes each task's
 * data footprint (the perfmodel key StarPU uses) and derives its predecessors from the data accesses
 * exactly as StarPU's sequential consistency does (read after write, write after read, write after
 * write on each handle; commutative accesses are not ordered among themselves). sf_graph_record_write
 * writes DIR/graph.json (tasks, handles) and DIR/graph.dot. One thread submits (as the runtime
 * assumes). StarPU types appear only as forward declarations: callers need no StarPU header. */
#ifndef SF_GRAPH_RECORD_H
#define SF_GRAPH_RECORD_H

#include <stddef.h>
#include <stdint.h>

struct starpu_codelet;    /* the submitted codelet (its name and perfmodel) */
struct starpu_data_descr; /* the submission's descriptor array (handle, access mode) */

/* Starts recording (drops an earlier recording). */
void sf_graph_record_begin(void);
int sf_graph_recording(void);
/* One submitted task: codelet, priority, declared flops and its n buffers. No-op when off. */
void sf_graph_record_task(const struct starpu_codelet *cl, int prio, double flops, const struct starpu_data_descr *d,
                          int n);
/* Stops recording; the recording stays readable until the next sf_graph_record_begin or _clear. */
void sf_graph_record_stop(void);
void sf_graph_record_clear(void);
/* Tasks recorded since sf_graph_record_begin. */
long sf_graph_record_ntasks(void);
/* Stops recording and writes dir/graph.json and dir/graph.dot (dir must exist). Returns 0, or -1
 * with a message in err. */
int sf_graph_record_write(const char *dir, char *err, size_t errlen);

/* Read access for the bounds (bound.c): task i's codelet, footprint and predecessors (sorted,
 * earlier tasks). Returns 0, or -1 when i is out of range. */
typedef struct {
  const struct starpu_codelet *cl;
  uint32_t footprint;
  const long *preds;
  long npreds;
} sf_graph_task_view;
int sf_graph_record_view(long i, sf_graph_task_view *v);

#endif
