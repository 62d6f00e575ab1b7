/* The gradient all-reduce of distributed training (scaffold/comm.h): recursive doubling per
 * parameter tensor, built from StarPU-MPI point-to-point requests (the runtime's sf_dist_isend /
 * sf_dist_irecv) and combine tasks (insert_task_grad_combine, codelets/grad_combine.c). A graph-level
 * algorithm: it only submits work, so it sits above the codelets and the runtime. The combine and
 * gate tasks touch this rank's own buffers, so they are submitted rank-locally (sf_topt.mpi = 0). */
#include "scaffold/comm.h"

#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/tasks.h"
#include "scaffold/switches.h"

struct sf_allreduce {
  int P;
  sf_handle *v;     /* caller's, one per tensor */
  sf_handle *tmp;   /* receive buffers (ranks below the power of two) */
  float *tmp_mem;
  size_t total;
  size_t *n;
  float scale;
  long count;       /* all-reduces submitted: its parity separates consecutive steps' messages */
  int p2, rounds;
  int gate;         /* SF_ALLREDUCE_GATE (default 1): hold receives until the local gradient is ready */
};

sf_allreduce *sf_allreduce_create(const sf_handle *v, const size_t *n, int P, float scale)
{
  if (!sf_dist_active()) return NULL;
  const int rank = sf_dist_rank(), size = sf_dist_size();
  sf_allreduce *a = sf_calloc(1, sizeof *a, "all-reduce");
  a->P = P;
  a->scale = scale;
  a->v = sf_malloc((size_t)P * sizeof *a->v, "all-reduce handles");
  a->n = sf_malloc((size_t)P * sizeof *a->n, "all-reduce sizes");
  memcpy(a->v, v, (size_t)P * sizeof *a->v);
  memcpy(a->n, n, (size_t)P * sizeof *a->n);
  for (int p = 0; p < P; p++) a->total += n[p];
  a->gate = !sf_switch_is("SF_ALLREDUCE_GATE", "0");
  a->p2 = 1;
  while (a->p2 * 2 <= size) a->p2 *= 2;
  for (int s = 1; s < a->p2; s *= 2) a->rounds++;
  if (rank < a->p2) {
    a->tmp_mem = sf_data_alloc(a->total * sizeof(float), "all-reduce receive buffer");
    a->tmp = sf_malloc((size_t)P * sizeof *a->tmp, "all-reduce buffers");
    size_t off = 0;
    for (int p = 0; p < P; p++) {
      a->tmp[p] = sf_vector_register(a->tmp_mem + off, n[p], sizeof(float), "allreduce.recv");
      /* the tag of the even steps' messages, so early arrivals are received in place */
      sf_dist_register(a->tmp[p], sf_dist_tag(SF_TAG_ALLREDUCE, 0, p, 0), rank);
      off += n[p];
    }
  }
  return a;
}

void sf_allreduce_submit(sf_allreduce *a)
{
  if (!a) return;
  static const sf_topt hi = {.prio = 1, .mpi = 0}; /* combine tasks touch this rank's buffers only */
  const int r = sf_dist_rank(), p2 = a->p2, extra = sf_dist_size() - p2;
  const int parity = (int)(a->count++ & 1);
  for (int p = a->P - 1; p >= 0; p--) { /* the backward pass completes the last tensors first */
    int64_t tag = sf_dist_tag(SF_TAG_ALLREDUCE, 0, p, parity);
    if (r >= p2) { /* fold into r - p2, get the result back */
      sf_dist_isend(a->v[p], r - p2, tag);
      sf_dist_irecv(a->v[p], r - p2, tag);
      continue;
    }
    /* Receives are posted only once this rank's own gradient is complete: a posted receive keeps
     * StarPU-MPI's progress thread polling, which steals cycles from workers when it has no core
     * of its own. Later rounds wait for the previous combine anyway. */
    if (a->gate) insert_task_gate(&hi, a->tmp[p], a->v[p]);
    if (r < extra) {
      sf_dist_irecv(a->tmp[p], r + p2, tag);
      insert_task_grad_combine(&hi, a->v[p], a->tmp[p], a->rounds == 0 ? a->scale : 1.0f);
    }
    for (int s = 0; s < a->rounds; s++) {
      int partner = r ^ (1 << s);
      sf_dist_isend(a->v[p], partner, tag);
      sf_dist_irecv(a->tmp[p], partner, tag);
      insert_task_grad_combine(&hi, a->v[p], a->tmp[p], s + 1 == a->rounds ? a->scale : 1.0f);
    }
    if (r < extra) sf_dist_isend(a->v[p], r + p2, tag);
  }
}

void sf_allreduce_destroy(sf_allreduce *a)
{
  if (!a) return;
  if (a->tmp) {
    for (int p = 0; p < a->P; p++) sf_handle_unregister(a->tmp[p]);
    sf_data_free(a->tmp_mem, a->total * sizeof(float));
    free(a->tmp);
  }
  free(a->v);
  free(a->n);
  free(a);
}

double sf_allreduce_words_sent(const sf_allreduce *a)
{
  if (!a) return 0;
  const int rank = sf_dist_rank(), extra = sf_dist_size() - a->p2;
  double msgs = rank >= a->p2 ? 1 : a->rounds + (rank < extra ? 1 : 0);
  return msgs * (double)a->total;
}
