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

/* Whether the rank at grid position pos (NULL: an interior block, which owns one at every level) owns a
 * block of `level`: a merged block belongs to the owner of its first fine block. */
static int owns_level(const sf_unet *u, int level, const sf_grid *g, const int *pos)
{
  int n[3], blk[3];
  if (!pos) return 1;
  sf_grid_level_blocks(u, level, g, n, blk);
  for (int i = 0; i < 3; i++)
    if ((long)pos[i] * n[i] % g->n[i] != 0) return 0; /* not the first fine block of its merged group */
  return 1;
}

static int level_block_count(const sf_unet *u, int level, const sf_grid *g)
{
  int n[3], blk[3];
  sf_grid_level_blocks(u, level, g, n, blk);
  return n[0] * n[1] * n[2];
}

/* The halo shell of a level's block at pos (NULL: interior): a layer on each side that has a
 * neighbour block at that level; hw_only: the row and column layers only (no depth neighbours). 0 where
 * the rank owns no block of the level (merged onto another owner). */
static double level_shell_axes(const sf_unet *u, int level, const sf_grid *g, const int *pos, int hw_only)
{
  int n[3], blk[3], lo[3], hi[3];
  if (!owns_level(u, level, g, pos)) return 0;
  sf_grid_level_blocks(u, level, g, n, blk);
  for (int i = 0; i < 3; i++) {
    /* a merged level: the block of this position's owner (pos scaled down to the level's blocks) */
    int p = pos ? (int)((long)pos[i] * n[i] / g->n[i]) : 1;
    lo[i] = n[i] > 1 && (pos ? p > 0 : 1) && !(hw_only && i == 0);
    hi[i] = n[i] > 1 && (pos ? p < n[i] - 1 : 1) && !(hw_only && i == 0);
  }
  return sf_halo_shell_voxels(blk, lo, hi);
}

/* Messages of a sample's partial sums at `level` that the rank at pos sends (= receives): none where
 * the level is one block (it is the root's) or the rank owns no block of it; the root sends the reduced
 * sums to every other owner, any other owner its partial sums to the root (NULL: such an owner). */
static double small_sum_messages(const sf_unet *u, int level, const sf_grid *g, const int *pos)
{
  int blocks = level_block_count(u, level, g);
  if (blocks == 1 || !owns_level(u, level, g, pos)) return 0;
  int root = pos && pos[0] == 0 && pos[1] == 0 && pos[2] == 0;
  return root ? blocks - 1 : 1;
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
  s->small_sums += small_sum_messages(u, l, g, pos) * 8.0 * 2 * (2.0 * u->groups + 2.0 * u->groups + 2.0 * cout);
}

/* The box copies around a level m with fewer blocks than level m-1 (sf_graph_regrid, as built): the max-pool's
 * input and the skip gradient and the up-conv's output gradient go from each fine block (ch[m-1] channels at
 * level m-1) to the merged block's owner, and the up-conv's output and the pool's input gradient come back.
 * A copy moves its whole source block: a fine block one way, the merged view (the level-m block at level
 * m-1's resolution) the other. */
static void regrid(const sf_unet *u, const sf_grid *g, const int *pos, int m, sf_scale_step *s)
{
  int nf[3], bf[3], nm[3], bm[3];
  sf_grid_level_blocks(u, m - 1, g, nf, bf);
  sf_grid_level_blocks(u, m, g, nm, bm);
  int group = (nf[0] / nm[0]) * (nf[1] / nm[1]) * (nf[2] / nm[2]);
  if (group == 1 || !owns_level(u, m - 1, g, pos)) return;
  double C = u->channels[m - 1], fine = 4.0 * C * bf[0] * bf[1] * bf[2];
  double merged = 4.0 * C * ((double)u->edge[m - 1] / nm[0]) * ((double)u->edge[m - 1] / nm[1]) *
                  ((double)u->edge[m - 1] / nm[2]);
  if (pos && owns_level(u, m, g, pos)) { /* the merged block's owner */
    s->regrid_sent += 2 * (group - 1) * merged;
    s->regrid_recv += 3 * (group - 1) * fine;
  } else {
    s->regrid_sent += 3 * fine;
    s->regrid_recv += 2 * merged;
  }
}

void sf_scale_step_model(const sf_unet *u, const sf_grid *g, const int *pos, int ranks, sf_scale_step *s)
{
  *s = (sf_scale_step){0};
  const int L = u->levels, *ch = u->channels;
  double_conv(u, g, pos, 0, u->in_channels, ch[0], 0, s); /* inc: its input needs no gradient */
  for (int i = 1; i <= L; i++) double_conv(u, g, pos, i, ch[i - 1], ch[i], 1, s);
  for (int i = 0; i < L; i++) double_conv(u, g, pos, i, 2 * ch[i], ch[i], 1, s); /* Up: [skip, up] */
  for (int m = 1; m <= L; m++) regrid(u, g, pos, m, s);
  s->small_sums += small_sum_messages(u, 0, g, pos) * 8.0 * SF_LOSS_NACC(u->n_classes); /* loss and Dice */
  double N = (double)u->total_params;
  s->allreduce_ours = 4.0 * sf_allreduce_floats_ours(N, ranks);
  s->allreduce_ring = 4.0 * sf_allreduce_floats_ring(N, ranks);
  s->state = 20.0 * N;
}
