/* The loss, the U-Net backward pass and the optimizer as tasks: the forward list of
 * graph_forward.c in reverse, then gradient clipping and the optimizer (Adam, SGD or RMSprop; spec
 * §6.1, §6.4). The samples of a batch
 * (local_batch_size > 1) run one after the other through the same buffers, and their gradients add
 * up: COMMUTE gradients are zeroed before the first sample only, per-slab partials are written by
 * the first sample and added to (RW, in order) by the others, and the GroupNorm reductions write
 * one copy per sample, summed in sample order after the last. Weight gradients get one
 * contribution per slab: RW|COMMUTE into the gradient (zeroed first), or a per-slab partial (W)
 * summed in slab order: for every weight under more_determinism, so the result is bitwise the same
 * whatever the scheduler and the worker count, and otherwise for the small level-0 weights, whose
 * slab contributions would serialise at the end of the pass; large conv weights of CPU-only runs
 * are accumulated as two tap blocks (graph.c: choose_partial_grads). The gradients reaching an
 * encoder output from its two consumers (the next Down's max-pool and the Up's skip concat) meet
 * in the max-pool backward task. In a spatial run each shard accumulates its slabs' contributions into its own gradient arena (shard 0
 * also gets the GroupNorm parameters' full-volume gradients); the all-reduce sums the arenas. The
 * optimizer runs on every rank, on its own replica of the parameters. */
#include <stdlib.h>

#include "graph_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/model.h"
#include "scaffold/ops.h"

#define CRIT (&g->opt_crit)
#define LOW (&g->opt_low)
#define PARAM(p) (g->hp[(p)])

/* Where slab k's contribution to the gradient of parameter p goes (graph.c: choose_partial_grads).
 * A per-slab partial is written by the batch's first sample and added to by the others, in order. */
static sf_accum grad_acc(const sf_graph *g, int p)
{
  if (!g->part_grad[p]) return SF_ACC_COMMUTE;
  return g->sample == 0 ? SF_ACC_PARTIAL : SF_ACC_ADD;
}
static sf_handle grad_dst(const sf_graph *g, int p, int k)
{
  return g->part_grad[p] ? g->hgp[(size_t)k * g->P + p] : sf_graph_grad_of(g, sf_graph_shard_at(g, g->plevel[p], k), p);
}

void sf_graph_submit_loss(sf_graph *g, int b)
{
  for (int k = 0; k < g->S; k++)
    insert_task_loss_partial(CRIT, g->loss_part[k], g->logits.slab[k], g->lab.slab[k], g->cw, g->K);
  insert_task_sum_d(CRIT, g->loss_acc[b], g->loss_part, g->S);
}

static void conv3_backward_data(sf_graph *g, sf_tensor *dx, sf_tensor *dy, sf_tensor *x, int w, int cin, int cout,
                                int k)
{
  insert_task_conv3d_backward_data(CRIT, dx->slab[k], sf_tensor_lo(dy, k), dy->slab[k], sf_tensor_hi(dy, k), PARAM(w),
                                   sf_graph_packed(g, w, 1), x->H, x->W, cin, cout);
}

/* Block k's contribution to dW of conv w from x (with its depth halos lo, hi) and dy, of H x W voxels
 * per plane (sf_conv3_dw_fn; o: the options, LOW with the block's flops share). */
static void conv3_weights_task(sf_graph *g, sf_handle lo, sf_handle x, sf_handle hi, sf_handle dy, int H, int W, int w,
                               int cin, int cout, int k, const sf_topt *o)
{
  int t = g->split_taps[w];
  if (t) { /* two tap blocks of the gradient, taps [0,t) and [t,27), each its own COMMUTE accumulation */
    for (int b = 0; b < 2; b++)
      insert_task_conv3d_backward_weights_taps(o, SF_ACC_COMMUTE, g->split_grad[2 * w + b], b ? t : 0, b ? 27 : t, lo, x,
                                               hi, dy, H, W, cin, cout);
    return;
  }
  insert_task_conv3d_backward_weights(o, grad_acc(g, w), grad_dst(g, w, k), lo, x, hi, dy, H, W, cin, cout);
}

static void conv3_backward_weights(sf_graph *g, sf_tensor *dy, sf_tensor *x, int w, int cin, int cout, int k)
{
  conv3_weights_task(g, sf_tensor_lo(x, k), x->slab[k], sf_tensor_hi(x, k), dy->slab[k], x->H, x->W, w, cin, cout, k,
                     LOW);
}

/* dx (may be NULL: no input gradient) and dW of y = conv3(x), from dy. When dx is x itself (the
 * decoder's concat, graph.c), every slab's dW is submitted before any dX overwrites x, so StarPU
 * makes each dX wait for the dW tasks reading that slab (as data or as a neighbour's halo). */
static void conv3_backward(sf_graph *g, sf_tensor *dx, sf_tensor *dy, sf_tensor *x, int w, int cin, int cout)
{
  if (sf_graph_blocked_at(g, sf_graph_level_of(g, x))) {
    sf_graph_conv3_backward_blocked(g, dx, dy, x, w, cin, cout, conv3_weights_task);
    return;
  }
  if (dx) sf_halo_exchange(dy); /* x's planes are still those of the forward pass */
  if (dx && dx->slab[0] == x->slab[0]) {
    for (int k = 0; k < x->nslabs; k++) conv3_backward_weights(g, dy, x, w, cin, cout, k);
    for (int k = 0; k < x->nslabs; k++) conv3_backward_data(g, dx, dy, x, w, cin, cout, k);
    return;
  }
  for (int k = 0; k < x->nslabs; k++) {
    if (dx) conv3_backward_data(g, dx, dy, x, w, cin, cout, k);
    conv3_backward_weights(g, dy, x, w, cin, cout, k);
  }
}

/* Where the GroupNorm reduction writes the gradient of parameter p: the gradient itself (shard 0's
 * in a spatial run), or in a batch the sample's own copy (summed in order by sum_gn_samples). */
static sf_handle gn_grad_dst(const sf_graph *g, int p)
{
  return g->batch > 1 ? g->gn_sample[(size_t)g->sample * g->P + p] : sf_graph_grad_of(g, 0, p);
}

/* dx of y = ReLU(GN(x)) from dy; dgamma, dbeta written */
static void gn_relu_backward(sf_graph *g, sf_tensor *dx, sf_tensor *dy, sf_tensor *y, sf_tensor *x, gn_layer *n)
{
  for (int k = 0; k < n->S; k++)
    insert_task_groupnorm_backward_stats(CRIT, n->bwd_part[k], dy->slab[k], y->slab[k], x->slab[k], n->stats,
                                         PARAM(n->gamma), n->ntotal, n->C, g->G, SF_GN_EPS, 1);
  insert_task_groupnorm_backward_reduce(CRIT, n->bwd_sum, gn_grad_dst(g, n->gamma), gn_grad_dst(g, n->beta),
                                        n->bwd_part, n->S, n->C, g->G);
  for (int k = 0; k < n->S; k++)
    insert_task_groupnorm_backward_data(CRIT, dx->slab[k], dy->slab[k], y->slab[k], x->slab[k], n->stats, n->bwd_sum,
                                        PARAM(n->gamma), n->ntotal, n->C, g->G, SF_GN_EPS, 1);
}

/* Backward of a DoubleConv at level l whose input was x: dy = gradient of b->out, dx (or NULL). */
static void double_conv_backward(sf_graph *g, dconv_block *b, sf_tensor *x, sf_tensor *dx)
{
  const int l = b->level;
  gn_relu_backward(g, &g->g_pre_b[l], &g->g_out[l], &b->out, &b->pre_b, &b->gn_b);
  conv3_backward(g, &g->g_act_a[l], &g->g_pre_b[l], &b->act_a, b->w_b, b->cout, b->cout);
  gn_relu_backward(g, &g->g_pre_a[l], &g->g_act_a[l], &b->act_a, &b->pre_a, &b->gn_a);
  conv3_backward(g, dx, &g->g_pre_a[l], x, b->w_a, b->cin, b->cout);
}

/* activation_checkpointing: the backward of block b at level l (input x, dx or NULL) with the
 * level's four buffers X = g_out (holding dy), Y, A, B (graph.c). A decoder block finds pre_b in A
 * and out in B from its forward; an encoder block recomputes them first (out only below the
 * bottleneck, where B held the skip gradient; the bottleneck's out is still in B). After GroupNorm
 * b's backward (dy in X -> Y) only Y stays live, so pre_a and act_a are recomputed into A and B from
 * x, the concat or max-pool output the forward kept. Spatial runs: act_a's boundary planes are
 * exchanged for conv b's weight gradient, as the forward's conv b did. */
static void ckpt_double_conv_backward(sf_graph *g, dconv_block *b, sf_tensor *x, sf_tensor *dx, int encoder)
{
  const int l = b->level;
  sf_tensor *X = &g->g_out[l], *Y = &g->g_pre_b[l], *A = &g->ck_a[l], *B = &g->ck_b[l];
  if (encoder) {
    sf_graph_recompute_a(g, b, x, A, Y);
    sf_graph_recompute_b(g, b, Y, A, l < g->L ? B : NULL);
  }
  gn_relu_backward(g, Y, X, B, A, &b->gn_b);
  sf_graph_recompute_a(g, b, x, A, B);
  if (!sf_graph_blocked_at(g, l)) sf_halo_exchange(B); /* H/W blocks: the conv's backward pads B itself */
  conv3_backward(g, X, Y, B, b->w_b, b->cout, b->cout);
  gn_relu_backward(g, Y, X, B, A, &b->gn_a);
  conv3_backward(g, dx, Y, x, b->w_a, b->cin, b->cout);
}

/* Before the batch's first sample: the tap blocks of split gradients replace them, and the
 * gradients that tasks accumulate into (RW|COMMUTE) start at zero. */
static void begin_gradients(sf_graph *g)
{
  for (int q = 0; q < g->spatial; q++)
    for (int p = 0; p < g->P; p++) {
      if (g->split_taps[p]) { /* the two tap blocks stand for the gradient until the end of the pass */
        sf_vector_split_submit(g->hg[p], &g->split_grad[2 * p]);
        insert_task_zero(LOW, g->split_grad[2 * p]);
        insert_task_zero(LOW, g->split_grad[2 * p + 1]);
      } else if (g->slab_grad[p] && !g->part_grad[p]) /* COMMUTE accumulation needs zeroed gradients */
        insert_task_zero(LOW, sf_graph_grad_of(g, q, p));
      else if (q > 0 && !g->slab_grad[p]) /* GroupNorm gradients come from shard 0 alone */
        insert_task_zero(LOW, sf_graph_grad_of(g, q, p));
    }
}

/* After the batch's last sample: the split gradients become whole again, each shard sums its own
 * slabs' partials in slab order, and in a batch the samples' GroupNorm gradients are summed in
 * sample order. */
static void end_gradients(sf_graph *g)
{
  for (int p = 0; p < g->P; p++)
    if (g->split_taps[p]) sf_vector_unsplit_submit(g->hg[p], &g->split_grad[2 * p]);
  for (int q = 0; q < g->spatial; q++)
    for (int p = 0; p < g->P; p++)
      if (g->part_grad[p]) {
        sf_handle parts[SF_MAX_SLABS];
        int n = 0;
        for (int k = 0; k < g->lg[g->plevel[p]].S; k++) /* the blocks of the parameter's level */
          if (g->spatial <= 1 || sf_graph_shard_at(g, g->plevel[p], k) == q) parts[n++] = g->hgp[(size_t)k * g->P + p];
        insert_task_sum_f(LOW, sf_graph_grad_of(g, q, p), parts, n);
      }
  if (g->batch <= 1) return;
  sf_handle *parts = sf_malloc((size_t)g->batch * sizeof *parts, "per-sample gradient list");
  for (int p = 0; p < g->P; p++)
    if (!g->slab_grad[p]) {
      for (int b = 0; b < g->batch; b++) parts[b] = g->gn_sample[(size_t)b * g->P + p];
      insert_task_sum_f(LOW, sf_graph_grad_of(g, 0, p), parts, g->batch);
    }
  free(parts);
}

/* The max-pool backward of level i into enc[i-1]'s output gradient, adding the skip gradient (the
 * two consumers of that output meet here); where level i has fewer blocks, on the merged view, then
 * split back. */
static void pool_backward(sf_graph *g, int i, int C)
{
  sf_tensor *dx = &g->g_out[i - 1], *skip = &g->g_skip[i - 1];
  if (g->merges[i]) {
    sf_graph_regrid(g, &g->m_skip_grad[i], skip);
    dx = &g->m_pool_grad[i];
    skip = &g->m_skip_grad[i];
  }
  for (int k = 0; k < g->pool[i].nslabs; k++)
    insert_task_maxpool3d_backward(CRIT, dx->slab[k], g->g_pool[i].slab[k], g->pidx[i].slab[k], skip->slab[k], C);
  if (g->merges[i]) sf_graph_regrid(g, &g->g_out[i - 1], dx);
}

void sf_graph_submit_backward(sf_graph *g, int b, int B)
{
  const int L = g->L, S = g->S;
  const int *ch = g->u->channels;
  SF_ASSERT(B >= 1 && B <= g->bmax && b >= 0 && b < B);
  g->sample = b;
  g->batch = B;
  if (b == 0) begin_gradients(g);

  for (int k = 0; k < S; k++) /* a batch: CE over the pooled weight sum, Dice averaged over the samples */
    insert_task_loss_backward(CRIT, g->g_logits.slab[k], g->logits.slab[k], g->lab.slab[k], g->cw, g->loss_acc[b],
                              B > 1 ? g->wsum : NULL, B, g->K, 1.0f);
  for (int k = 0; k < S; k++) {
    insert_task_conv1_backward_data(CRIT, g->g_out[0].slab[k], g->g_logits.slab[k], PARAM(g->out_w), ch[0], g->K);
    insert_task_conv1_backward_weights(LOW, grad_acc(g, g->out_w), grad_dst(g, g->out_w, k), grad_dst(g, g->out_b, k),
                                       g->dec[0].out.slab[k], g->g_logits.slab[k], ch[0], g->K);
  }
  for (int i = 0; i < L; i++) { /* decoder, shallowest first */
    sf_tensor *deep = i + 1 == L ? &g->enc[L].out : &g->dec[i + 1].out;
    if (g->checkpointing)
      ckpt_double_conv_backward(g, &g->dec[i], &g->cat[i], &g->g_cat[i], 0);
    else
      double_conv_backward(g, &g->dec[i], &g->cat[i], &g->g_cat[i]);
    for (int k = 0; k < g->lg[i].S; k++)
      insert_task_concat_backward(CRIT, g->g_skip[i].slab[k], g->g_up[i].slab[k], g->g_cat[i].slab[k], ch[i], ch[i]);
    sf_tensor *gu = &g->g_up[i]; /* level i+1 has fewer blocks: the Up's output gradient, merged */
    if (g->merges[i + 1]) {
      sf_graph_regrid(g, &g->m_up_grad[i + 1], gu);
      gu = &g->m_up_grad[i + 1];
    }
    for (int k = 0; k < deep->nslabs; k++) {
      insert_task_upconv3d_backward_data(CRIT, g->g_out[i + 1].slab[k], gu->slab[k], PARAM(g->up_w[i]), ch[i + 1],
                                         ch[i]);
      insert_task_upconv3d_backward_weights(LOW, grad_acc(g, g->up_w[i]), grad_dst(g, g->up_w[i], k),
                                            grad_dst(g, g->up_b[i], k), deep->slab[k], gu->slab[k], ch[i + 1], ch[i]);
    }
  }
  for (int i = L; i >= 0; i--) { /* encoder, deepest first */
    if (g->checkpointing)
      ckpt_double_conv_backward(g, &g->enc[i], i ? &g->pool[i] : &g->in, i ? &g->g_pool[i] : NULL, 1);
    else
      double_conv_backward(g, &g->enc[i], i ? &g->pool[i] : &g->in, i ? &g->g_pool[i] : NULL);
    if (i > 0) pool_backward(g, i, ch[i - 1]);
  }
  if (b == B - 1) end_gradients(g);
}

void sf_graph_submit_optimizer(sf_graph *g, double lr, long step)
{
  /* rank-local (mpi = 0) even in a spatial run: parameters and optimizer state are replicated on
   * every rank, each updates its own copies */
  const sf_topt local = {.prio = g->opt_low.prio, .mpi = 0};
  for (int p = 0; p < g->P; p++) insert_task_sumsq(&local, g->hsumsq[p], g->hg[p]);
  insert_task_clip_coef(&local, g->clip, g->hsumsq, g->P, SF_CLIP_MAX_NORM);
  for (int p = 0; p < g->P; p++) {
    if (g->opt == SF_OPT_SGD)
      insert_task_sgd(&local, g->hp[p], g->hg[p], g->clip, lr);
    else if (g->opt == SF_OPT_RMSPROP)
      insert_task_rmsprop(&local, g->hp[p], g->hv[p], g->hg[p], g->clip, lr, SF_RMSPROP_ALPHA, SF_RMSPROP_EPS);
    else
      insert_task_adam(&local, g->hp[p], g->hm[p], g->hv[p], g->hg[p], g->clip, lr, SF_ADAM_BETA1, SF_ADAM_BETA2,
                       SF_ADAM_EPS, step);
  }
}
