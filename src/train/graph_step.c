/* The public step functions of the task graph (scaffold/graph.h): each submits sample loading and
 * the whole step asynchronously, waits once (sf_runtime_wait_all), then reads the reduced loss (and
 * Dice, norm) sums on the host. A batch of B samples (local_batch_size) first sums the class
 * weights of all its labels (the pooled CE denominator, needed by every sample's loss backward),
 * then runs each sample's forward, loss and backward through the same buffers, adding up their
 * gradients, and ends with one optimizer step. Distributed runs (scaffold/dist.h) add the gradient
 * all-reduce between the backward pass and the optimizer; in a spatial run the replica's shard 0
 * holds the reduced sums and hands them to its other shards, and each rank's sample buffers hold
 * only its own planes (sf_graph_sample_planes), which only its own load tasks read. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/ops.h"
#include "scaffold/runtime.h"

void sf_graph_sample_planes(const sf_graph *g, int *lo, int *hi)
{
  *lo = g->in.d0[g->in.k_lo];
  *hi = g->in.d0[g->in.k_hi];
}

/* Where slab k of t (level 0) starts in a sample buffer that holds this rank's planes (voxel_bytes
 * per voxel), or NULL for a slab another rank owns (its load task runs there, on its buffer). */
static const void *slab_src(const sf_tensor *t, const void *base, int k, size_t voxel_bytes)
{
  if (k < t->k_lo || k >= t->k_hi) return NULL;
  size_t v0 = (size_t)(t->d0[k] - t->d0[t->k_lo]) * t->H * t->W;
  return (const char *)base + v0 * voxel_bytes;
}

/* Copy one sample's image and labels (this rank's planes) into the input and label handles, slab by slab. */
static void submit_sample(sf_graph *g, const float *x, const uint16_t *labels)
{
  const sf_topt *o = &g->opt_load;
  for (int k = 0; k < g->S; k++) {
    size_t nv = sf_tensor_slab_voxels(&g->in, k);
    insert_task_sample_load(o, g->in.slab[k], slab_src(&g->in, x, k, g->cin0 * sizeof(float)),
                            nv * g->cin0 * sizeof(float));
    insert_task_sample_load(o, g->lab.slab[k], slab_src(&g->lab, labels, k, sizeof(uint16_t)), nv * sizeof(uint16_t));
  }
}

static void submit_class_weights(sf_graph *g, const float *class_w)
{
  insert_task_sample_load(&g->opt_load, g->cw, class_w, (size_t)g->K * sizeof(float));
}

/* The batch's pooled CE weight sum (sum of class_w[label] over every voxel of its B samples) into
 * g->wsum: per slab, the samples' labels pass through the label handles in order, adding up. */
static void submit_weight_sum(sf_graph *g, int B, const uint16_t *const *labels)
{
  const sf_topt *o = &g->opt_load;
  for (int b = 0; b < B; b++)
    for (int k = 0; k < g->S; k++) {
      size_t nv = sf_tensor_slab_voxels(&g->lab, k);
      insert_task_sample_load(o, g->lab.slab[k], slab_src(&g->lab, labels[b], k, sizeof(uint16_t)),
                              nv * sizeof(uint16_t));
      insert_task_loss_weight_sum(&g->opt_crit, b ? SF_ACC_ADD : SF_ACC_PARTIAL, g->wsum_part[k],
                                  g->lab.slab[k], g->cw, g->K);
    }
  insert_task_sum_d(&g->opt_crit, g->wsum, g->wsum_part, g->S);
}

/* Loading, forward, loss and backward of the B samples (the gradients of the batch's loss). */
static void submit_batch_gradients(sf_graph *g, int B, const float *const *x, const uint16_t *const *labels,
                                   const float *class_w)
{
  if (B < 1 || B > g->bmax)
    SF_ABORT("a step of %d samples on a task graph built for batches of at most %d (config local_batch_size)", B,
             g->bmax);
  if (B > 1) {
    submit_class_weights(g, class_w);
    submit_weight_sum(g, B, labels);
  }
  for (int b = 0; b < B; b++) {
    submit_sample(g, x[b], labels[b]);
    if (B == 1) submit_class_weights(g, class_w);
    sf_graph_submit_forward(g);
    sf_graph_submit_loss(g, b);
    sf_graph_submit_backward(g, b, B);
  }
}

/* Wait for the step, then finalize the reduced loss sums of its B samples into out[0..2]. */
static int finish(sf_graph *g, int B, double out[3])
{
  sf_runtime_wait_all();
  if (g->me == g->root) { /* the owner of the reduced sums */
    const double **acc = sf_malloc((size_t)B * sizeof *acc, "loss sums of the batch");
    for (int b = 0; b < B; b++) {
      sf_handle_acquire(g->loss_acc[b], 0);
      acc[b] = g->loss_acc_buf + (size_t)b * SF_LOSS_NACC(g->K);
    }
    sf_loss_finalize_batch(out, acc, B, g->K);
    for (int b = 0; b < B; b++) sf_handle_release(g->loss_acc[b]);
    free(acc);
  }
  if (g->spatial > 1) sf_dist_group_bcast(out, 3 * sizeof(double));
  return isfinite(out[2]) ? 0 : -1;
}

static void read_norm(sf_graph *g)
{
  sf_handle_acquire(g->clip, 0);
  g->last_norm = g->clip_buf[1];
  sf_handle_release(g->clip);
}

static void begin_count(void) { sf_tasks_counters_reset(); }

static void end_count(sf_graph *g, int full_step)
{
  if (!full_step || g->step_flops > 0) return;
  g->step_flops = sf_tasks_flops_counter();
  g->tasks_per_step = sf_tasks_count_counter();
}

int sf_graph_train_batch(sf_graph *g, int B, const float *const *x, const uint16_t *const *labels,
                         const float *class_w, double lr, long adam_step, double out[3])
{
  SF_ASSERT(adam_step >= 1);
  begin_count();
  submit_batch_gradients(g, B, x, labels, class_w);
  sf_allreduce_submit(g->ar); /* distributed: sum over ranks, mean over replicas (NULL: nothing) */
  sf_graph_submit_optimizer(g, lr, adam_step);
  sf_dist_cache_flush();
  end_count(g, 1);
  int rc = finish(g, B, out);
  read_norm(g);
  return rc;
}

int sf_graph_grad_batch(sf_graph *g, int B, const float *const *x, const uint16_t *const *labels,
                        const float *class_w, double out[3])
{
  begin_count();
  submit_batch_gradients(g, B, x, labels, class_w);
  sf_dist_cache_flush();
  end_count(g, 0);
  return finish(g, B, out);
}

int sf_graph_train_step(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double lr,
                        long adam_step, double out[3])
{
  return sf_graph_train_batch(g, 1, &x, &labels, class_w, lr, adam_step, out);
}

int sf_graph_grad_step(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double out[3])
{
  return sf_graph_grad_batch(g, 1, &x, &labels, class_w, out);
}

int sf_graph_eval(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double out[4])
{
  begin_count();
  submit_sample(g, x, labels);
  submit_class_weights(g, class_w);
  sf_graph_submit_forward(g);
  sf_graph_submit_loss(g, 0);
  for (int k = 0; k < g->S; k++)
    insert_task_dice_hard_partial(&g->opt_crit, g->dice_part[k], g->logits.slab[k], g->lab.slab[k], g->K);
  insert_task_sum_d(&g->opt_crit, g->dice_acc, g->dice_part, g->S);
  sf_dist_cache_flush();
  int rc = finish(g, 1, out);
  if (g->me == g->root) {
    sf_handle_acquire(g->dice_acc, 0);
    out[3] = sf_dice_hard_finalize(g->dice_acc_buf, g->K);
    sf_handle_release(g->dice_acc);
  }
  if (g->spatial > 1) sf_dist_group_bcast(&out[3], sizeof(double));
  return rc;
}

void sf_graph_forward(sf_graph *g, const float *x, float *logits)
{
  if (g->spatial > 1) SF_ABORT("sf_graph_forward: the logits of a spatially distributed graph are not gathered");
  const sf_topt *o = &g->opt_load;
  for (int k = 0; k < g->S; k++)
    insert_task_sample_load(o, g->in.slab[k], slab_src(&g->in, x, k, g->cin0 * sizeof(float)),
                            sf_tensor_slab_voxels(&g->in, k) * g->cin0 * sizeof(float));
  sf_graph_submit_forward(g);
  sf_runtime_wait_all();
  sf_tensor_acquire(&g->logits, 0);
  memcpy(logits, g->logits.data, sf_tensor_voxels(&g->logits) * g->K * sizeof(float));
  sf_tensor_release(&g->logits);
}
