/* The training graph's block plan (scaffold/graph.h): the config check of its grid keys, the depth
 * slab count (the `slabs` key or automatic), the test hook SF_HW_BLOCKS, and every level's block
 * grid with boundaries fixed at the bottleneck and scaled per level, and the blocks' owners. */
#include <stdio.h>
#include <string.h>

#include "graph_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/runtime.h"
#include "scaffold/switches.h"

int sf_graph_auto_slabs(int coarse_edge, int nworkers, int deterministic, long top_floats)
{
  int cap = coarse_edge < SF_MAX_SLABS ? coarse_edge : SF_MAX_SLABS;
  int s = 1;
  if (deterministic)
    s = 4; /* independent of the worker count, so the results are too */
  else {
    while (s < nworkers) s *= 2; /* a power of two divides the 2^b edge evenly */
    if (nworkers > 1 && top_floats / (2L * s) >= SF_OVERDECOMPOSE_MIN_FLOATS)
      s *= 2; /* two tasks per worker and op, so a faster worker can take over a slower one's share */
  }
  if (s > cap) s = cap;
  return s < 1 ? 1 : s;
}

int sf_graph_auto_slabs_for(const sf_unet *u, const sf_config *c, int nworkers)
{
  const long e = u->edge[0];
  return sf_graph_auto_slabs(u->edge[u->levels], nworkers, c->more_determinism != 0, e * e * e * u->base_channels);
}

/* Blocks of one axis at level l, for `fine` blocks at level 0: up to the bottleneck edge the
 * boundaries are fixed there and scaled by 2 per level (sf_slab_bounds); a finer count (a power of
 * two) gives min(fine, edge) equal blocks, so a level smaller than the grid has fewer, merged blocks:
 * merged block j starts at fine block first[j]. Returns the count. */
static int axis_blocks(const sf_unet *u, int l, int fine, int *b, int *first)
{
  const int coarse = u->edge[u->levels], e = u->edge[l];
  if (fine <= coarse) {
    sf_slab_bounds(b, fine, coarse, 1 << (u->levels - l));
    for (int j = 0; j < fine; j++) first[j] = j;
    return fine;
  }
  int n = fine < e ? fine : e;
  for (int j = 0; j <= n; j++) b[j] = j * (e / n);
  for (int j = 0; j < n; j++) first[j] = j * (fine / n);
  return n;
}

/* Every level's block grid (graph_internal.h lvl_grid): counts, boundaries, and owners. Fine block
 * (fd, fh, fw) of level 0 belongs to shard (fd * TD / fine[0], fh, fw); a merged block to the owner of
 * its first fine block (gathered to fewer owners). mv[l]: level l's grid on level l-1's volume. */
void sf_graph_level_grids(sf_graph *g, const sf_unet *u, const int fine[3], int TD)
{
  for (int l = 0; l <= u->levels; l++) {
    lvl_grid *lv = &g->lg[l];
    int fd[SF_MAX_SLABS], fh[SF_MAX_HW], fw[SF_MAX_HW];
    lv->nd = axis_blocks(u, l, fine[0], lv->d0, fd);
    lv->nh = axis_blocks(u, l, fine[1], lv->h0, fh);
    lv->nw = axis_blocks(u, l, fine[2], lv->w0, fw);
    lv->S = lv->nd * lv->nh * lv->nw;
    for (int k = 0; k < lv->S; k++) {
      int kw = k % lv->nw, kh = (k / lv->nw) % lv->nh, kd = k / (lv->nw * lv->nh);
      int q = ((int)((long)fd[kd] * TD / fine[0]) * fine[1] + fh[kh]) * fine[2] + fw[kw];
      lv->owner[k] = g->spatial > 1 ? sf_dist_group_rank(q) : g->me;
    }
    if (l == 0) continue;
    g->merges[l] = lv->S != g->lg[l - 1].S;
    g->mv[l] = *lv;
    for (int j = 0; j <= lv->nd; j++) g->mv[l].d0[j] = 2 * lv->d0[j];
    for (int j = 0; j <= lv->nh; j++) g->mv[l].h0[j] = 2 * lv->h0[j];
    for (int j = 0; j <= lv->nw; j++) g->mv[l].w0[j] = 2 * lv->w0[j];
  }
  g->S = g->lg[0].S;
  memcpy(g->owner, g->lg[0].owner, sizeof g->owner);
}

/* The keys checked on their own: optimizer, local_batch_size, the range of slabs. */
static int check_plain_keys(const sf_unet *u, const sf_config *c, const char **key, char *err, size_t errlen)
{
  const int coarse = u->edge[u->levels];
  const int cap = coarse < SF_MAX_SLABS ? coarse : SF_MAX_SLABS;
  char names[256];
  if (!sf_optimizer_find(c->optimizer)) {
    sf_optimizer_names(names, sizeof names);
    *key = "optimizer";
    snprintf(err, errlen, "not an optimizer the StarPU training graph implements (upstream takes any other name as "
             "RMSprop; here RMSprop goes by its own names, so a typo cannot switch optimizers); expected one of: %s",
             names);
    return -1;
  }
  if (c->local_batch_size > SF_GRAPH_MAX_BATCH) {
    *key = "local_batch_size";
    snprintf(err, errlen, "%ld samples per step, the task graph takes 1..%d", c->local_batch_size,
             SF_GRAPH_MAX_BATCH);
    return -1;
  }
  if (c->slabs < 0 || c->slabs > cap) {
    *key = "slabs";
    snprintf(err, errlen, "%ld depth slabs requested, expected 0 (automatic) or 1..%d (the bottleneck edge is %d "
             "planes; at most %d slabs)", c->slabs, cap, coarse, SF_MAX_SLABS);
    return -1;
  }
  return 0;
}

/* The shard grid (dc_num_shards or spatial_ranks) against the U-Net's edges, the distribution
 * layout, the graph's block limits and the slabs key. */
static int check_shard_grid(const sf_unet *u, const sf_config *c, int spatial, const char **key, char *err,
                            size_t errlen)
{
  const int coarse = u->edge[u->levels];
  const int cap = coarse < SF_MAX_SLABS ? coarse : SF_MAX_SLABS;
  int grid[3];
  sf_config_shard_grid(c, grid);
  const int from_dc = c->dc_num_shards[0] * c->dc_num_shards[1] * c->dc_num_shards[2] > 1;
  if (from_dc && c->spatial_ranks > 1) {
    *key = "dc_num_shards";
    snprintf(err, errlen, "[%ld, %ld, %ld] together with spatial_ranks %ld; spatial_ranks is the depth-only shorthand "
             "of dc_num_shards: expected one of them (spatial_ranks 1, or dc_num_shards [1, 1, 1])",
             c->dc_num_shards[0], c->dc_num_shards[1], c->dc_num_shards[2], c->spatial_ranks);
    return -1;
  }
  const char *gkey = from_dc ? "dc_num_shards" : "spatial_ranks";
  static const char *const axis_name[3] = {"depth", "rows", "columns"};
  const int edge0 = u->edge[0];
  for (int a = 0; a < 3; a++) {
    /* up to the bottleneck edge any count; beyond it the deep levels merge blocks, which needs a
     * power of two (halving levels nest), at most the input edge and the graph's block limits */
    int most = a == 0 ? SF_MAX_SLABS : SF_MAX_HW;
    if (most > edge0) most = edge0;
    int pow2 = (grid[a] & (grid[a] - 1)) == 0;
    if (grid[a] > most || (grid[a] > coarse && !pow2)) {
      *key = gkey;
      snprintf(err, errlen, "%d shards along the %s; expected 1..%d, or a power of two up to %d (the bottleneck edge is %d "
               "voxels: a finer grid merges blocks at the deeper levels, which needs halving counts; a block needs at "
               "least one voxel)", grid[a], axis_name[a], coarse < most ? coarse : most, most, coarse);
      return -1;
    }
  }
  if (grid[0] > cap && c->slabs != 0) {
    *key = "slabs";
    snprintf(err, errlen, "%ld depth slabs with %d shards along the depth (more than the bottleneck edge %d): expected 0 "
             "(automatic: one slab per shard)", c->slabs, grid[0], coarse);
    return -1;
  }
  if ((long)grid[0] * grid[1] * grid[2] != spatial) {
    *key = gkey;
    snprintf(err, errlen, "a grid of %d x %d x %d shards, but the distribution layout has %d ranks per volume", grid[0],
             grid[1], grid[2], spatial);
    return -1;
  }
  if (grid[0] * grid[1] * grid[2] > SF_MAX_SLABS) {
    *key = gkey;
    snprintf(err, errlen, "%d x %d x %d = %d blocks; the task graph takes at most %d", grid[0], grid[1], grid[2],
             grid[0] * grid[1] * grid[2], SF_MAX_SLABS);
    return -1;
  }
  if (c->slabs != 0 && c->slabs < grid[0]) {
    *key = "slabs";
    snprintf(err, errlen, "%ld depth slabs for %d shards along the depth; expected at least one slab per shard (>= %d) or 0 "
             "(automatic)", c->slabs, grid[0], grid[0]);
    return -1;
  }
  if (c->slabs * grid[1] * grid[2] > SF_MAX_SLABS) {
    *key = "slabs";
    snprintf(err, errlen, "%ld depth slabs x %d x %d H/W blocks exceed the task graph's %d blocks; expected at most %d",
             c->slabs, grid[1], grid[2], SF_MAX_SLABS, SF_MAX_SLABS / (grid[1] * grid[2]));
    return -1;
  }
  return 0;
}

int sf_graph_check_config(const sf_unet *u, const sf_config *c, int spatial, const char **key, char *err,
                          size_t errlen)
{
  *key = NULL;
  if (check_plain_keys(u, c, key, err, errlen) != 0) return -1;
  return check_shard_grid(u, c, spatial, key, err, errlen);
}

/* The test hook SF_HW_BLOCKS=RxC (declared in the switch table, src/util/switches.c): H/W blocks in
 * one process, as a shard grid would give: each count up to the bottleneck edge, or a power of two
 * beyond. Overrides grid[1] and grid[2]. */
static void hw_blocks_switch(const sf_unet *u, int spatial, int grid[3])
{
  const int coarse = u->edge[u->levels];
  const char *hw = sf_switch("SF_HW_BLOCKS");
  if (!hw || !*hw || spatial != 1) return;
  int ok = sscanf(hw, "%dx%d", &grid[1], &grid[2]) == 2;
  for (int a = 1; a <= 2 && ok; a++)
    ok = grid[a] >= 1 && grid[a] <= SF_MAX_HW && grid[a] <= u->edge[0] &&
         (grid[a] <= coarse || (grid[a] & (grid[a] - 1)) == 0);
  if (!ok)
    sf_die(SF_EXIT_USAGE, "SF_HW_BLOCKS='%s': expected ROWSxCOLUMNS, each 1..%d or a power of two up to %d", hw,
           coarse, u->edge[0] < SF_MAX_HW ? u->edge[0] : SF_MAX_HW);
}

/* Depth slabs: the `slabs` key; 0 (automatic) gives one slab per depth shard where H/W blocks
 * already give the workers several tasks per op or the grid is finer than the bottleneck, else
 * sf_graph_auto_slabs_for agreed over the ranks (their worker counts may differ; the plan must be
 * one), rounded to a multiple of the depth shards so that shards own equal slab counts. */
static int depth_slabs(const sf_unet *u, const sf_config *c, int depth_shards, int blocked)
{
  const int coarse = u->edge[u->levels];
  const int cap = coarse < SF_MAX_SLABS ? coarse : SF_MAX_SLABS;
  const int TD = depth_shards;
  int S = (int)c->slabs;
  if (S == 0 && (blocked || TD > cap)) {
    S = TD;
  } else if (S == 0) {
    S = sf_graph_auto_slabs_for(u, c, sf_runtime_nworkers());
    int agreed[1] = {S};
    sf_dist_allreduce_max(agreed, 1);
    S = agreed[0];
    if (TD > 1) {
      S = (S + TD - 1) / TD * TD;
      if (S > cap) S = cap / TD * TD;
    }
  }
  return S;
}

int sf_graph_plan_blocks(const sf_unet *u, const sf_config *c, int spatial, int fine[3], int *depth_shards, char *err,
                         size_t errlen)
{
  char what[400];
  const char *bad_key;
  if (sf_graph_check_config(u, c, spatial, &bad_key, what, sizeof what) != 0) {
    if (err && errlen) snprintf(err, errlen, "config key '%s': %s", bad_key, what);
    return -1;
  }
  int grid[3]; /* shards along depth, rows, columns; one H/W block per shard along rows and columns */
  sf_config_shard_grid(c, grid);
  hw_blocks_switch(u, spatial, grid);
  const int NH = grid[1], NW = grid[2];
  const int S = depth_slabs(u, c, grid[0], NH * NW > 1);
  if (S * NH * NW > SF_MAX_SLABS) {
    if (err && errlen)
      snprintf(err, errlen, "%d depth slabs x %d x %d H/W blocks exceed the task graph's %d blocks", S, NH, NW,
               SF_MAX_SLABS);
    return -1;
  }
  fine[0] = S, fine[1] = NH, fine[2] = NW;
  *depth_shards = grid[0];
  return 0;
}
