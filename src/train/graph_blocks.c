/* The 3x3x3 convs of a graph whose blocks split rows and columns too (dc_num_shards along H and W;
 * docs/architecture.md §5). The conv kernels take halos along depth only, so a block's conv runs on a
 * padded copy of it: its columns padded with the neighbours' columns (the W halo pieces when those
 * belong to another rank), then its rows with the neighbours' column-padded rows (which carry the
 * corners), and its depth halos are the padded neighbours' planes. The conv computes the padded
 * shape and the block's output is the interior (crop). dW multiplies the padded input by the output
 * gradient in a zero border, so only the block's own outputs count. Declared flops are the block's
 * own (sf_topt.flops_share). The scratch tensors are allocated once per level and channel count
 * (sf_graph_scratch_init) and reused; StarPU orders the reuse through their handles. */
#include "graph_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"

#define CRIT (&g->opt_crit)
#define PARAM(p) (g->hp[(p)])

static const char *const kind_name[SF_SCR_KINDS] = {"padw", "pad.x", "pad.y", "out"};

int sf_graph_level_of(const sf_graph *g, const sf_tensor *t)
{
  for (int i = 0; i <= g->L; i++)
    if (g->u->edge[i] == t->D) return i;
  SF_ABORT("tensor %s of depth %d is at no level of the U-Net", t->name, t->D);
}

/* The scratch tensor of that kind at level l with C channels: the level's block grid with every
 * block's columns (and, but for PADW, rows) grown by one voxel on each side. */
static sf_tensor *scratch(sf_graph *g, int l, int C, int kind)
{
  for (int i = 0; i < g->nscratch; i++)
    if (g->scratch[i].level == l && g->scratch[i].C == C && g->scratch[i].kind == kind) return &g->scratch[i].t;
  SF_ASSERT(g->nscratch < SF_MAX_SCRATCH);
  blk_scratch *s = &g->scratch[g->nscratch++];
  s->level = l;
  s->C = C;
  s->kind = kind;
  const lvl_grid *lv = &g->lg[l];
  int rows = kind != SF_SCR_PADW_X, h0[SF_MAX_HW + 1], w0[SF_MAX_HW + 1];
  for (int i = 0; i <= lv->nh; i++) h0[i] = lv->h0[i] + (rows ? 2 * i : 0);
  for (int i = 0; i <= lv->nw; i++) w0[i] = lv->w0[i] + 2 * i;
  sf_tensor_grid grid = {.nd = lv->nd, .nh = lv->nh, .nw = lv->nw, .d0 = lv->d0, .h0 = h0, .w0 = w0};
  char name[48];
  snprintf(name, sizeof name, "L%d.%s.%d", l, kind_name[kind], C);
  int halo = kind == SF_SCR_PADW_X ? 1 << SF_AXIS_H : kind == SF_SCR_PAD_X || kind == SF_SCR_PAD_Y ? 1 << SF_AXIS_D : 0;
  const int e = g->u->edge[l];
  if (g->spatial > 1) {
    sf_tensor_dist d = {.owner = lv->owner, .me = g->me, .scope = sf_dist_replica(), .obj = g->ntensor++, .halo = halo};
    sf_tensor_init_grid(&s->t, name, e, h0[lv->nh], w0[lv->nw], C, sizeof(float), &grid, &d);
  } else {
    sf_tensor_init_grid(&s->t, name, e, h0[lv->nh], w0[lv->nw], C, sizeof(float), &grid, NULL);
  }
  g->bytes += s->t.data_bytes + s->t.plane_bytes;
  return &s->t;
}

/* Every scratch tensor the convs of block b need: inputs of cin and cout channels (the column-padded
 * copy is shared with the output gradient's, which is padded just before or after), the output
 * gradient (cout; later its zero-bordered copy for dW, in the same tensor), the padded outputs of the
 * forward (cout) and of dX (cin). */
static void scratch_for(sf_graph *g, const dconv_block *b)
{
  const int l = b->level, cs[2] = {b->cin, b->cout};
  for (int i = 0; i < 2; i++) {
    scratch(g, l, cs[i], SF_SCR_PADW_X);
    scratch(g, l, cs[i], SF_SCR_PAD_X);
    scratch(g, l, cs[i], SF_SCR_OUT);
  }
  scratch(g, l, b->cout, SF_SCR_PAD_Y);
}

void sf_graph_scratch_init(sf_graph *g)
{
  for (int i = 0; i <= g->L; i++)
    if (sf_graph_blocked_at(g, i)) scratch_for(g, &g->enc[i]);
  for (int i = 0; i < g->L; i++)
    if (sf_graph_blocked_at(g, i)) scratch_for(g, &g->dec[i]);
}

void sf_graph_scratch_free(sf_graph *g)
{
  for (int i = 0; i < g->nscratch; i++) sf_tensor_destroy(&g->scratch[i].t);
  g->nscratch = 0;
}

/* x padded by its neighbours' columns, then rows; the result's depth halos exchanged. side: the X or
 * Y scratch (an input and an output gradient of one conv are padded at once). */
static sf_tensor *pad(sf_graph *g, sf_tensor *x, int l, int C, int y_side)
{
  sf_tensor *pw = scratch(g, l, C, SF_SCR_PADW_X); /* one per level and C: the pads run one after the other */
  sf_tensor *p = scratch(g, l, C, y_side ? SF_SCR_PAD_Y : SF_SCR_PAD_X);
  sf_halo_exchange_axis(x, SF_AXIS_W);
  for (int k = 0; k < x->nslabs; k++)
    insert_task_pad_cols(CRIT, pw->slab[k], x->slab[k], sf_tensor_nb(x, k, SF_AXIS_W, SF_SIDE_LO),
                         sf_tensor_nb(x, k, SF_AXIS_W, SF_SIDE_HI), C);
  sf_halo_exchange_axis(pw, SF_AXIS_H);
  for (int k = 0; k < x->nslabs; k++)
    insert_task_pad_rows(CRIT, p->slab[k], pw->slab[k], sf_tensor_nb(pw, k, SF_AXIS_H, SF_SIDE_LO),
                         sf_tensor_nb(pw, k, SF_AXIS_H, SF_SIDE_HI), C);
  sf_halo_exchange_axis(p, SF_AXIS_D);
  return p;
}

/* Padded block k's rows and columns, and the share of its outputs that are the block's own. */
static double padded_shape(const sf_tensor *p, int k, int *H, int *W)
{
  int lo[3], n[3];
  sf_tensor_block_box(p, k, lo, n);
  *H = n[1];
  *W = n[2];
  return (double)(n[1] - 2) * (n[2] - 2) / ((double)n[1] * n[2]);
}

void sf_graph_conv3_forward_blocked(sf_graph *g, sf_tensor *y, sf_tensor *x, int w, int cin, int cout)
{
  const int l = sf_graph_level_of(g, x);
  sf_tensor *p = pad(g, x, l, cin, 0), *o = scratch(g, l, cout, SF_SCR_OUT);
  for (int k = 0; k < x->nslabs; k++) {
    int H, W;
    sf_topt t = g->opt_crit;
    t.flops_share = padded_shape(p, k, &H, &W);
    insert_task_conv3d_forward(&t, o->slab[k], sf_tensor_lo(p, k), p->slab[k], sf_tensor_hi(p, k), PARAM(w),
                               sf_graph_packed(g, w, 0), H, W, cin, cout);
    insert_task_crop_hw(CRIT, y->slab[k], o->slab[k], cout);
  }
}

void sf_graph_conv3_backward_blocked(sf_graph *g, sf_tensor *dx, sf_tensor *dy, sf_tensor *x, int w, int cin, int cout,
                                     sf_conv3_dw_fn dw)
{
  const int l = sf_graph_level_of(g, x);
  /* x is padded before dX overwrites it (dx may be x itself); dy's padded copy serves dX, then its
   * zero-bordered copy (the same tensor) serves dW */
  sf_tensor *py = dx ? pad(g, dy, l, cout, 1) : NULL, *px = pad(g, x, l, cin, 0);
  sf_tensor *z = scratch(g, l, cout, SF_SCR_PAD_Y), *o = dx ? scratch(g, l, cin, SF_SCR_OUT) : NULL;
  for (int k = 0; dx && k < x->nslabs; k++) {
    int H, W;
    sf_topt t = g->opt_crit;
    t.flops_share = padded_shape(py, k, &H, &W);
    insert_task_conv3d_backward_data(&t, o->slab[k], sf_tensor_lo(py, k), py->slab[k], sf_tensor_hi(py, k), PARAM(w),
                                     sf_graph_packed(g, w, 1), H, W, cin, cout);
    insert_task_crop_hw(CRIT, dx->slab[k], o->slab[k], cin);
  }
  for (int k = 0; k < x->nslabs; k++) {
    int H, W;
    insert_task_embed_hw(CRIT, z->slab[k], dy->slab[k], cout);
    sf_topt t = g->opt_low;
    t.flops_share = padded_shape(px, k, &H, &W);
    dw(g, sf_tensor_lo(px, k), px->slab[k], sf_tensor_hi(px, k), z->slab[k], H, W, w, cin, cout, k, &t);
  }
}
