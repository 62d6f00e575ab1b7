/* The scale model (scaffold/scale_model.h): block sizes, halo shells and the communication of one
 * training step per rank for a D x H x W grid of blocks per sample, from the U-Net's topology.
 * Pure arithmetic; the memory plan (memory_plan.c) sizes tensors with the same block and shell
 * formulas, and tests/mpi/comm_volume checks them against a 2-rank run's StarPU-MPI byte count. */
#include "scaffold/scale_model.h"

#include "scaffold/ops.h"

void sf_grid_level_blocks(const sf_unet *u, int level, const sf_grid *g, int n[3], int blk[3])
{
  int e = u->edge[level];
  for (int i = 0; i < 3; i++) {
    n[i] = g->n[i] < e ? g->n[i] : e;
    if (n[i] < 1) n[i] = 1;
    blk[i] = (e + n[i] - 1) / n[i];
  }
}

double sf_halo_shell_voxels(const int blk[3], const int lo[3], const int hi[3])
{
  double with = 1, without = 1;
  for (int i = 0; i < 3; i++) {
    with *= (double)blk[i] + lo[i] + hi[i];
    without *= blk[i];
  }
  return with - without;
}

/* The halo shell of a level's block at pos (NULL: interior): a layer on each side that has a
 * neighbour block at that level; hw_only: the row and column layers only (no depth neighbours). */
static double level_shell_axes(const sf_unet *u, int level, const sf_grid *g, const int *pos, int hw_only)
{
  int n[3], blk[3], lo[3], hi[3];
  sf_grid_level_blocks(u, level, g, n, blk);
  for (int i = 0; i < 3; i++) {
    /* a merged level: the block of this position's owner (pos scaled down to the level's blocks) */
    int p = pos ? (int)((long)pos[i] * n[i] / g->n[i]) : 1;
    lo[i] = n[i] > 1 && (pos ? p > 0 : 1) && !(hw_only && i == 0);
    hi[i] = n[i] > 1 && (pos ? p < n[i] - 1 : 1) && !(hw_only && i == 0);
  }
  return sf_halo_shell_voxels(blk, lo, hi);
}

static double level_shell(const sf_unet *u, int level, const sf_grid *g, const int *pos)
{
  return level_shell_axes(u, level, g, pos, 0);
}

double sf_allreduce_floats_ours(double n, int ranks)
{
  int p2 = 1, rounds = 0;
  while (p2 * 2 <= ranks) p2 *= 2, rounds++;
  return n * (rounds + (ranks > p2 ? 1 : 0));
}

double sf_allreduce_floats_ring(double n, int ranks) { return ranks > 1 ? 2.0 * n * (ranks - 1) / ranks : 0; }

/* One DoubleConv at level l (conv a cin -> cout, conv b cout -> cout; dx_a: conv a needs dX) */
static void double_conv(const sf_unet *u, const sf_grid *g, const int *pos, int l, int cin, int cout, int dx_a,
                        sf_scale_step *s)
{
  double shell = 4.0 * level_shell(u, l, g, pos);
  s->halo_fwd += shell * (cin + cout);
  s->halo_bwd += shell * ((dx_a ? cout : 0) + cout);
  if (g->n[1] > 1 || g->n[2] > 1) s->halo_bwd_repad += 4.0 * level_shell_axes(u, l, g, pos, 1) * (cin + cout);
  /* 2 GroupNorms, each: statistics (2G doubles) forward, sums (2G + 2C) backward */
  s->small_sums += 8.0 * 2 * (2.0 * u->groups + 2.0 * u->groups + 2.0 * cout);
}

void sf_scale_step_model(const sf_unet *u, const sf_grid *g, const int *pos, int ranks, sf_scale_step *s)
{
  *s = (sf_scale_step){0};
  const int L = u->levels, *ch = u->channels;
  double_conv(u, g, pos, 0, u->in_channels, ch[0], 0, s); /* inc: its input needs no gradient */
  for (int i = 1; i <= L; i++) double_conv(u, g, pos, i, ch[i - 1], ch[i], 1, s);
  for (int i = 0; i < L; i++) double_conv(u, g, pos, i, 2 * ch[i], ch[i], 1, s); /* Up: [skip, up] */
  if (g->n[0] * g->n[1] * g->n[2] == 1) s->small_sums = 0;
  else s->small_sums += 8.0 * SF_LOSS_NACC(u->n_classes);
  double N = (double)u->total_params;
  s->allreduce_ours = 4.0 * sf_allreduce_floats_ours(N, ranks);
  s->allreduce_ring = 4.0 * sf_allreduce_floats_ring(N, ranks);
  s->state = 20.0 * N;
}
