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

void sf_graph_sample_box(const sf_graph *g, int lo[3], int n[3])
{
  int hi[3] = {0, 0, 0};
  lo[0] = lo[1] = lo[2] = 1 << 30;
  for (int k = 0; k < g->S; k++) {
    if (!sf_tensor_owns(&g->in, k)) continue;
    int bl[3], bn[3];
    sf_tensor_block_box(&g->in, k, bl, bn);
    for (int a = 0; a < 3; a++) {
      if (bl[a] < lo[a]) lo[a] = bl[a];
      if (bl[a] + bn[a] > hi[a]) hi[a] = bl[a] + bn[a];
    }
  }
  for (int a = 0; a < 3; a++) n[a] = hi[a] - lo[a];
}

/* Load block k of t (level 0) from a host sample buffer holding this rank's box (voxel_bytes per
 * voxel): one copy when the block spans the box's rows and columns, row by row otherwise. Blocks
 * another rank owns get their load task there, on its buffer (src NULL here). */
static void load_block(const sf_graph *g, const sf_tensor *t, int k, const void *base, size_t voxel_bytes)
{
  const sf_topt *o = &g->opt_load;
  if (!sf_tensor_owns(t, k)) {
    if (sf_graph_blocked(g)) insert_task_sample_load_box(o, t->slab[k], NULL, sf_block_nx(t->slab[k]) * t->elemsize, 0, 0);
    else insert_task_sample_load(o, t->slab[k], NULL, sf_tensor_slab_voxels(t, k) * voxel_bytes);
    return;
  }
  int lo[3], n[3], bl[3], bn[3];
  sf_graph_sample_box(g, lo, n);
  sf_tensor_block_box(t, k, bl, bn);
  size_t at = (((size_t)(bl[0] - lo[0]) * n[1] + (bl[1] - lo[1])) * n[2] + (bl[2] - lo[2])) * voxel_bytes;
  const char *src = (const char *)base + at;
  if (bn[1] == n[1] && bn[2] == n[2])
    insert_task_sample_load(o, t->slab[k], src, sf_tensor_slab_voxels(t, k) * voxel_bytes);
  else
    insert_task_sample_load_box(o, t->slab[k], src, (size_t)bn[2] * voxel_bytes, (size_t)n[2] * voxel_bytes,
                                (size_t)n[1] * n[2] * voxel_bytes);
}

/* Copy one sample's image and labels (this rank's box) into the input and label handles, block by block. */
static void submit_sample(sf_graph *g, const float *x, const uint16_t *labels)
{
  for (int k = 0; k < g->S; k++) {
    load_block(g, &g->in, k, x, g->cin0 * sizeof(float));
    load_block(g, &g->lab, k, labels, sizeof(uint16_t));
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
  for (int b = 0; b < B; b++)
    for (int k = 0; k < g->S; k++) {
      load_block(g, &g->lab, k, labels[b], sizeof(uint16_t));
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
  for (int k = 0; k < g->S; k++) load_block(g, &g->in, k, x, g->cin0 * sizeof(float));
  sf_graph_submit_forward(g);
  sf_runtime_wait_all();
  sf_tensor_acquire(&g->logits, 0);
  const int lo[3] = {0, 0, 0}, n[3] = {g->logits.D, g->logits.H, g->logits.W};
  sf_tensor_gather_box(&g->logits, lo, n, logits);
  sf_tensor_release(&g->logits);
}
