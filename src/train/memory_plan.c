/* The memory plan (scaffold/memory_plan.h): pure arithmetic over the U-Net's topology that mirrors
 * the allocations of the training step (graph.c sf_graph_create, train_step.c sf_tctx_init) tensor
 * by tensor, so that `scaffold benchmark` can print the expected peak per rank and refuse a problem
 * that cannot fit before any work. Keep it in step with graph.c: the CTest memory_plan_rss compares
 * it with the measured peak RSS. */
#include <stdio.h>

#include "scaffold/graph.h"
#include "scaffold/memory_plan.h"
#include "scaffold/ops.h"
#include "scaffold/scale_model.h"
#include "scaffold/tensor.h"

#define MIB (1024.0 * 1024.0)

/* The slab count sf_graph_create resolves (slabs 0: automatic, rounded to a multiple of spatial). */
static int plan_slabs(const sf_unet *u, const sf_config *c, const sf_memplan_layout *l)
{
  const int coarse = u->edge[u->levels], cap = coarse < SF_MAX_SLABS ? coarse : SF_MAX_SLABS, T = l->spatial;
  int S = (int)c->slabs;
  if (S > 0) return S;
  if (l->shards_h * l->shards_w > 1 || T > cap) return T; /* H/W blocks, or merging: one slab per shard */
  S = sf_graph_auto_slabs_for(u, c, l->workers);
  if (T > 1) {
    S = (S + T - 1) / T * T;
    if (S > cap) S = cap / T * T;
  }
  return S < 1 ? 1 : S;
}

/* Planes of level `level` held by the rank holding the most (its slabs: owner k*T/S). */
static double owned_planes(const sf_unet *u, int S, int T, int level)
{
  int d0[SF_MAX_SLABS + 1], most = 0;
  sf_slab_bounds(d0, S, u->edge[u->levels], 1 << (u->levels - level));
  for (int q = 0; q < T; q++) {
    int lo = -1, hi = -1;
    for (int k = 0; k < S; k++)
      if ((int)((long)k * T / S) == q) {
        if (lo < 0) lo = k;
        hi = k + 1;
      }
    if (lo >= 0 && d0[hi] - d0[lo] > most) most = d0[hi] - d0[lo];
  }
  return most;
}

typedef struct {
  const sf_unet *u;
  int S, T;
  sf_grid grid;   /* T depth shards (their slabs) x the H and W shards */
  int grid_depth; /* depth blocks by the scale model's rule, not by the slabs */
  double *bytes, *halo;
} tens_acc;

/* One tensor of C channels of es bytes at `level` (graph.c tens()): this rank's block (its planes
 * times the level's H and W block, scaffold/scale_model.h), and with a halo in a spatial run the
 * block's halo shell (depth only: two boundary planes). */
static void tensor(tens_acc *a, double *into, int level, int C, double es, int halo)
{
  int n[3], blk[3];
  sf_grid_level_blocks(a->u, level, &a->grid, n, blk);
  if (!a->grid_depth) blk[0] = (int)owned_planes(a->u, a->S, a->T, level);
  int side[3] = {a->T > 1, n[1] > 1, n[2] > 1};
  *into += (double)blk[0] * blk[1] * blk[2] * C * es;
  if (halo && (side[0] || side[1] || side[2])) *a->halo += sf_halo_shell_voxels(blk, side, side) * C * es;
}

static void plan_tensors(const sf_unet *u, int S, const sf_memplan_layout *l, int ckpt, sf_memplan *m)
{
  const int L = u->levels, K = u->n_classes, *ch = u->channels, T = l->spatial;
  sf_grid grid = {{T, l->shards_h > 1 ? l->shards_h : 1, l->shards_w > 1 ? l->shards_w : 1}};
  tens_acc a = {u, S, T, grid, l->grid_depth, NULL, &m->halo};
  double *act = &m->activations, *grad = &m->act_grads;
  tensor(&a, act, 0, u->in_channels, 4, 1); /* input */
  tensor(&a, act, 0, 1, 2, 0);              /* labels */
  tensor(&a, act, 0, K, 4, 1);              /* logits */
  tensor(&a, grad, 0, K, 4, 1);             /* their gradient */
  for (int i = 0; i <= L; i++) {
    /* encoder block: pre_a, act_a, pre_b, out; activation_checkpointing: the level's A and B buffers,
     * which with the gradients' two hold every block tensor of the level */
    tensor(&a, act, i, (ckpt ? 2 : 4) * ch[i], 4, 1);
    tensor(&a, grad, i, 2 * ch[i], 4, 1); /* the level's two rotating gradient buffers */
    if (i >= 1) {
      tensor(&a, act, i, ch[i - 1], 4, 1);  /* max-pool output */
      tensor(&a, act, i, ch[i - 1], 1, 0);  /* its argmax */
      tensor(&a, grad, i, ch[i - 1], 4, 1); /* its gradient */
    }
    if (i < L) {
      if (!ckpt) tensor(&a, act, i, 4 * ch[i], 4, 1); /* decoder block */
      tensor(&a, act, i, 2 * ch[i], 4, 1); /* concat (its gradient overwrites it) */
      if (!ckpt) tensor(&a, grad, i, ch[i], 4, 1); /* skip gradient (checkpointing: in B) */
    }
  }
}

/* H/W blocks (graph_blocks.c scratch_for): per level and channel count, the column-padded copy, the
 * padded input, the padded output gradient (also its zero-bordered copy) and the padded conv output,
 * of this rank's block. */
static double plan_pad_scratch(const sf_unet *u, const sf_memplan_layout *l, int S)
{
  if (l->shards_h * l->shards_w <= 1) return 0;
  int seen[SF_MAX_LEVELS + 1][18][2], nseen[SF_MAX_LEVELS + 1] = {0}; /* (C, kind) met at a level */
  double bytes = 0;
  sf_grid grid = {{l->spatial, l->shards_h, l->shards_w}};
  tens_acc a = {u, S, l->spatial, grid, l->grid_depth, NULL, NULL};
  for (int b = 0; b < 2 * u->levels + 1; b++) {
    int i = b <= u->levels ? b : b - u->levels - 1, dec = b > u->levels;
    int cin = dec ? u->channels[i + 1] : i ? u->channels[i - 1] : u->in_channels, cout = u->channels[i];
    int n[3], blk[3];
    sf_grid_level_blocks(u, i, &grid, n, blk);
    if (!a.grid_depth) blk[0] = (int)owned_planes(u, S, l->spatial, i);
    const double padw = (double)blk[0] * blk[1] * (blk[2] + 2), pad = (double)blk[0] * (blk[1] + 2) * (blk[2] + 2);
    /* (C, kind) pairs: inputs of cin and cout (PADW, PAD, OUT each: kinds 0, 1, 2), the output
     * gradient of cout padded (kind 3; its column-padded copy shares PADW) */
    const int want[7][2] = {{cin, 0}, {cin, 1}, {cin, 2}, {cout, 0}, {cout, 1}, {cout, 2}, {cout, 3}};
    for (int j = 0; j < 7; j++) {
      int C = want[j][0], kind = want[j][1], dup = 0;
      for (int q = 0; q < nseen[i]; q++) dup |= seen[i][q][0] == C && seen[i][q][1] == kind;
      if (dup) continue;
      seen[i][nseen[i]][0] = C;
      seen[i][nseen[i]++][1] = kind;
      bytes += (kind == 0 ? padw : pad) * C * 4.0;
    }
  }
  return bytes;
}

/* GroupNorm, loss and Dice partial sums (graph.c gn_init, loss_init). */
static double plan_partial_sums(const sf_unet *u, int S, int B)
{
  const int L = u->levels, G = u->groups, K = u->n_classes;
  double d = 0;
  for (int i = 0; i <= L; i++) {
    int blocks = i < L ? 2 : 1;
    double per = (double)(S + 1) * 2 * G + (double)(S + 1) * (2.0 * G + 2.0 * u->channels[i]);
    d += blocks * 2 * per; /* two GroupNorms per block */
  }
  d += (double)(S + B) * SF_LOSS_NACC(K) + (double)(S + 1) * 3 * K + (B > 1 ? S + 1 : 0);
  return d * sizeof(double);
}

/* Gradient arenas beyond the plain one: per-slab partials (graph.c choose_partial_grads) and the
 * per-sample GroupNorm gradients of a batch (gn_sample_init). */
static double plan_extra_grads(const sf_unet *u, const sf_config *c, const sf_memplan_layout *l, int S)
{
  size_t max_floats = l->part_max_floats ? l->part_max_floats : (size_t)1 << 18;
  int small_ok = S > 1 && l->spatial <= 1 && l->workers > 1;
  double part = 0, gn = 0;
  for (int p = 0; p < u->nparams; p++) {
    const sf_param_desc *d = &u->params[p];
    int slab_grad = d->kind != SF_PARAM_GN_GAMMA && d->kind != SF_PARAM_GN_BETA;
    if (!slab_grad) gn += (double)d->numel;
    else if (c->more_determinism || (small_ok && d->numel <= max_floats)) part += (double)((d->numel + 15) & ~(size_t)15);
  }
  double owned = (double)S / l->spatial; /* slabs of this rank */
  double b = c->local_batch_size > 1 ? (double)c->local_batch_size : 0;
  return (owned * part + b * gn) * sizeof(float);
}

/* Each CPU worker's scratch (src/kernels/conv3d/conv3d_im2col.c, upconv3d_blas.c): slot 0 holds an im2col
 * chunk of at most 192 rows of 27*Cin floats (or an up-convolution chunk of 8*Cout), slot 1 the
 * flipped dX weights (27*Cin*Cout, layers with Cout < 256) or a transposed dW. */
static double plan_workspace(const sf_unet *u, int cpu_workers)
{
  double slot0 = 0, slot1 = 0;
  for (int i = 0; i <= u->levels; i++) {
    int cin[2] = {i ? u->channels[i - 1] : u->in_channels, u->channels[i]}; /* encoder convs */
    int cin_dec[2] = {i < u->levels ? u->channels[i + 1] : 0, u->channels[i]};
    for (int j = 0; j < 4; j++) {
      int ci = j < 2 ? cin[j] : cin_dec[j - 2], co = u->channels[i];
      if (ci == 0) continue;
      double col = 192.0 * 27 * ci;
      if (col > slot0) slot0 = col;
      double w = co < 256 ? 27.0 * ci * co : 0;
      if (w > slot1) slot1 = w;
    }
    double up = 192.0 * 8 * u->channels[i];
    if (i < u->levels && up > slot0) slot0 = up;
  }
  return (double)cpu_workers * (slot0 + slot1) * sizeof(float);
}

void sf_memory_plan(const sf_unet *u, const sf_config *c, const sf_memplan_layout *l0, sf_memplan *m)
{
  *m = (sf_memplan){0};
  const int S = plan_slabs(u, c, l0), B = c->local_batch_size > 1 ? (int)c->local_batch_size : 1;
  sf_memplan_layout lay = *l0; /* more slabs than the bottleneck edge: merged there, the model's rule */
  if (S > u->edge[u->levels]) lay.grid_depth = 1;
  const sf_memplan_layout *l = &lay;
  const double N = (double)u->total_params * sizeof(float), e0 = u->edge[0];
  m->slabs = S;
  plan_tensors(u, S, l, c->activation_checkpointing != 0, m);
  m->pad_copies = plan_pad_scratch(u, l, S); /* H/W blocks: the convs' padded copies */
  m->params = N;
  m->grads = N + plan_extra_grads(u, c, l, S) + (l->spatial * l->replicas > 1 ? N : 0);
  m->optimizer = 2 * N + (c->warmup_batches > 0 ? 3 * N : 0) + (c->async_save ? 3 * N : 0);
  m->partial_sums = plan_partial_sums(u, S, B);
  /* the batch's images (NDHWC, in_channels floats) and labels (uint16) of this rank's planes (a
   * spatial shard reads only its block, train_step.c), and the loader's staging buffer: one
   * channel's run of those planes, at most 2^20 floats (src/datagen/dataset_block.c) */
  int n[3], blk[3];
  sf_grid grid = {{l->spatial, l->shards_h > 1 ? l->shards_h : 1, l->shards_w > 1 ? l->shards_w : 1}};
  sf_grid_level_blocks(u, 0, &grid, n, blk);
  const double planes = l->grid_depth ? blk[0] : owned_planes(u, S, l->spatial, 0);
  const double own = planes * (l->shards_h > 1 ? blk[1] : e0) * (l->shards_w > 1 ? blk[2] : e0);
  const double stage = own < 1048576.0 ? own : 1048576.0;
  m->samples = B * own * (u->in_channels * 4.0 + 2.0) + stage * 4.0;
  m->workspace = plan_workspace(u, l->cpu_workers);
  m->base = SF_MEMPLAN_BASE_BYTES;
  m->total = m->activations + m->act_grads + m->halo + m->pad_copies + m->params + m->grads + m->optimizer + m->partial_sums +
             m->samples + m->workspace + m->base;
}

/* "12.3 MiB", "45.6 GiB" or "7.8 TiB" into b (32 bytes). */
static const char *amount(double bytes, char *b)
{
  if (bytes < 10 * MIB * 1024) snprintf(b, 32, "%.1f MiB", bytes / MIB);
  else if (bytes < 10 * MIB * MIB) snprintf(b, 32, "%.1f GiB", bytes / (MIB * 1024));
  else snprintf(b, 32, "%.1f TiB", bytes / (MIB * MIB));
  return b;
}

void sf_memory_plan_format(const sf_memplan *m, const char *prefix, char *buf, size_t len)
{
  char a[11][32], pads[64] = "";
  if (m->pad_copies > 0) snprintf(pads, sizeof pads, ", padded conv copies %s", amount(m->pad_copies, a[10]));
  snprintf(buf, len,
           "%sactivations %s, activation gradients %s, halo planes %s%s\n"
           "%sparameters %s, gradients %s, optimizer state and snapshots %s, partial sums %s\n"
           "%ssample buffers %s, worker scratch %s, process base %s\n"
           "%stotal %.1f MiB (%.2f GiB) per rank, %d depth slabs",
           prefix, amount(m->activations, a[0]), amount(m->act_grads, a[1]), amount(m->halo, a[2]), pads, prefix,
           amount(m->params, a[3]), amount(m->grads, a[4]), amount(m->optimizer, a[5]), amount(m->partial_sums, a[6]),
           prefix, amount(m->samples, a[7]), amount(m->workspace, a[8]), amount(m->base, a[9]), prefix,
           m->total / MIB, m->total / (MIB * 1024), m->slabs);
}
