/* The scale model (docs/scaling.md "Scale 11"): what one rank holds and sends per training
 * step when every sample is split into a grid of D x H x W blocks (DistConv's dc_num_shards) and R
 * ranks in all train (replicas x D*H*W), computed from the U-Net's topology alone. The memory plan
 * (scaffold/memory_plan.h) sizes each tensor with the same block and halo formulas, so the figures
 * `benchmark` prints before a run and the scale-11 tables come from one place.
 *
 * Blocks of a level (the merge rule): a level of edge e is split into n = min(g, e) blocks along a
 * dimension of g grid shards, each of edge e / n (powers of two: exact). A level smaller than the
 * grid merges its blocks onto fewer owners (n < g): one voxel per block at the least. A block reads
 * a one-voxel halo shell from its neighbours for each 3x3x3 conv: the faces, edges and corners
 * that exist (sf_halo_shell_voxels).
 *
 * The task graph builds the same grids (dc_num_shards, src/train/graph_blocks.c), merging included
 * (sf_graph_regrid); tests/sim checks a simulated run's bytes per rank against this model. */
#ifndef SF_SCALE_MODEL_H
#define SF_SCALE_MODEL_H

#include "scaffold/model.h"

typedef struct {
  int n[3]; /* grid shards along D, H, W (each >= 1) */
} sf_grid;

/* Blocks per dimension n[] and block edge blk[] at `level` of u under grid g (the merge rule). */
void sf_grid_level_blocks(const sf_unet *u, int level, const sf_grid *g, int n[3], int blk[3]);

/* Voxels of the halo shell around a block of edges blk[] with lo[i] / hi[i] (0 or 1) halo layers
 * below / above it along dimension i: prod(blk + lo + hi) - prod(blk). An interior block of a grid
 * split along every dimension reads 6 faces, 12 edges and 8 corners. */
double sf_halo_shell_voxels(const int blk[3], const int lo[3], const int hi[3]);

/* Per rank and training step (fp32, bytes), for an interior block of the grid. */
typedef struct {
  double halo_fwd;       /* halo shells of every conv3 input, forward */
  double halo_bwd;       /* halo shells of the output gradients of the convs that need dX */
  double halo_bwd_repad; /* as built with rows or columns split: the backward pads every conv's input
                          * again, so the row/column part of its forward shell crosses a second time
                          * (src/train/graph_blocks.c); 0 for depth-only grids, and for conv kernels
                          * that would read H/W halos directly (the scale-11 tables leave it out) */
  double small_sums;     /* GroupNorm statistics, loss and Dice partial sums: to the sample's root and back;
                          * the root sends one message per other owner of a level's blocks, and a level
                          * of one block (merged) sends none */
  double regrid_sent;    /* the box copies around merged levels (sf_graph_regrid), sent and received: a fine */
  double regrid_recv;    /* block's owner sends 3 of its blocks and gets 2 merged views; the merged owner
                          * the reverse, per other fine block of its group; 0 without merged levels */
  double allreduce_ours; /* the gradient all-reduce as built: recursive doubling, N log2 R */
  double allreduce_ring; /* a ring / reduce-scatter + all-gather: 2 N (R-1) / R */
  double state;          /* parameters, gradients, the all-reduce buffer, Adam m and v: 20 N */
} sf_scale_step;

/* What the rank at grid position pos[] (0..n-1 per dimension of the grid: its block at level 0)
 * sends per step, with what it owns at every level (a merged block is its first fine block's
 * owner's; shard 0 is the sample's root); for an interior block when pos is NULL (no merged levels
 * counted as such: one block of every level, not the root); ranks = R for the all-reduce. */
void sf_scale_step_model(const sf_unet *u, const sf_grid *g, const int *pos, int ranks, sf_scale_step *s);

/* The all-reduce volumes alone (floats per rank): ours (non-powers of two fold into a partner
 * first, one extra round) and the ring. */
double sf_allreduce_floats_ours(double n, int ranks);
double sf_allreduce_floats_ring(double n, int ranks);

#endif
