/* Building and tearing down the training-step task graph's data (scaffold/graph.h) on the block
 * plan of graph_plan.c, in named steps (sf_graph_create): every activation and gradient tensor,
 * the GroupNorm/loss/Dice partial sums, and vector handles on slices of the parameter, gradient and
 * Adam arenas. Everything is allocated here once, so a step allocates nothing. In a spatially
 * distributed run (scaffold/dist.h) slabs and partial sums are registered with their StarPU-MPI
 * owner and only the owned ones get memory; parameters and class weights are per-node replicas. */
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/ops.h"
#include "scaffold/runtime.h"
#include "scaffold/switches.h"

static int fail(char *err, size_t errlen, const char *msg)
{
  if (err && errlen) snprintf(err, errlen, "%s", msg);
  return -1;
}

static int param(const sf_graph *g, const char *fmt, int k, const char *suffix)
{
  char name[96], prefix[48];
  snprintf(prefix, sizeof prefix, fmt, k);
  snprintf(name, sizeof name, "%s%s", prefix, suffix);
  int i = sf_unet_find_param(g->u, name);
  if (i < 0) SF_ABORT("U-Net parameter %s is missing from the table", name);
  return i;
}

/* A tensor of edge e at level `level` split into the graph's blocks; spatial runs: blocks on their
 * owners, with halo pieces where a conv reads them (depth planes; with H/W blocks, the columns that
 * start the padding of graph_blocks.c). */
sf_tensor_grid sf_graph_tensor_grid(const lvl_grid *lg)
{
  return (sf_tensor_grid){.nd = lg->nd, .nh = lg->nh, .nw = lg->nw, .d0 = lg->d0, .h0 = lg->h0, .w0 = lg->w0};
}

/* A tensor of edge e in the block grid lg (with halo pieces when halo != 0; blocked: along the
 * columns, else the depth). */
static void tens_in(sf_graph *g, sf_tensor *t, const char *name, int e, const lvl_grid *lg, int blocked, int C,
                    size_t es, int halo)
{
  sf_tensor_grid grid = sf_graph_tensor_grid(lg);
  if (g->spatial > 1) {
    int mask = !halo ? 0 : blocked ? 1 << SF_AXIS_W : 1 << SF_AXIS_D;
    sf_tensor_dist d = {.owner = lg->owner, .me = g->me, .scope = sf_dist_replica(), .obj = g->ntensor++, .halo = mask};
    sf_tensor_init_grid(t, name, e, e, e, C, es, &grid, &d);
  } else {
    sf_tensor_init_grid(t, name, e, e, e, C, es, &grid, NULL);
  }
  g->bytes += t->data_bytes + t->plane_bytes;
}

static void tens(sf_graph *g, sf_tensor *t, const char *name, int level, int C, size_t es, int halo)
{
  tens_in(g, t, name, g->u->edge[level], &g->lg[level], sf_graph_blocked_at(g, level), C, es, halo);
}

/* A float activation tensor of C channels at level i. */
static void act(sf_graph *g, sf_tensor *t, const char *name, int level, int C)
{
  tens(g, t, name, level, C, sizeof(float), 1);
}

/* A vector handle on ptr owned by world rank `owner` (or SF_DIST_PER_NODE). Spatial runs register
 * it with StarPU-MPI, and data owned by another rank gets no memory here. */
static sf_handle gvec(sf_graph *g, void *ptr, size_t n, size_t es, const char *name, int owner)
{
  if (g->spatial <= 1) return sf_vector_register(ptr, n, es, name);
  int local = owner == g->me || owner == SF_DIST_PER_NODE;
  sf_handle h = local ? sf_vector_register(ptr, n, es, name) : sf_vector_register_remote(n, es, name);
  int64_t tag = owner == SF_DIST_PER_NODE ? sf_dist_tag(SF_TAG_NODE, 0, g->nnode++, 0)
                                          : sf_dist_tag(SF_TAG_SMALL, sf_dist_replica(), g->nsmall++, 0);
  sf_dist_register(h, tag, owner);
  return h;
}

static void gn_init(sf_graph *g, gn_layer *n, int level, int C, int gamma, int beta)
{
  const int G = g->G, S = g->lg[level].S;
  const int *owner = g->lg[level].owner;
  n->S = S;
  size_t e = (size_t)g->u->edge[level];
  n->gamma = gamma;
  n->beta = beta;
  n->C = C;
  n->ntotal = e * e * e;
  size_t bw = (size_t)2 * G + 2 * (size_t)C;
  n->mem_len = (size_t)(S + 1) * 2 * G + (size_t)(S + 1) * bw;
  n->mem = sf_data_alloc(n->mem_len * sizeof(double), "GroupNorm partial sums");
  g->bytes += n->mem_len * sizeof(double);
  double *p = n->mem;
  for (int k = 0; k < S; k++, p += 2 * G)
    n->stat_part[k] = gvec(g, p, 2 * G, sizeof(double), "gn.stat_part", owner[k]);
  n->stats = gvec(g, p, 2 * G, sizeof(double), "gn.stats", g->root);
  p += 2 * G;
  for (int k = 0; k < S; k++, p += bw) n->bwd_part[k] = gvec(g, p, bw, sizeof(double), "gn.bwd_part", owner[k]);
  n->bwd_sum = gvec(g, p, bw, sizeof(double), "gn.bwd_sum", g->root);
}

static void gn_free(const sf_graph *g, gn_layer *n)
{
  if (!n->mem) return;
  (void)g;
  for (int k = 0; k < n->S; k++) {
    sf_handle_unregister(n->stat_part[k]);
    sf_handle_unregister(n->bwd_part[k]);
  }
  sf_handle_unregister(n->stats);
  sf_handle_unregister(n->bwd_sum);
  sf_data_free(n->mem, n->mem_len * sizeof(double));
  n->mem = NULL;
}

/* A DoubleConv block; fmt/k name its parameters (model.h), tag names its tensors. With
 * activation_checkpointing its four tensors live in its level's buffers (graph_internal.h): pre_a
 * and pre_b in A, act_a in Y (the level's second gradient buffer), out in B. */
static void block_init(sf_graph *g, dconv_block *b, const char *tag, int level, int cin, int cout, const char *fmt,
                       int k)
{
  char n[48];
  b->level = level;
  b->cin = cin;
  b->cout = cout;
  b->w_a = param(g, fmt, k, ".double_conv.0.weight");
  b->w_b = param(g, fmt, k, ".double_conv.3.weight");
  gn_init(g, &b->gn_a, level, cout, param(g, fmt, k, ".double_conv.1.weight"), param(g, fmt, k, ".double_conv.1.bias"));
  gn_init(g, &b->gn_b, level, cout, param(g, fmt, k, ".double_conv.4.weight"), param(g, fmt, k, ".double_conv.4.bias"));
  if (g->checkpointing) {
    sf_tensor_alias(&b->pre_a, &g->ck_a[level]);
    sf_tensor_alias(&b->act_a, &g->g_pre_b[level]);
    sf_tensor_alias(&b->pre_b, &g->ck_a[level]);
    sf_tensor_alias(&b->out, &g->ck_b[level]);
    return;
  }
  snprintf(n, sizeof n, "%s.pre_a", tag);
  act(g, &b->pre_a, n, level, cout);
  snprintf(n, sizeof n, "%s.act_a", tag);
  act(g, &b->act_a, n, level, cout);
  snprintf(n, sizeof n, "%s.pre_b", tag);
  act(g, &b->pre_b, n, level, cout);
  snprintf(n, sizeof n, "%s.out", tag);
  act(g, &b->out, n, level, cout);
}

static void block_free(const sf_graph *g, dconv_block *b)
{
  gn_free(g, &b->gn_a);
  gn_free(g, &b->gn_b);
  sf_tensor_destroy(&b->pre_a);
  sf_tensor_destroy(&b->act_a);
  sf_tensor_destroy(&b->pre_b);
  sf_tensor_destroy(&b->out);
}

/* How the slab contributions to a weight gradient come together. RW|COMMUTE accumulation
 * serialises one layer's slab contributions; with 2 workers that left one idle whenever a layer's
 * weight gradients were the only work left (5.8 % of a ps 5 base 64 step at the end of the
 * backward pass; 7.5 % of a ps 6 base 64 step inside it, where buffer reuse puts them on the
 * critical path). So, in a single process with more than one slab and more than one worker:
 *  - small weights (<= SF_GRAD_PART_MAX_FLOATS floats, e.g. the level-0 layers at base 64) get
 *    per-slab partials summed in slab order at the end (S copies of small tensors);
 *  - in CPU-only runs, the other 3x3x3 conv weights are split into two blocks of rows, taps
 *    [0,14) and [14,27) (no memory): each slab's dW becomes two tasks, one per block, each
 *    building only its taps' im2col columns, so two workers can accumulate into one layer at
 *    once (graph_backward.c).
 * Under more_determinism every weight gradient uses partials. The environment variable
 * SF_GRAD_PART_MAX_FLOATS overrides the threshold (tests: 0 splits every conv weight it can). */
#ifndef SF_GRAD_PART_MAX_FLOATS
#define SF_GRAD_PART_MAX_FLOATS ((size_t)1 << 18)
#endif
static void choose_partial_grads(sf_graph *g)
{
  const int P = g->P;
  int nw = sf_runtime_nworkers();
  int small_ok = g->S > 1 && g->spatial <= 1 && nw > 1; /* ranks may differ in workers */
  size_t max_floats = SF_GRAD_PART_MAX_FLOATS;
  const char *env = sf_switch("SF_GRAD_PART_MAX_FLOATS");
  if (env && *env) max_floats = (size_t)strtoull(env, NULL, 10);
  g->part_grad = sf_calloc((size_t)P, 1, "gradient partial flags");
  g->part_off = sf_calloc((size_t)P, sizeof(size_t), "gradient partial offsets");
  g->part_total = 0;
  for (int p = 0; p < P; p++) {
    size_t n = g->u->params[p].numel;
    if (!g->slab_grad[p] || !(g->deterministic || (small_ok && n <= max_floats))) continue;
    g->part_grad[p] = 1;
    g->part_off[p] = g->part_total;
    g->part_total += (n + 15) & ~(size_t)15; /* 64-byte aligned tensors */
  }
  g->split_grad = sf_calloc((size_t)P * 2, sizeof(sf_handle), "gradient tap blocks");
  g->split_taps = sf_calloc((size_t)P, sizeof(int), "gradient tap blocks");
  if (!small_ok || g->deterministic || sf_runtime_ncpu_workers() != nw) return;
  for (int i = 0; i <= g->L; i++)
    for (int d = 0; d < 2; d++) {
      if (d == 1 && i == g->L) break; /* dec[] has L blocks */
      const dconv_block *b = d ? &g->dec[i] : &g->enc[i];
      const int ws[2] = {b->w_a, b->w_b}, cins[2] = {b->cin, b->cout};
      for (int j = 0; j < 2; j++) {
        int p = ws[j];
        if (g->part_grad[p] || b->cout < 17) continue; /* the taps kernel needs Cout >= 17 */
        g->split_taps[p] = SF_CONV3D_TAPS_SPLIT;
        sf_vector_split_plan(g->hg[p], (size_t)SF_CONV3D_TAPS_SPLIT * cins[j] * b->cout, &g->split_grad[2 * p]);
      }
    }
}

/* A batch (bmax > 1): the GroupNorm reduction writes its parameter gradients (W), so each sample
 * of the batch gets its own copies, summed in sample order at the end (graph_backward.c); the other
 * gradients add up across the samples in place. Owned by the replica's shard 0, as those gradients. */
static void gn_sample_init(sf_graph *g)
{
  const int P = g->P;
  if (g->bmax <= 1) return;
  size_t per = 0;
  for (int p = 0; p < P; p++)
    if (!g->slab_grad[p]) per += g->u->params[p].numel;
  g->gn_sample_floats = (size_t)g->bmax * per;
  g->gn_sample_mem = sf_data_alloc(g->gn_sample_floats * sizeof(float), "per-sample GroupNorm gradients");
  g->bytes += g->gn_sample_floats * sizeof(float);
  g->gn_sample = sf_calloc((size_t)g->bmax * P, sizeof(sf_handle), "per-sample GroupNorm gradient handles");
  float *mem = g->gn_sample_mem;
  for (int b = 0; b < g->bmax; b++)
    for (int p = 0; p < P; p++)
      if (!g->slab_grad[p]) {
        size_t n = g->u->params[p].numel;
        g->gn_sample[(size_t)b * P + p] = gvec(g, mem, n, sizeof(float), "grad.gn_sample", g->root);
        mem += n;
      }
}

static void gn_sample_free(sf_graph *g)
{
  if (!g->gn_sample) return;
  for (size_t i = 0; i < (size_t)g->bmax * g->P; i++) sf_handle_unregister(g->gn_sample[i]);
  free(g->gn_sample);
  sf_data_free(g->gn_sample_mem, g->gn_sample_floats * sizeof(float));
  g->gn_sample = NULL;
}

/* The level whose blocks contribute to each parameter's gradient: a DoubleConv's at its level, an
 * Up's at the deeper level its tasks run on, the OutConv's at level 0. */
static void param_levels(sf_graph *g)
{
  g->plevel = sf_calloc((size_t)g->P, sizeof(int), "parameter levels");
  for (int i = 0; i <= g->L; i++)
    for (int d = 0; d < 2; d++) {
      if (d == 1 && i == g->L) break;
      const dconv_block *b = d ? &g->dec[i] : &g->enc[i];
      const int ps[6] = {b->w_a, b->w_b, b->gn_a.gamma, b->gn_a.beta, b->gn_b.gamma, b->gn_b.beta};
      for (int j = 0; j < 6; j++) g->plevel[ps[j]] = i;
    }
  for (int i = 0; i < g->L; i++) g->plevel[g->up_w[i]] = g->plevel[g->up_b[i]] = i + 1;
}

static void params_init(sf_graph *g, float *params)
{
  const sf_unet *u = g->u;
  const int P = u->nparams, S = g->S;
  g->P = P;
  g->total = u->total_params;
  g->params = params;
  size_t ab = g->total * sizeof(float);
  g->grads = sf_data_alloc(ab, "gradients");
  g->m = sf_data_alloc(ab, "Adam first moments");
  g->v = sf_data_alloc(ab, "Adam second moments");
  g->bytes += 3 * ab;
  g->hp = sf_calloc((size_t)P, sizeof(sf_handle), "parameter handles");
  g->hg = sf_calloc((size_t)P, sizeof(sf_handle), "gradient handles");
  g->hm = sf_calloc((size_t)P, sizeof(sf_handle), "Adam handles");
  g->hv = sf_calloc((size_t)P, sizeof(sf_handle), "Adam handles");
  g->hsumsq = sf_calloc((size_t)P, sizeof(sf_handle), "norm handles");
  g->slab_grad = sf_calloc((size_t)P, 1, "gradient kinds");
  g->sumsq_buf = sf_data_alloc((size_t)P * sizeof(double), "gradient norm partials");
  if (g->spatial > 1) { /* every shard's gradient arena; the memory of ours */
    g->hgq = sf_calloc((size_t)g->spatial * P, sizeof(sf_handle), "shard gradient handles");
    for (int q = 0; q < g->spatial; q++)
      for (int p = 0; p < P; p++) {
        const sf_param_desc *d = &u->params[p];
        int rq = sf_dist_group_rank(q);
        sf_handle h = q == g->shard ? sf_vector_register(g->grads + d->offset, d->numel, sizeof(float), "grad")
                                    : sf_vector_register_remote(d->numel, sizeof(float), "grad");
        sf_dist_register(h, sf_dist_tag(SF_TAG_GRAD, rq, p, 0), rq);
        g->hgq[(size_t)q * P + p] = h;
      }
  }
  for (int p = 0; p < P; p++) {
    const sf_param_desc *d = &u->params[p];
    g->hp[p] = gvec(g, params + d->offset, d->numel, sizeof(float), d->name, SF_DIST_PER_NODE);
    g->hg[p] = g->hgq ? g->hgq[(size_t)g->shard * P + p]
                      : sf_vector_register(g->grads + d->offset, d->numel, sizeof(float), "grad");
    g->hm[p] = sf_vector_register(g->m + d->offset, d->numel, sizeof(float), "adam.m");
    g->hv[p] = sf_vector_register(g->v + d->offset, d->numel, sizeof(float), "adam.v");
    g->hsumsq[p] = sf_vector_register(g->sumsq_buf + p, 1, sizeof(double), "grad.sumsq");
    g->slab_grad[p] = d->kind != SF_PARAM_GN_GAMMA && d->kind != SF_PARAM_GN_BETA;
  }
  g->clip = sf_vector_register(g->clip_buf, 2, sizeof(double), "grad.clip");
  param_levels(g);
  choose_partial_grads(g);
  gn_sample_init(g);
  if (g->part_total) {
    /* per-block partials of parameter p for the blocks of its level, on their owners; this rank's
     * arenas: as many as it owns blocks of level 0 (no deeper level has more) */
    int nown = 0;
    for (int k = 0; k < S; k++) nown += g->owner[k] == g->me;
    g->gpart_slabs = nown;
    size_t pb = g->part_total * sizeof(float);
    g->gpart = sf_data_alloc((size_t)nown * pb, "per-slab gradient partials");
    g->bytes += (size_t)nown * pb;
    g->hgp = sf_calloc((size_t)S * P, sizeof(sf_handle), "gradient partial handles");
    for (int p = 0; p < P; p++) {
      if (!g->part_grad[p]) continue;
      const lvl_grid *lv = &g->lg[g->plevel[p]];
      const sf_param_desc *d = &u->params[p];
      for (int k = 0, own = 0; k < lv->S; k++) {
        sf_handle h;
        if (lv->owner[k] == g->me)
          h = sf_vector_register(g->gpart + (size_t)own++ * g->part_total + g->part_off[p], d->numel, sizeof(float),
                                 "grad.part");
        else
          h = sf_vector_register_remote(d->numel, sizeof(float), "grad.part");
        if (g->spatial > 1) sf_dist_register(h, sf_dist_tag(SF_TAG_GPART, sf_dist_replica(), k * P + p, 0), lv->owner[k]);
        g->hgp[(size_t)k * P + p] = h;
      }
    }
  }
  if (sf_dist_active()) { /* sum over every rank, mean over replicas (spec §6.9) */
    size_t *n = sf_malloc((size_t)P * sizeof *n, "parameter sizes");
    for (int p = 0; p < P; p++) n[p] = u->params[p].numel;
    g->ar = sf_allreduce_create(g->hg, n, P, 1.0f / (float)sf_dist_replicas());
    free(n);
  }
}

/* torch_amp: 1 (scaffold/tasks.h sf_conv3d_packed_bytes): every 3x3x3 conv weight whose bf16 copies the kernels can
 * read in one layout for all slabs gets them, packed once per forward instead of by each slab's task (the forward and
 * dX of a 256 -> 256 weight on 4 slabs of 2 x 8^2 voxels spent longer packing than multiplying). Not in spatial runs
 * (their handles are all StarPU-MPI's). */
static void packed_weights_init(sf_graph *g)
{
  const int P = g->P;
  g->hpk = sf_calloc((size_t)2 * P, sizeof(sf_handle), "packed weight handles");
  size_t *len = sf_calloc((size_t)2 * P, sizeof(size_t), "packed weight sizes"), total = 0;
  for (int i = 0; i < 2 * P; i++) {
    const sf_param_desc *d = &g->u->params[i / 2];
    if (d->kind == SF_PARAM_CONV3_W && g->spatial <= 1)
      len[i] = sf_conv3d_packed_bytes(&g->opt_crit, d->cin, d->cout, i % 2);
    total += (len[i] + 63) & ~(size_t)63; /* each on a cache line */
  }
  if (total) {
    g->wpack = sf_data_alloc(total, "bf16 packed weights");
    g->wpack_bytes = total;
    g->bytes += total;
  }
  size_t at = 0;
  for (int i = 0; i < 2 * P; i++) {
    if (!len[i]) continue;
    g->hpk[i] = sf_vector_register(g->wpack + at, len[i] / sizeof(float), sizeof(float), "weights.bf16");
    at += (len[i] + 63) & ~(size_t)63;
  }
  free(len);
}

void sf_graph_submit_weight_packing(sf_graph *g)
{
  for (int p = 0; p < g->P; p++) {
    if (!g->hpk[2 * p] && !g->hpk[2 * p + 1]) continue;
    const sf_param_desc *d = &g->u->params[p];
    insert_task_conv3d_pack_bf16(&g->opt_crit, g->hpk[2 * p], g->hpk[2 * p + 1], g->hp[p], d->cin, d->cout);
  }
}

static void packed_weights_free(sf_graph *g)
{
  for (int i = 0; g->hpk && i < 2 * g->P; i++)
    if (g->hpk[i]) sf_handle_unregister(g->hpk[i]);
  free(g->hpk);
  g->hpk = NULL;
  if (g->wpack) sf_data_free(g->wpack, g->wpack_bytes);
  g->wpack = NULL;
}

static void params_free(sf_graph *g)
{
  const int P = g->P, S = g->S;
  if (!g->hp) return;
  sf_allreduce_destroy(g->ar);
  g->ar = NULL;
  gn_sample_free(g);
  for (int p = 0; p < P; p++) /* before the whole is unregistered */
    if (g->split_taps[p]) sf_vector_split_clean(g->hg[p], &g->split_grad[2 * p]);
  free(g->split_grad);
  free(g->split_taps);
  for (int p = 0; p < P; p++) {
    sf_handle_unregister(g->hp[p]);
    if (!g->hgq) sf_handle_unregister(g->hg[p]);
    sf_handle_unregister(g->hm[p]);
    sf_handle_unregister(g->hv[p]);
    sf_handle_unregister(g->hsumsq[p]);
  }
  sf_handle_unregister(g->clip);
  if (g->hgp) {
    for (size_t i = 0; i < (size_t)S * P; i++)
      if (g->hgp[i]) sf_handle_unregister(g->hgp[i]);
    sf_data_free(g->gpart, (size_t)g->gpart_slabs * g->part_total * sizeof(float));
    free(g->hgp);
  }
  free(g->part_grad);
  free(g->part_off);
  free(g->plevel);
  if (g->hgq) {
    for (size_t i = 0; i < (size_t)g->spatial * P; i++) sf_handle_unregister(g->hgq[i]);
    free(g->hgq);
    g->hgq = NULL;
  }
  size_t ab = g->total * sizeof(float);
  sf_data_free(g->grads, ab);
  sf_data_free(g->m, ab);
  sf_data_free(g->v, ab);
  sf_data_free(g->sumsq_buf, (size_t)P * sizeof(double));
  free(g->hp);
  free(g->hg);
  free(g->hm);
  free(g->hv);
  free(g->hsumsq);
  free(g->slab_grad);
  g->hp = NULL;
}

/* Loss and Dice partial sums, the loss sums of each sample of a batch, and (bmax > 1) the parts of
 * the batch's pooled CE weight sum. Registered in the same order on every rank (StarPU-MPI tags). */
static void loss_init(sf_graph *g)
{
  const int S = g->S, K = g->K, NL = SF_LOSS_NACC(K), ND = 3 * K, B = g->bmax, NW = B > 1 ? S + 1 : 0;
  g->small_len = (size_t)(S + B) * NL + (size_t)(S + 1) * ND + (size_t)NW;
  g->small = sf_data_alloc(g->small_len * sizeof(double), "loss partial sums");
  g->loss_acc = sf_calloc((size_t)B, sizeof(sf_handle), "loss sum handles");
  double *p = g->small;
  for (int k = 0; k < S; k++, p += NL) g->loss_part[k] = gvec(g, p, NL, sizeof(double), "loss.part", g->owner[k]);
  g->loss_acc_buf = p;
  g->loss_acc[0] = gvec(g, p, NL, sizeof(double), "loss.acc", g->root);
  p += (size_t)B * NL;
  for (int k = 0; k < S; k++, p += ND) g->dice_part[k] = gvec(g, p, ND, sizeof(double), "dice.part", g->owner[k]);
  g->dice_acc_buf = p;
  g->dice_acc = gvec(g, p, ND, sizeof(double), "dice.acc", g->root);
  p += ND;
  for (int b = 1; b < B; b++)
    g->loss_acc[b] = gvec(g, g->loss_acc_buf + (size_t)b * NL, NL, sizeof(double), "loss.acc", g->root);
  if (NW) {
    for (int k = 0; k < S; k++, p++) g->wsum_part[k] = gvec(g, p, 1, sizeof(double), "loss.wsum_part", g->owner[k]);
    g->wsum = gvec(g, p, 1, sizeof(double), "loss.wsum", g->root);
  }
  g->cw_buf = sf_data_alloc((size_t)K * sizeof(float), "class weights");
  g->cw = gvec(g, g->cw_buf, K, sizeof(float), "class_weights", SF_DIST_PER_NODE);
}

static void loss_free(sf_graph *g)
{
  if (!g->small) return;
  for (int k = 0; k < g->S; k++) {
    sf_handle_unregister(g->loss_part[k]);
    sf_handle_unregister(g->dice_part[k]);
    sf_handle_unregister(g->wsum_part[k]);
  }
  for (int b = 0; b < g->bmax; b++) sf_handle_unregister(g->loss_acc[b]);
  free(g->loss_acc);
  sf_handle_unregister(g->wsum);
  sf_handle_unregister(g->dice_acc);
  sf_handle_unregister(g->cw);
  sf_data_free(g->small, g->small_len * sizeof(double));
  sf_data_free(g->cw_buf, (size_t)g->K * sizeof(float));
  g->small = NULL;
}

/* Task options: a spatial replica's tasks go through StarPU-MPI (scaffold/tasks.h); priorities:
 * sample loads, then the activation path, then weight gradients. torch_amp: 1 runs the 3x3x3 (and,
 * with AMX, the transposed) convolutions in bf16 where the CPU has a bf16 engine (sf_topt.bf16). */
static void set_task_options(sf_graph *g, const sf_config *c, int spatial)
{
  int bf16 = c->torch_amp && sf_cpu_bf16_engine() != NULL;
  g->opt_load = (sf_topt){.prio = 2, .mpi = spatial > 1, .bf16 = bf16};
  g->opt_crit = (sf_topt){.prio = 1, .mpi = spatial > 1, .bf16 = bf16};
  g->opt_low = (sf_topt){.prio = 0, .mpi = spatial > 1, .bf16 = bf16};
}

/* Where this rank stands and the network's shape and training switches. */
static void set_shape(sf_graph *g, const sf_unet *u, const sf_config *c, int spatial)
{
  g->opt = sf_optimizer_find(c->optimizer)->kind; /* checked by sf_graph_check_config */
  g->spatial = spatial;
  g->me = sf_dist_rank();
  g->shard = sf_dist_shard();
  g->root = sf_dist_group_rank(0);
  g->u = u;
  g->L = u->levels;
  g->K = u->n_classes;
  g->G = u->groups;
  g->cin0 = u->in_channels;
  g->deterministic = c->more_determinism != 0;
  g->checkpointing = c->activation_checkpointing != 0;
  g->bmax = c->local_batch_size > 1 ? (int)c->local_batch_size : 1;
}

/* The input and labels, the logits and their gradient. */
static void alloc_io_tensors(sf_graph *g)
{
  tens(g, &g->in, "input", 0, g->cin0, sizeof(float), 1);
  tens(g, &g->lab, "labels", 0, 1, sizeof(uint16_t), 0);
  act(g, &g->logits, "logits", 0, g->K);
  act(g, &g->g_logits, "g.logits", 0, g->K);
}

/* Activation gradients of a level rotate through two buffers (X = g_out, Y = g_pre_b), the
 * liveness of a DoubleConv backward: g_out -> g_pre_b -> g_act_a (X again: g_out is dead once the
 * GroupNorm backward has read it) -> g_pre_a (Y: dead once conv b's dX and dW have read it). The
 * Up's output gradient g_up lives in X too (g_out is dead after the block's backward), and so
 * does the forward's Up output `up` (dead after the concat): alias_decoder_buffers. StarPU orders
 * the reuse through the handles' dependencies. At ps 6 base 64 this saves 6 level-0 tensors' worth
 * (384 MiB). activation_checkpointing adds the two recompute buffers A and B per level. */
static void alloc_level_gradients(sf_graph *g)
{
  const int *ch = g->u->channels;
  char tag[48];
  for (int i = 0; i <= g->L; i++) {
    snprintf(tag, sizeof tag, "g.L%d.X", i);
    act(g, &g->g_out[i], tag, i, ch[i]);
    snprintf(tag, sizeof tag, "g.L%d.Y", i);
    act(g, &g->g_pre_b[i], tag, i, ch[i]);
    sf_tensor_alias(&g->g_act_a[i], &g->g_out[i]);
    sf_tensor_alias(&g->g_pre_a[i], &g->g_pre_b[i]);
    if (!g->checkpointing) continue;
    snprintf(tag, sizeof tag, "L%d.A", i);
    act(g, &g->ck_a[i], tag, i, ch[i]);
    snprintf(tag, sizeof tag, "L%d.B", i);
    act(g, &g->ck_b[i], tag, i, ch[i]);
  }
}

/* The encoder's DoubleConv blocks, with each Down's max-pool output, argmax and pool gradient. */
static void alloc_encoder(sf_graph *g)
{
  const int *ch = g->u->channels;
  char tag[48];
  block_init(g, &g->enc[0], "inc", 0, g->cin0, ch[0], "inc", 0);
  for (int i = 1; i <= g->L; i++) {
    snprintf(tag, sizeof tag, "down%d", i);
    block_init(g, &g->enc[i], tag, i, ch[i - 1], ch[i], "down%d.maxpool_conv.1", i);
    snprintf(tag, sizeof tag, "down%d.pool", i);
    act(g, &g->pool[i], tag, i, ch[i - 1]);
    snprintf(tag, sizeof tag, "down%d.argmax", i);
    tens(g, &g->pidx[i], tag, i, ch[i - 1], 1, 0);
    snprintf(tag, sizeof tag, "g.down%d.pool", i);
    act(g, &g->g_pool[i], tag, i, ch[i - 1]);
  }
}

/* The decoder: dec[i] is the Up numbered L-i (up1 is the deepest), with its up-conv parameters,
 * the concat and the skip gradient; then the output conv's parameters. */
static void alloc_decoder(sf_graph *g)
{
  const int *ch = g->u->channels;
  char tag[48];
  for (int i = 0; i < g->L; i++) {
    int k = g->L - i;
    snprintf(tag, sizeof tag, "up%d", k);
    block_init(g, &g->dec[i], tag, i, ch[i + 1], ch[i], "up%d.conv", k);
    g->up_w[i] = param(g, "up%d", k, ".up.weight");
    g->up_b[i] = param(g, "up%d", k, ".up.bias");
    snprintf(tag, sizeof tag, "up%d.cat", k);
    act(g, &g->cat[i], tag, i, 2 * ch[i]);
    snprintf(tag, sizeof tag, "g.up%d.skip", k);
    if (g->checkpointing) /* B: enc[i].out is dead from the concat to its block's recompute, which rewrites it */
      sf_tensor_alias(&g->g_skip[i], &g->ck_b[i]);
    else
      act(g, &g->g_skip[i], tag, i, ch[i]);
  }
  g->out_w = sf_unet_find_param(g->u, "outc.conv.weight");
  g->out_b = sf_unet_find_param(g->u, "outc.conv.bias");
  SF_ASSERT(g->out_w >= 0 && g->out_b >= 0);
}

/* Merged views of level l-1 tensors where level l has fewer blocks (around the max-pool and the
 * up-conv). */
static void alloc_merged_views(sf_graph *g)
{
  const int *ch = g->u->channels;
  char tag[48];
  for (int l = 1; l <= g->L; l++) {
    if (!g->merges[l]) continue;
    sf_tensor *views[5] = {&g->m_pool_in[l], &g->m_pool_grad[l], &g->m_skip_grad[l], &g->m_up[l], &g->m_up_grad[l]};
    static const char *const what[5] = {"pool_in", "pool_grad", "skip_grad", "up", "up_grad"};
    for (int j = 0; j < 5; j++) {
      snprintf(tag, sizeof tag, "L%d.merged.%s", l - 1, what[j]);
      tens_in(g, views[j], tag, g->u->edge[l - 1], &g->mv[l], 0, ch[l - 1], sizeof(float), 0);
    }
  }
}

/* The decoder's buffers that live in others: the concat's gradient g_cat overwrites the concat
 * itself once conv a's weight gradient has read it (graph_backward.c conv3_backward); the Up's
 * output and its gradient live in X (alloc_level_gradients). */
static void alias_decoder_buffers(sf_graph *g)
{
  for (int i = 0; i < g->L; i++) {
    sf_tensor_alias(&g->g_cat[i], &g->cat[i]);
    sf_tensor_alias(&g->g_up[i], &g->g_out[i]);
    sf_tensor_alias(&g->up[i], &g->g_out[i]);
  }
}

sf_graph *sf_graph_create(const sf_unet *u, const sf_config *c, float *params, char *err, size_t errlen)
{
  if (!sf_runtime_is_initialized()) {
    fail(err, errlen, "sf_graph_create: StarPU is not running (call sf_runtime_init first)");
    return NULL;
  }
  const int spatial = sf_dist_spatial();
  int fine[3], depth_shards;
  if (sf_graph_plan_blocks(u, c, spatial, fine, &depth_shards, err, errlen) != 0) return NULL;
  sf_graph *g = sf_calloc(1, sizeof *g, "task graph");
  set_shape(g, u, c, spatial);
  set_task_options(g, c, spatial);
  sf_graph_level_grids(g, u, fine, depth_shards);
  alloc_io_tensors(g);
  alloc_level_gradients(g);
  alloc_encoder(g);
  alloc_decoder(g);
  alloc_merged_views(g);
  alias_decoder_buffers(g);
  loss_init(g);
  params_init(g, params);
  packed_weights_init(g);
  sf_graph_scratch_init(g);
  return g;
}

void sf_graph_destroy(sf_graph *g)
{
  if (!g) return;
  sf_runtime_wait_all();
  sf_tensor_destroy(&g->in);
  sf_tensor_destroy(&g->lab);
  sf_tensor_destroy(&g->logits);
  sf_tensor_destroy(&g->g_logits);
  for (int i = 0; i <= g->L; i++) {
    block_free(g, &g->enc[i]);
    sf_tensor_destroy(&g->pool[i]);
    sf_tensor_destroy(&g->pidx[i]);
    sf_tensor_destroy(&g->g_pool[i]);
    sf_tensor_destroy(&g->g_out[i]);
    sf_tensor_destroy(&g->g_pre_b[i]);
    sf_tensor_destroy(&g->g_act_a[i]);
    sf_tensor_destroy(&g->g_pre_a[i]);
    sf_tensor_destroy(&g->ck_a[i]);
    sf_tensor_destroy(&g->ck_b[i]);
  }
  for (int l = 1; l <= g->L; l++) {
    sf_tensor_destroy(&g->m_pool_in[l]);
    sf_tensor_destroy(&g->m_pool_grad[l]);
    sf_tensor_destroy(&g->m_skip_grad[l]);
    sf_tensor_destroy(&g->m_up[l]);
    sf_tensor_destroy(&g->m_up_grad[l]);
  }
  for (int i = 0; i < g->L; i++) {
    block_free(g, &g->dec[i]);
    sf_tensor_destroy(&g->up[i]);
    sf_tensor_destroy(&g->cat[i]);
    sf_tensor_destroy(&g->g_cat[i]);
    sf_tensor_destroy(&g->g_skip[i]);
    sf_tensor_destroy(&g->g_up[i]);
  }
  sf_graph_scratch_free(g);
  loss_free(g);
  packed_weights_free(g);
  params_free(g);
  free(g);
}

void sf_graph_acquire_state(sf_graph *g, int write)
{
  for (int p = 0; p < g->P; p++) {
    sf_handle_acquire(g->hp[p], write);
    sf_handle_acquire(g->hg[p], write);
    sf_handle_acquire(g->hm[p], write);
    sf_handle_acquire(g->hv[p], write);
  }
}

void sf_graph_release_state(sf_graph *g)
{
  for (int p = 0; p < g->P; p++) {
    sf_handle_release(g->hp[p]);
    sf_handle_release(g->hg[p]);
    sf_handle_release(g->hm[p]);
    sf_handle_release(g->hv[p]);
  }
}

float *sf_graph_params(sf_graph *g) { return g->params; }
float *sf_graph_grads(sf_graph *g) { return g->grads; }
float *sf_graph_adam_m(sf_graph *g) { return g->m; }
float *sf_graph_adam_v(sf_graph *g) { return g->v; }
double sf_graph_last_grad_norm(const sf_graph *g) { return g->last_norm; }
double sf_graph_step_flops(const sf_graph *g) { return g->step_flops; }
int sf_graph_nslabs(const sf_graph *g) { return g->S; }
size_t sf_graph_packed_weight_bytes(const sf_graph *g) { return g->wpack_bytes; }

void sf_graph_describe(const sf_graph *g, char *buf, size_t len)
{
  char tasks[48], tiling[96], packed[80] = "";
  if (g->tasks_per_step > 0) snprintf(tasks, sizeof tasks, "%ld tasks/step", g->tasks_per_step);
  else snprintf(tasks, sizeof tasks, "tasks/step not counted yet (no step run)");
  if (sf_graph_blocked(g))
    snprintf(tiling, sizeof tiling, "%d blocks (%d depth slabs x %d x %d row and column blocks, convs on padded copies)",
             g->S, g->lg[0].nd, g->lg[0].nh, g->lg[0].nw);
  else snprintf(tiling, sizeof tiling, "%d depth slabs", g->S);
  if (g->wpack_bytes)
    snprintf(packed, sizeof packed, " (%.1f MiB of bf16 weights packed once per forward)",
             (double)g->wpack_bytes / (1 << 20));
  snprintf(buf, len, "task graph: %s (bottleneck edge %d), %s, %.1f MiB allocated%s, "
                     "weight gradients %s",
           tiling, g->u->edge[g->L], tasks, (double)g->bytes / (1 << 20), packed,
           g->deterministic ? "by per-slab partials summed in slab order (more_determinism)"
           : g->part_total  ? "accumulated in any order (RW|COMMUTE), the small ones by per-slab partials"
                            : "accumulated in any order (RW|COMMUTE)");
}
