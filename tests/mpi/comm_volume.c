/* Communication volume and memory per rank of one training step of the distributed design
 * (docs/scaling.md), computed from the U-Net that sf_unet_build makes with the product's formulas -
 * the scale model (scaffold/scale_model.h) and the memory plan (scaffold/memory_plan.h) - not
 * estimated here:
 *   - gradient all-reduce: N = total parameters (fp32) per rank and step, for our recursive doubling
 *     (N log2 R sent per rank), a bandwidth-optimal ring / reduce-scatter+all-gather
 *     (2 N (R-1)/R), and starpu_mpi_redux_data on one flat buffer (the owner receives N and
 *     sends the result back to R-1 ranks);
 *   - halos of a block: per conv3 layer, the block's one-voxel halo shell (depth slabs: one plane per
 *     boundary) in the forward pass (the conv input) and in the backward pass (the output gradient,
 *     for dX; dW reuses the forward shells);
 *   - the small partial sums (GroupNorm statistics, loss and Dice) that blocks send their sample's
 *     root and get back;
 *   - activations per rank: the memory plan's activations, their gradients and halo buffers.
 *
 *   comm_volume [--base C] [--bottleneck B] [--classes K] [--groups G]   Markdown tables, ps 6..11
 *   comm_volume --scale11                   the scale-11 grid and GPU tables of docs/scaling.md
 *   comm_volume --step-bytes PS B C K G S   bytes one step sends from shard 0 to shard 1 in a
 *                                           2-rank spatial run (spatial_ranks 2, S slabs, classes
 *                                           K incl. background): halos + all-reduce + small sums
 *   comm_volume --rank-bytes PS B C K G D H W R RANK   bytes rank RANK sends and receives per step
 *                                           ("SENT RECEIVED") with a D x H x W grid per sample and R
 *                                           ranks (replicas = R / (D H W)), merged levels as built
 *   comm_volume --check                     checks of the formulas against a brute-force halo count,
 *                                           the depth-only plan and a measured 2-rank run (CTest) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/config.h"
#include "scaffold/memory_plan.h"
#include "scaffold/model.h"
#include "scaffold/ops.h"
#include "scaffold/scale_model.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static int build(sf_unet *u, int ps, int b, int base, int K, int G)
{
  char err[512];
  if (sf_unet_build(u, ps, b, base, K, G, err, sizeof err) != 0) {
    fprintf(stderr, "comm_volume: ps %d: %s\n", ps, err);
    return -1;
  }
  return 0;
}

static const char *human(double bytes, char *buf, size_t len)
{
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int k = 0;
  while (bytes >= 1024 && k < 5) bytes /= 1024, k++;
  snprintf(buf, len, k ? "%.3g %s" : "%.0f %s", bytes, u[k]);
  return buf;
}

/* The memory plan's per-sample tensors of one rank (activations, their gradients, halo buffers)
 * under grid g, batch 1, one slab per depth shard; by the scale model's depth rule when
 * grid_depth, else by the slabs (what benchmark plans) */
static double rank_activations_ckpt(const sf_unet *u, const sf_grid *g, int grid_depth, int ckpt)
{
  sf_config c;
  sf_config_init(&c);
  c.activation_checkpointing = ckpt;
  c.slabs = g->n[0];
  c.local_batch_size = 1;
  sf_memplan_layout l = {.spatial = g->n[0], .shards_h = g->n[1], .shards_w = g->n[2], .grid_depth = grid_depth,
                         .replicas = 1, .cpu_workers = 1, .workers = 1};
  sf_memplan m;
  sf_memory_plan(u, &c, &l, &m);
  sf_config_free(&c);
  return m.activations + m.act_grads + m.halo;
}

static double rank_activations(const sf_unet *u, const sf_grid *g, int grid_depth)
{
  return rank_activations_ckpt(u, g, grid_depth, 0);
}

/* bytes sent from shard 0 to shard 1 in one step of a 2-rank spatial run (depth halves) */
static double step_bytes_t2(const sf_unet *u)
{
  sf_grid g = {{2, 1, 1}};
  int pos[3] = {0, 0, 0};
  sf_scale_step s;
  sf_scale_step_model(u, &g, pos, 2, &s);
  return s.halo_fwd + s.halo_bwd + s.allreduce_ours + s.small_sums;
}

/* bytes rank `rank` sends and receives per step as built, with a D x H x W grid per sample and R ranks in
 * all (R / (D H W) replicas; shard (d, h, w) = (d H + h) W + w of its replica, shard 0 the sample's root):
 * halos (with the backward's second row/column shells) + small sums + the box copies around merged levels
 * + all-reduce */
static void rank_bytes(const sf_unet *u, int d, int h, int w, int ranks, int rank, double *sent, double *recv)
{
  sf_grid g = {{d, h, w}};
  int shard = rank % (d * h * w), pos[3] = {shard / (h * w), shard / w % h, shard % w};
  sf_scale_step s;
  sf_scale_step_model(u, &g, pos, ranks, &s);
  double common = s.halo_fwd + s.halo_bwd + s.halo_bwd_repad + s.small_sums + s.allreduce_ours;
  *sent = common + s.regrid_sent;
  *recv = common + s.regrid_recv;
}

/* The halo shell by enumeration: voxels outside the block, inside the volume, within one step
 * (Chebyshev distance 1) of it, for a block at offset o of edges b in a volume of edges e */
static double shell_brute(const int e[3], const int o[3], const int b[3])
{
  double n = 0;
  for (int z = o[0] - 1; z <= o[0] + b[0]; z++)
    for (int y = o[1] - 1; y <= o[1] + b[1]; y++)
      for (int x = o[2] - 1; x <= o[2] + b[2]; x++) {
        int in_vol = z >= 0 && z < e[0] && y >= 0 && y < e[1] && x >= 0 && x < e[2];
        int in_blk = z >= o[0] && z < o[0] + b[0] && y >= o[1] && y < o[1] + b[1] && x >= o[2] && x < o[2] + b[2];
        n += in_vol && !in_blk;
      }
  return n;
}

static int check_shells(void)
{
  int bad = 0;
  /* every block of a 12 x 8 x 6 volume split 3 x 2 x 3 (and 1 x 4 x 1): formula = enumeration */
  const int grids[2][3] = {{3, 2, 3}, {1, 4, 1}}, e[3] = {12, 8, 6};
  for (int gi = 0; gi < 2; gi++) {
    const int *g = grids[gi];
    int b[3] = {e[0] / g[0], e[1] / g[1], e[2] / g[2]};
    for (int i = 0; i < g[0]; i++)
      for (int j = 0; j < g[1]; j++)
        for (int k = 0; k < g[2]; k++) {
          int p[3] = {i, j, k}, o[3], lo[3], hi[3];
          for (int d = 0; d < 3; d++) o[d] = p[d] * b[d], lo[d] = p[d] > 0, hi[d] = p[d] < g[d] - 1;
          double f = sf_halo_shell_voxels(b, lo, hi), want = shell_brute(e, o, b);
          if (f != want) {
            fprintf(stderr, "FAIL: halo shell of block (%d,%d,%d) of grid %dx%dx%d: formula %g, enumeration %g\n",
                    i, j, k, g[0], g[1], g[2], f, want);
            bad++;
          }
        }
  }
  return bad;
}

static int check(void)
{
  int bad = check_shells();
  sf_unet u;
  /* configs/tiny.yml: ps 4, b 3, base 8, 3 classes + background, 8 groups, 3 input channels */
  if (build(&u, 4, 3, 8, 4, 8)) return 1;
  if (u.total_params != 19124) {
    fprintf(stderr, "FAIL: tiny model: %zu params (19124)\n", u.total_params);
    bad++;
  }
  /* by hand: the forward planes of a 2-shard boundary 16^2*3 + 16^2*8 + 8^2*8 + 8^2*16 + 16^2*16 + 16^2*8,
   * backward 16^2*8 + 8^2*16 + 8^2*16 + 16^2*8 + 16^2*8 */
  sf_grid g2 = {{2, 1, 1}};
  int pos0[3] = {0, 0, 0};
  sf_scale_step s;
  sf_scale_step_model(&u, &g2, pos0, 2, &s);
  double fwd = 256.0 * 3 + 256 * 8 + 64 * 8 + 64 * 16 + 256 * 16 + 256 * 8, bwd = 256.0 * 8 + 64 * 16 * 2 + 256 * 8 * 2;
  if (s.halo_fwd != 4 * fwd || s.halo_bwd != 4 * bwd) {
    fprintf(stderr, "FAIL: tiny halos %g/%g bytes, expected %g/%g\n", s.halo_fwd, s.halo_bwd, 4 * fwd, 4 * bwd);
    bad++;
  }
  /* the all-reduce formulas agree where they must */
  for (int R = 1; R <= 1024; R *= 2)
    if (sf_allreduce_floats_ours(1000, R) != 1000 * log2(R) || (R == 2 && sf_allreduce_floats_ring(1000, 2) != 1000)) {
      fprintf(stderr, "FAIL: all-reduce volume at R=%d\n", R);
      bad++;
    }
  if (sf_allreduce_floats_ours(1000, 3) != 2000 || sf_allreduce_floats_ours(1000, 6) != 3000) {
    fprintf(stderr, "FAIL: non-power-of-two fold: %g, %g\n", sf_allreduce_floats_ours(1000, 3),
            sf_allreduce_floats_ours(1000, 6));
    bad++;
  }
  double sb = step_bytes_t2(&u);
  if (sb != 153920) { /* measured with STARPU_COMM_STATS=1 on 2 ranks (tests/mpi/test_spatial_equiv.sh) */
    fprintf(stderr, "FAIL: tiny 2-shard step: %g bytes predicted, 153920 measured\n", sb);
    bad++;
  }
  /* the scale model's depth rule equals the slab plan when slabs = shards; an H or a W split of the
   * same count holds the same activations (cubic levels) with the same halo shells */
  for (int T = 1; T <= 8; T *= 2) {
    sf_grid gd = {{T, 1, 1}}, gh = {{1, T, 1}}, gw = {{1, 1, T}};
    double slabs = rank_activations(&u, &gd, 0), rule = rank_activations(&u, &gd, 1);
    double h = rank_activations(&u, &gh, 1), w = rank_activations(&u, &gw, 1);
    if (slabs != rule || h != rule || w != rule) {
      fprintf(stderr, "FAIL: tiny, %d shards: slab plan %g, depth rule %g, H split %g, W split %g bytes\n", T, slabs,
              rule, h, w);
      bad++;
    }
  }
  sf_unet_free(&u);
  /* the spec's parameter counts (spec §9, base 64, 5 classes + background) */
  static const double want[] = {22400390, 90302342, 361896838, 1448248198, 5793600390, 23174902662};
  for (int ps = 6; ps <= 11; ps++) {
    if (build(&u, ps, 3, 64, 6, 8)) return 1;
    if ((double)u.total_params != want[ps - 6]) {
      fprintf(stderr, "FAIL: ps %d: %zu parameters, spec §9 says %.0f\n", ps, u.total_params, want[ps - 6]);
      bad++;
    }
    sf_unet_free(&u);
  }
  printf(bad ? "comm_volume: %d check(s) failed\n" : "comm_volume: all checks passed\n", bad);
  return bad ? 1 : 0;
}

static void tables(int base, int b, int K, int G)
{
  char h1[32], h2[32], h3[32], h4[32], h5[32], h6[32], h7[32];
  printf("## Gradient all-reduce per rank and step (base %d, bottleneck %d, %d classes incl. background)\n\n", base, b, K);
  printf("| ps | parameters | gradient (fp32) | ours, R=64 | ours, R=256 | ours, R=1024 | ring, R=64 | ring, R=1024 | "
         "redux_data owner, R=64 |\n|---|---|---|---|---|---|---|---|---|\n");
  for (int ps = 6; ps <= 11; ps++) {
    sf_unet u;
    if (build(&u, ps, b, base, K, G)) continue;
    double N = (double)u.total_params;
    printf("| %d | %.4g | %s | %s | %s | %s | %s | %s | %s |\n", ps, N, human(4 * N, h1, 32),
           human(4 * sf_allreduce_floats_ours(N, 64), h2, 32), human(4 * sf_allreduce_floats_ours(N, 256), h3, 32),
           human(4 * sf_allreduce_floats_ours(N, 1024), h4, 32), human(4 * sf_allreduce_floats_ring(N, 64), h5, 32),
           human(4 * sf_allreduce_floats_ring(N, 1024), h6, 32), human(8.0 * N * 63, h7, 32));
    sf_unet_free(&u);
  }
  printf("\n## Depth shards: halo planes per boundary and step (each direction), and per interior shard\n\n");
  printf("| ps | edge | forward | backward | per boundary & direction | interior shard sends | "
         "small sums, both ways | activations per sample (1 rank) | per rank, T=2 | T=4 | T=8 |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int ps = 6; ps <= 11; ps++) {
    sf_unet u;
    if (build(&u, ps, b, base, K, G)) continue;
    sf_grid g2 = {{2, 1, 1}}, g4 = {{4, 1, 1}}, g8 = {{8, 1, 1}}, g1 = {{1, 1, 1}};
    int pos0[3] = {0, 0, 0};
    sf_scale_step edge, inner;
    sf_scale_step_model(&u, &g2, pos0, 1, &edge);
    sf_scale_step_model(&u, &g4, NULL, 1, &inner);
    char a[32], bb[32], c[32], d[32], e[32], f[32], g[32], hh[32], i2[32];
    printf("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", ps, u.edge[0], human(edge.halo_fwd, a, 32),
           human(edge.halo_bwd, bb, 32), human(edge.halo_fwd + edge.halo_bwd, c, 32),
           human(inner.halo_fwd + inner.halo_bwd, d, 32), human(2 * inner.small_sums, e, 32),
           human(rank_activations(&u, &g1, 1), f, 32), human(rank_activations(&u, &g2, 1), g, 32),
           human(rank_activations(&u, &g4, 1), hh, 32), human(rank_activations(&u, &g8, 1), i2, 32));
    sf_unet_free(&u);
  }
}

/* Scale 11 (upstream's official problem): per grid, one rank's share; then the smallest grid that
 * fits each GPU count and memory size */
static const int grids11[][3] = {{1, 1, 1}, {2, 1, 1}, {8, 1, 1}, {2, 2, 2}, {4, 4, 4}, {8, 8, 4}, {8, 8, 8},
                                 {16, 8, 8}, {16, 16, 8}, {16, 16, 16}};
#define NGRIDS11 ((int)(sizeof grids11 / sizeof grids11[0]))

static void scale11(void)
{
  sf_unet u;
  if (build(&u, 11, 3, 64, 6, 8)) return;
  double N = (double)u.total_params;
  char a[32], b[32], c[32], d[32], e[32], f[32];
  printf("## Scale 11 per rank and step by grid (base 64, bottleneck 3, 6 classes, fp32, 1 sample per replica)\n\n"
         "| grid D x H x W | blocks | block at level 0 | activations + gradients + halos per rank | the same with "
         "activation_checkpointing | halo shells sent per step (interior block) | small sums, both ways | halo / "
         "activations |\n|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < NGRIDS11; i++) {
    sf_grid g = {{grids11[i][0], grids11[i][1], grids11[i][2]}};
    int n[3], blk[3], shards = g.n[0] * g.n[1] * g.n[2];
    sf_grid_level_blocks(&u, 0, &g, n, blk);
    sf_scale_step s;
    sf_scale_step_model(&u, &g, NULL, shards, &s);
    double act = rank_activations(&u, &g, 1), halo = s.halo_fwd + s.halo_bwd;
    printf("| [%d,%d,%d] | %d | %dx%dx%d | %s | %s | %s | %s | %.2g |\n", g.n[0], g.n[1], g.n[2], shards, blk[0],
           blk[1], blk[2], human(act, a, 32), human(rank_activations_ckpt(&u, &g, 1, 1), f, 32), human(halo, b, 32),
           human(2 * s.small_sums, c, 32), halo / act);
  }
  printf("\nModel state per rank (parameters, gradients, the all-reduce buffer, Adam m and v: 20 bytes a "
         "parameter): %s replicated; sharded over R ranks (not built): %s / R.\n\n", human(20 * N, a, 32),
         human(20 * N, b, 32));
  printf("## Scale 11 on GPUs: the smallest grid whose rank fits (activations + state), per GPU count and memory\n\n"
         "| GPUs | GiB each | state | grid | replicas | per rank | halo per step | all-reduce per step: ours | ring |\n"
         "|---|---|---|---|---|---|---|---|---|\n");
  const int gpus[3] = {64, 512, 4096};
  const double mem[2] = {80, 141};
  for (int gi = 0; gi < 3; gi++)
    for (int mi = 0; mi < 2; mi++)
      for (int sharded = 0; sharded < 2; sharded++) {
        int G = gpus[gi], found = 0;
        for (int i = 0; i < NGRIDS11 && !found; i++) {
          sf_grid g = {{grids11[i][0], grids11[i][1], grids11[i][2]}};
          int shards = g.n[0] * g.n[1] * g.n[2];
          if (shards > G || G % shards) continue;
          sf_scale_step s;
          sf_scale_step_model(&u, &g, NULL, G, &s);
          double state = sharded ? s.state / G : s.state, total = rank_activations(&u, &g, 1) + state;
          if (total > mem[mi] * GIB) continue;
          found = 1;
          printf("| %d | %.0f | %s | [%d,%d,%d] | %d | %s | %s | %s | %s |\n", G, mem[mi],
                 sharded ? "sharded over all ranks" : "replicated", g.n[0], g.n[1], g.n[2], G / shards,
                 human(total, a, 32), human(s.halo_fwd + s.halo_bwd, b, 32), human(s.allreduce_ours, c, 32),
                 human(s.allreduce_ring, d, 32));
        }
        if (!found)
          printf("| %d | %.0f | %s | none fits | - | %s state alone | - | - | - |\n", G, mem[mi],
                 sharded ? "sharded over all ranks" : "replicated", human(sharded ? 20 * N / G : 20 * N, e, 32));
      }
  sf_unet_free(&u);
}

int main(int argc, char **argv)
{
  int base = 64, b = 3, K = 6, G = 8;
  if (argc == 2 && !strcmp(argv[1], "--check")) return check();
  if (argc == 2 && !strcmp(argv[1], "--scale11")) return scale11(), 0;
  if (argc == 8 && !strcmp(argv[1], "--step-bytes")) {
    sf_unet u;
    if (build(&u, atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]))) return 2;
    (void)argv[7]; /* the slab count does not change what crosses (one plane per boundary and conv) */
    printf("%.0f\n", step_bytes_t2(&u));
    sf_unet_free(&u);
    return 0;
  }
  if (argc == 12 && !strcmp(argv[1], "--rank-bytes")) {
    int v[10];
    for (int i = 0; i < 10; i++) v[i] = atoi(argv[i + 2]);
    if (v[5] < 1 || v[6] < 1 || v[7] < 1 || v[8] < 1 || v[8] % (v[5] * v[6] * v[7]) || v[9] < 0 || v[9] >= v[8]) {
      fprintf(stderr, "comm_volume: --rank-bytes: grid %s x %s x %s, ranks %s, rank %s: expected a grid that divides the "
              "ranks and a rank below them\n", argv[7], argv[8], argv[9], argv[10], argv[11]);
      return 2;
    }
    sf_unet u;
    if (build(&u, v[0], v[1], v[2], v[3], v[4])) return 2;
    double sent, recv;
    rank_bytes(&u, v[5], v[6], v[7], v[8], v[9], &sent, &recv);
    printf("%.0f %.0f\n", sent, recv);
    sf_unet_free(&u);
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--base")) base = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bottleneck")) b = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--classes")) K = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--groups")) G = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: comm_volume [--base C] [--bottleneck B] [--classes K] [--groups G] | --check | "
              "--scale11 | --step-bytes PS B C K G S | --rank-bytes PS B C K G D H W R RANK\n");
      return 2;
    }
  }
  tables(base, b, K, G);
  return 0;
}
