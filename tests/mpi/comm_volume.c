/* Communication volume of one training step of the distributed design (docs/scaling.md), computed
 * from the U-Net that sf_unet_build makes - not estimated:
 *   - gradient all-reduce: N = total parameters (fp32) per rank and step, for our recursive doubling
 *     (N log2 R sent per rank), a bandwidth-optimal ring / reduce-scatter+all-gather
 *     (2 N (R-1)/R), and starpu_mpi_redux_data on one flat buffer (the owner receives N and
 *     sends the result back to R-1 ranks);
 *   - halos of a spatial shard: per conv3 layer, one depth plane (edge^2 x channels, fp32) to each
 *     neighbouring shard in the forward pass (the conv input) and one in the backward pass (the
 *     output gradient, for dX; dW reuses the forward planes), i.e. 2 planes per conv per boundary;
 *   - the small partial sums (GroupNorm statistics, loss and Dice) that shards send their replica's
 *     shard 0 and get back.
 *
 *   comm_volume [--base C] [--bottleneck B] [--classes K] [--groups G]   Markdown tables, ps 6..11
 *   comm_volume --step-bytes PS B C K G S   bytes one step sends from shard 0 to shard 1 in a
 *                                           2-rank spatial run (spatial_ranks 2, S slabs, classes
 *                                           K incl. background): halos + all-reduce + small sums
 *   comm_volume --check                     consistency checks of the formulas (CTest) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/model.h"
#include "scaffold/ops.h"

typedef struct {
  double params;        /* N */
  double halo_fwd;      /* floats per boundary and direction, forward (conv inputs) */
  double halo_bwd;      /* same, backward (output gradients of convs that need dX) */
  double gn_fwd_d;      /* doubles one way per step: one statistics vector (2G) per GroupNorm layer */
  double gn_bwd_d;      /* same, backward sums (2G + 2C) */
  int gn_layers, convs;
  double act_bytes;     /* fp32 activations + gradients held by the graph for one sample (all slabs) */
} model_comm;

static int build(sf_unet *u, int ps, int b, int base, int K, int G)
{
  char err[512];
  if (sf_unet_build(u, ps, b, base, K, G, err, sizeof err) != 0) {
    fprintf(stderr, "comm_volume: ps %d: %s\n", ps, err);
    return -1;
  }
  return 0;
}

/* One DoubleConv at level l: conv a cin->cout, conv b cout->cout; dx_a: conv a needs dX. */
static void dconv(const sf_unet *u, model_comm *m, int l, int cin, int cout, int dx_a)
{
  double plane = (double)u->edge[l] * u->edge[l];
  m->halo_fwd += plane * cin + plane * cout;
  m->halo_bwd += (dx_a ? plane * cout : 0) + plane * cout;
  m->convs += 2;
  m->gn_layers += 2;
  m->gn_fwd_d += 2.0 * 2 * u->groups;
  m->gn_bwd_d += 2.0 * (2 * u->groups + 2 * cout);
}

static model_comm analyse(const sf_unet *u)
{
  model_comm m;
  memset(&m, 0, sizeof m);
  m.params = (double)u->total_params;
  const int L = u->levels, *ch = u->channels;
  dconv(u, &m, 0, u->in_channels, ch[0], 0); /* inc: its input needs no gradient */
  for (int i = 1; i <= L; i++) dconv(u, &m, i, ch[i - 1], ch[i], 1);
  for (int i = 0; i < L; i++) dconv(u, &m, i, 2 * ch[i], ch[i], 1); /* Up: conv over [skip, up] */
  /* activations of the graph (graph.c): per level i, block tensors (4 x c_i) + their gradients (4 x c_i);
   * encoder and decoder blocks share gradient tensors */
  double v0 = (double)u->edge[0] * u->edge[0] * u->edge[0];
  m.act_bytes = v0 * (4.0 * u->in_channels + 2 + 8.0 * u->n_classes); /* input, labels, logits and their gradient */
  for (int i = 0; i <= L; i++) {
    double v = (double)u->edge[i] * u->edge[i] * u->edge[i];
    m.act_bytes += 4.0 * v * (4 * ch[i] + 4 * ch[i]);                                /* enc block + grads */
    if (i < L) m.act_bytes += 4.0 * v * (4 * ch[i] + ch[i] + 2 * ch[i] + 2 * ch[i] + 2 * ch[i]); /* dec, up, cat, g */
    if (i > 0) m.act_bytes += 4.0 * v * (2 * ch[i - 1]) + v * ch[i - 1];            /* pool, g.pool, argmax */
  }
  return m;
}

static double log2i(int r)
{
  int k = 0;
  while ((1 << (k + 1)) <= r) k++;
  return k;
}

/* floats sent per rank and step by our all-reduce (recursive doubling; non powers of two fold) */
static double ar_ours(double N, int R)
{
  int p2 = 1;
  while (p2 * 2 <= R) p2 *= 2;
  return N * (log2i(p2) + (R > p2 ? 1 : 0));
}
static double ar_ring(double N, int R) { return R > 1 ? 2.0 * N * (R - 1) / R : 0; }
static double ar_flat_root(double N, int R) { return 2.0 * N * (R - 1); } /* starpu_mpi_redux_data's owner */

static const char *human(double bytes, char *buf, size_t len)
{
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int k = 0;
  while (bytes >= 1024 && k < 5) bytes /= 1024, k++;
  snprintf(buf, len, k ? "%.3g %s" : "%.0f %s", bytes, u[k]);
  return buf;
}

/* bytes sent from shard 0 to shard 1 in one step of a 2-rank spatial run with S slabs */
static double step_bytes_t2(const sf_unet *u, int S)
{
  model_comm m = analyse(u);
  int K = u->n_classes;
  double halo = 4.0 * (m.halo_fwd + m.halo_bwd);
  double allreduce = 4.0 * ar_ours(m.params, 2);
  (void)S;
  /* shard 0 (the replica's root) sends each reduced statistic once: GN stats (2G) forward,
   * GN backward sums (2G + 2C) and the loss sums (SF_LOSS_NACC(K)) */
  double small = 8.0 * (m.gn_fwd_d + m.gn_bwd_d + SF_LOSS_NACC(K));
  return halo + allreduce + small;
}

static int check(void)
{
  int bad = 0;
  sf_unet u;
  /* configs/tiny.yml: ps 4, b 3, base 8, 3 classes + background, 8 groups, 3 input channels */
  if (build(&u, 4, 3, 8, 4, 8)) return 1;
  model_comm m = analyse(&u);
  /* by hand (docs/architecture.md §6 layout): fwd planes 16^2*3 + 16^2*8 + 8^2*8 + 8^2*16 + 16^2*16 + 16^2*8,
   * bwd 16^2*8 + 8^2*16 + 8^2*16 + 16^2*8 + 16^2*8 */
  double fwd = 256.0 * 3 + 256 * 8 + 64 * 8 + 64 * 16 + 256 * 16 + 256 * 8, bwd = 256.0 * 8 + 64 * 16 * 2 + 256 * 8 * 2;
  if (m.halo_fwd != fwd || m.halo_bwd != bwd) {
    fprintf(stderr, "FAIL: tiny halos %g/%g floats, expected %g/%g\n", m.halo_fwd, m.halo_bwd, fwd, bwd);
    bad++;
  }
  if (m.params != 19124 || m.convs != 6 || m.gn_layers != 6) {
    fprintf(stderr, "FAIL: tiny model: %g params (19124), %d convs (6), %d GroupNorms (6)\n", m.params, m.convs,
            m.gn_layers);
    bad++;
  }
  /* the all-reduce formulas agree where they must */
  for (int R = 1; R <= 1024; R *= 2)
    if (ar_ours(1000, R) != 1000 * log2i(R) || (R == 2 && ar_ring(1000, 2) != 1000)) {
      fprintf(stderr, "FAIL: all-reduce volume at R=%d\n", R);
      bad++;
    }
  if (ar_ours(1000, 3) != 2000 || ar_ours(1000, 6) != 3000) {
    fprintf(stderr, "FAIL: non-power-of-two fold: %g, %g\n", ar_ours(1000, 3), ar_ours(1000, 6));
    bad++;
  }
  double sb = step_bytes_t2(&u, 2);
  if (sb != 153920) { /* measured with STARPU_COMM_STATS=1 on 2 ranks (tests/mpi/test_spatial_equiv.sh) */
    fprintf(stderr, "FAIL: tiny 2-shard step: %g bytes predicted, 153920 measured\n", sb);
    bad++;
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
           human(4 * ar_ours(N, 64), h2, 32), human(4 * ar_ours(N, 256), h3, 32), human(4 * ar_ours(N, 1024), h4, 32),
           human(4 * ar_ring(N, 64), h5, 32), human(4 * ar_ring(N, 1024), h6, 32), human(4 * ar_flat_root(N, 64), h7, 32));
    sf_unet_free(&u);
  }
  printf("\n## Halo planes per boundary and step (each direction), and per interior shard\n\n");
  printf("| ps | edge | conv3 layers | forward | backward | per boundary & direction | interior shard sends | "
         "small sums, both ways (1 slab/shard) | activations per sample | per shard, T=2 | T=4 | T=8 |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int ps = 6; ps <= 11; ps++) {
    sf_unet u;
    if (build(&u, ps, b, base, K, G)) continue;
    model_comm m = analyse(&u);
    double per = 4.0 * (m.halo_fwd + m.halo_bwd);
    char a[32], bb[32], c[32], d[32], e[32], f[32], g[32], hh[32], i2[32];
    printf("| %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", ps, u.edge[0], m.convs,
           human(4 * m.halo_fwd, a, 32), human(4 * m.halo_bwd, bb, 32), human(per, c, 32), human(2 * per, d, 32),
           human(2 * 8.0 * (m.gn_fwd_d + m.gn_bwd_d + SF_LOSS_NACC(K)), e, 32), human(m.act_bytes, f, 32),
           human(m.act_bytes / 2, g, 32), human(m.act_bytes / 4, hh, 32), human(m.act_bytes / 8, i2, 32));
    sf_unet_free(&u);
  }
  printf("\nT (spatial_ranks) is at most the bottleneck edge 2^%d = %d: slab boundaries are fixed at the coarsest "
         "level.\n", b, 1 << b);
}

int main(int argc, char **argv)
{
  int base = 64, b = 3, K = 6, G = 8;
  if (argc == 2 && !strcmp(argv[1], "--check")) return check();
  if (argc == 8 && !strcmp(argv[1], "--step-bytes")) {
    sf_unet u;
    if (build(&u, atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]))) return 2;
    printf("%.0f\n", step_bytes_t2(&u, atoi(argv[7])));
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
              "--step-bytes PS B C K G S\n");
      return 2;
    }
  }
  tables(base, b, K, G);
  return 0;
}
