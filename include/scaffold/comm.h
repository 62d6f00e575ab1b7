/* Communication algorithms of distributed training (src/comm, docs/architecture.md §6): graph-level steps that
 * submit tasks (scaffold/tasks.h) and StarPU-MPI requests (scaffold/dist.h) but own no StarPU code
 * themselves. Layer: above the codelets and the runtime, below the training graph (src/train). */
#ifndef SF_COMM_H
#define SF_COMM_H

#include <stddef.h>

#include "scaffold/tensor.h"

/* ---- the gradient all-reduce (src/comm/allreduce.c) ----
 * Sums P float vectors (one handle per parameter tensor, registered on this rank's own memory)
 * over every rank, in place, then multiplies by `scale`. Recursive doubling over the largest power
 * of two <= world size (the remaining ranks first fold their vectors into a partner and get the
 * result back): log2(N) rounds of one send, one receive and one combine task per tensor, each
 * starting as soon as that tensor's gradient is complete. Partners add the same two vectors in
 * either order, so every rank ends with bitwise identical values. In a single process create
 * returns NULL and the other functions accept NULL and do nothing. */
typedef struct sf_allreduce sf_allreduce;
sf_allreduce *sf_allreduce_create(const sf_handle *v, const size_t *n, int P, float scale);
void sf_allreduce_submit(sf_allreduce *a);
void sf_allreduce_destroy(sf_allreduce *a);
/* Words (floats) this rank sends per all-reduce: sum(n) * rounds (+1 fold message if any). */
double sf_allreduce_words_sent(const sf_allreduce *a);

/* ---- the halo exchange (src/comm/halo.c) ----
 * Submits the copies into the halo pieces of a distributed tensor along one axis (SF_AXIS_D: the
 * depth planes; _H, _W: the rows and columns of H/W blocks; a no-op without pieces): call it after the
 * tensor has been written and before tasks read its halos (sf_tensor_nb). sf_halo_exchange is the
 * depth axis. */
void sf_halo_exchange_axis(sf_tensor *t, int axis);
void sf_halo_exchange(sf_tensor *t);

#endif
