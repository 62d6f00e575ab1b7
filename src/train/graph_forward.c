/* The U-Net forward pass as tasks (spec §5.1): inc, Down 1..L (max-pool + DoubleConv), Up L..1
 * (transposed conv, concat [skip, up], DoubleConv), OutConv. Each op is one task per depth slab;
 * a GroupNorm is stats per slab -> one fixed-order reduction -> normalize(+ReLU) per slab. In a
 * spatial run the same list runs on every shard; the conv inputs' boundary planes are copied first
 * (sf_halo_exchange), and StarPU-MPI moves planes and partial sums between shards. With
 * activation_checkpointing the blocks of a level write into the level's four shared buffers
 * (graph.c), and graph_backward.c recomputes what they overwrote with the two helpers here. */
#include "graph_internal.h"
#include "scaffold/model.h"

#define CRIT (&g->opt_crit)
#define PARAM(p) (g->hp[(p)])

/* y = conv3x3x3(x) per slab, with slabs k-1 and k+1 as halos. */
static void conv3(sf_graph *g, sf_tensor *y, sf_tensor *x, int w, int cin, int cout)
{
  if (sf_graph_blocked_at(g, sf_graph_level_of(g, x))) { /* H/W blocks: on padded copies (graph_blocks.c) */
    sf_graph_conv3_forward_blocked(g, y, x, w, cin, cout);
    return;
  }
  sf_halo_exchange(x); /* spatial runs: x's boundary planes to the neighbouring shards */
  for (int k = 0; k < x->nslabs; k++)
    insert_task_conv3d_forward(CRIT, y->slab[k], sf_tensor_lo(x, k), x->slab[k], sf_tensor_hi(x, k), PARAM(w),
                               sf_graph_packed(g, w, 0), x->H, x->W, cin, cout);
}

/* y = ReLU(GroupNorm(x)) with the statistics n->stats already holds */
static void gn_relu_apply(sf_graph *g, sf_tensor *y, sf_tensor *x, gn_layer *n)
{
  for (int k = 0; k < n->S; k++)
    insert_task_groupnorm_forward(CRIT, y->slab[k], x->slab[k], n->stats, PARAM(n->gamma), PARAM(n->beta), n->ntotal,
                                  n->C, g->G, SF_GN_EPS, 1);
}

/* y = ReLU(GroupNorm(x)) with statistics over the whole volume */
static void gn_relu(sf_graph *g, sf_tensor *y, sf_tensor *x, gn_layer *n)
{
  for (int k = 0; k < n->S; k++) insert_task_groupnorm_stats(CRIT, n->stat_part[k], x->slab[k], n->C, g->G);
  insert_task_sum_d(CRIT, n->stats, n->stat_part, n->S);
  gn_relu_apply(g, y, x, n);
}

static void double_conv(sf_graph *g, dconv_block *b, sf_tensor *x)
{
  conv3(g, &b->pre_a, x, b->w_a, b->cin, b->cout);
  gn_relu(g, &b->act_a, &b->pre_a, &b->gn_a);
  conv3(g, &b->pre_b, &b->act_a, b->w_b, b->cout, b->cout);
  gn_relu(g, &b->out, &b->pre_b, &b->gn_b);
}

void sf_graph_recompute_a(sf_graph *g, dconv_block *b, sf_tensor *x, sf_tensor *pre_a, sf_tensor *act_a)
{
  conv3(g, pre_a, x, b->w_a, b->cin, b->cout);
  gn_relu_apply(g, act_a, pre_a, &b->gn_a);
}

void sf_graph_recompute_b(sf_graph *g, dconv_block *b, sf_tensor *act_a, sf_tensor *pre_b, sf_tensor *out)
{
  conv3(g, pre_b, act_a, b->w_b, b->cout, b->cout);
  if (out) gn_relu_apply(g, out, pre_b, &b->gn_b);
}

void sf_graph_regrid(sf_graph *g, sf_tensor *dst, const sf_tensor *src)
{
  for (int kd = 0; kd < dst->nslabs; kd++) {
    int dl[3], dn[3];
    sf_tensor_block_box(dst, kd, dl, dn);
    for (int ks = 0; ks < src->nslabs; ks++) {
      int sl[3], sn[3], lo[3], ext[3], dlo[3], slo[3], whole = 1, empty = 0;
      sf_tensor_block_box(src, ks, sl, sn);
      for (int a = 0; a < 3; a++) {
        lo[a] = dl[a] > sl[a] ? dl[a] : sl[a];
        int hi = dl[a] + dn[a] < sl[a] + sn[a] ? dl[a] + dn[a] : sl[a] + sn[a];
        ext[a] = hi - lo[a];
        empty |= ext[a] <= 0;
        whole &= ext[a] == dn[a];
        dlo[a] = lo[a] - dl[a];
        slo[a] = lo[a] - sl[a];
      }
      if (!empty) insert_task_box_copy(CRIT, dst->slab[kd], dlo, src->slab[ks], slo, ext, dst->C, whole);
    }
  }
}

/* Level i's max-pool of enc[i-1]'s output; where level i has fewer blocks, on the merged view. */
static void pool_forward(sf_graph *g, int i, int C)
{
  sf_tensor *x = &g->enc[i - 1].out;
  if (g->merges[i]) {
    sf_graph_regrid(g, &g->m_pool_in[i], x);
    x = &g->m_pool_in[i];
  }
  for (int k = 0; k < x->nslabs; k++)
    insert_task_maxpool3d_forward(CRIT, g->pool[i].slab[k], g->pidx[i].slab[k], x->slab[k], C);
}

/* up[i] = the transposed conv of deep (level i+1); where level i+1 has fewer blocks, into the merged
 * view, then split onto level i's blocks. */
static void up_forward(sf_graph *g, int i, sf_tensor *deep)
{
  const int *ch = g->u->channels;
  sf_tensor *y = g->merges[i + 1] ? &g->m_up[i + 1] : &g->up[i];
  for (int k = 0; k < deep->nslabs; k++)
    insert_task_upconv3d_forward(CRIT, y->slab[k], deep->slab[k], PARAM(g->up_w[i]), PARAM(g->up_b[i]), ch[i + 1],
                                 ch[i]);
  if (g->merges[i + 1]) sf_graph_regrid(g, &g->up[i], y);
}

void sf_graph_submit_forward(sf_graph *g)
{
  const int L = g->L, S = g->S;
  const int *ch = g->u->channels;
  sf_graph_submit_weight_packing(g);
  double_conv(g, &g->enc[0], &g->in);
  for (int i = 1; i <= L; i++) {
    pool_forward(g, i, ch[i - 1]);
    double_conv(g, &g->enc[i], &g->pool[i]);
  }
  for (int i = L - 1; i >= 0; i--) {
    sf_tensor *deep = i + 1 == L ? &g->enc[L].out : &g->dec[i + 1].out;
    up_forward(g, i, deep);
    for (int k = 0; k < g->lg[i].S; k++)
      insert_task_concat_forward(CRIT, g->cat[i].slab[k], g->enc[i].out.slab[k], g->up[i].slab[k], ch[i], ch[i]);
    double_conv(g, &g->dec[i], &g->cat[i]);
  }
  for (int k = 0; k < S; k++)
    insert_task_conv1_forward(CRIT, g->logits.slab[k], g->dec[0].out.slab[k], PARAM(g->out_w), PARAM(g->out_b), ch[0],
                              g->K);
}
