/* The public step functions of the task graph (scaffold/graph.h): each submits sample loading and
 * the whole step asynchronously, waits once (starpu_task_wait_for_all), then reads the reduced loss
 * (and Dice, norm) sums on the host. Distributed runs (scaffold/dist.h) add the gradient all-reduce
 * between the backward pass and the optimizer; in a spatial run the replica's shard 0 holds the
 * reduced sums and hands them to its other shards. */
#include <math.h>
#include <starpu.h>
#include <string.h>

#include "graph_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/ops.h"

/* Copy one sample into the input, label and class-weight handles, slab by slab. */
static void submit_load(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w)
{
  const sf_topt *o = &g->opt_load;
  for (int k = 0; k < g->S; k++) {
    size_t v0 = (size_t)g->in.d0[k] * g->in.H * g->in.W, nv = sf_tensor_slab_voxels(&g->in, k);
    insert_task_sample_load(o, g->in.slab[k], x + v0 * g->cin0, nv * g->cin0 * sizeof(float));
    insert_task_sample_load(o, g->lab.slab[k], labels + v0, nv * sizeof(uint16_t));
  }
  insert_task_sample_load(o, g->cw, class_w, (size_t)g->K * sizeof(float));
}

/* Wait for the step, then finalize the reduced loss sums into out[0..2]. */
static int finish(sf_graph *g, double out[3])
{
  starpu_task_wait_for_all();
  if (g->me == g->root) { /* the owner of the reduced sums */
    sf_handle_acquire(g->loss_acc, 0);
    sf_loss_finalize(&out[0], &out[1], &out[2], g->loss_acc_buf, g->K);
    sf_handle_release(g->loss_acc);
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

int sf_graph_train_step(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double lr,
                        long adam_step, double out[3])
{
  SF_ASSERT(adam_step >= 1);
  begin_count();
  submit_load(g, x, labels, class_w);
  sf_graph_submit_forward(g);
  sf_graph_submit_loss(g);
  sf_graph_submit_backward(g);
  sf_allreduce_submit(g->ar); /* distributed: sum over ranks, mean over replicas (NULL: nothing) */
  sf_graph_submit_optimizer(g, lr, adam_step);
  sf_dist_cache_flush();
  end_count(g, 1);
  int rc = finish(g, out);
  read_norm(g);
  return rc;
}

void sf_graph_apply_grads(sf_graph *g, const float *grads, double lr, long adam_step)
{
  SF_ASSERT(adam_step >= 1);
  for (int p = 0; p < g->P; p++) sf_handle_acquire(g->hg[p], 1);
  memcpy(g->grads, grads, g->total * sizeof(float));
  for (int p = 0; p < g->P; p++) sf_handle_release(g->hg[p]);
  sf_allreduce_submit(g->ar);
  sf_graph_submit_optimizer(g, lr, adam_step);
  starpu_task_wait_for_all();
  read_norm(g);
}

int sf_graph_grad_step(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double out[3])
{
  begin_count();
  submit_load(g, x, labels, class_w);
  sf_graph_submit_forward(g);
  sf_graph_submit_loss(g);
  sf_graph_submit_backward(g);
  sf_dist_cache_flush();
  end_count(g, 0);
  return finish(g, out);
}

int sf_graph_eval(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double out[4])
{
  begin_count();
  submit_load(g, x, labels, class_w);
  sf_graph_submit_forward(g);
  sf_graph_submit_loss(g);
  for (int k = 0; k < g->S; k++)
    insert_task_dice_hard_partial(&g->opt_crit, g->dice_part[k], g->logits.slab[k], g->lab.slab[k], g->K);
  insert_task_sum_d(&g->opt_crit, g->dice_acc, g->dice_part, g->S);
  sf_dist_cache_flush();
  int rc = finish(g, out);
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
  for (int k = 0; k < g->S; k++) {
    size_t v0 = (size_t)g->in.d0[k] * g->in.H * g->in.W, nv = sf_tensor_slab_voxels(&g->in, k);
    insert_task_sample_load(o, g->in.slab[k], x + v0 * g->cin0, nv * g->cin0 * sizeof(float));
  }
  sf_graph_submit_forward(g);
  starpu_task_wait_for_all();
  sf_tensor_acquire(&g->logits, 0);
  memcpy(logits, g->logits.data, sf_tensor_voxels(&g->logits) * g->K * sizeof(float));
  sf_tensor_release(&g->logits);
}
