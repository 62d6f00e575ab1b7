/* Private state of the training-step task graph (scaffold/graph.h), shared by graph.c (build,
 * destroy, accessors), graph_plan.c (the block plan), graph_forward.c, graph_backward.c and
 * graph_step.c. Levels follow spec §5: level i has edge G/2^i and c_i channels; the encoder has
 * blocks at 0..L, the decoder at 0..L-1 (dec[i] is the DoubleConv of the Up that produces level i). */
#ifndef SF_GRAPH_INTERNAL_H
#define SF_GRAPH_INTERNAL_H

#include "scaffold/comm.h"
#include "scaffold/graph.h"
#include "scaffold/tasks.h"
#include "scaffold/tensor.h"

/* One GroupNorm layer: per-slab partial statistics and their fixed-order sums. */
typedef struct {
  int gamma, beta; /* parameter indices */
  int C, S;                          /* channels; blocks of the level (partials) */
  size_t ntotal;                     /* voxels of the level */
  sf_handle stat_part[SF_MAX_SLABS]; /* (G,2) double, one per slab */
  sf_handle stats;                   /* (G,2) reduced */
  sf_handle bwd_part[SF_MAX_SLABS];  /* (2G+2C) double: [gsums, dgb] per slab */
  sf_handle bwd_sum;                 /* (2G+2C) reduced */
  double *mem;                       /* backing store of the above */
  size_t mem_len;                    /* doubles */
} gn_layer;

/* conv3 -> GN+ReLU -> conv3 -> GN+ReLU at one level. */
typedef struct {
  int level, cin, cout;
  int w_a, w_b;                    /* conv parameter indices */
  gn_layer gn_a, gn_b;
  sf_tensor pre_a, act_a, pre_b, out; /* conv a output, GN a output, conv b output, block output */
} dconv_block;

/* The blocks of one level: counts, boundaries, owners (world ranks). */
typedef struct {
  int nd, nh, nw, S;
  int d0[SF_MAX_SLABS + 1], h0[SF_MAX_HW + 1], w0[SF_MAX_HW + 1];
  int owner[SF_MAX_SLABS];
} lvl_grid;

/* Scratch tensors of the H/W block decomposition (graph_blocks.c): for a conv at a level, its input
 * padded with the neighbours' columns (PADW_X, shared with the output gradient's) and then rows
 * (PAD_X), the output gradient padded (PAD_Y; after dX, its copy in a zero border for dW), and the
 * conv's padded output (OUT). One of each kind per level and channel count, reused by every conv
 * there; StarPU orders the reuse. */
enum { SF_SCR_PADW_X, SF_SCR_PAD_X, SF_SCR_PAD_Y, SF_SCR_OUT, SF_SCR_KINDS };
#define SF_MAX_SCRATCH 96
typedef struct {
  int level, C, kind;
  sf_tensor t;
} blk_scratch;

struct sf_graph {
  const sf_unet *u;
  int L, S, K, G, cin0;         /* levels, slabs, classes, GN groups, input channels */
  int deterministic;            /* more_determinism: per-slab partials for every weight gradient */
  int checkpointing;            /* activation_checkpointing: each level keeps four buffers, X = g_out and
                                 * Y = g_pre_b (the gradients' two) and A, B (ck_a, ck_b); both blocks of
                                 * the level put pre_a and pre_b in A, act_a in Y and out in B, and
                                 * g_skip[i] is B. The backward recomputes what it reads and no longer
                                 * holds (graph_backward.c); only the concat, max-pool outputs and block
                                 * outputs stay from the forward */
  /* ---- the block grid of each level (docs/architecture.md §5): nd depth slabs x nh x nw H/W blocks,
   * block k = (kd * nh + kh) * nw + kw; nh = nw = 1: depth slabs only. Usually the same counts at
   * every level (boundaries fixed at the bottleneck); a grid finer than a deep level merges there
   * (graph_plan.c sf_graph_level_grids): mv[l] is level l's grid on level l-1's volume, and the
   * merged views below hold level l-1 tensors in it around the max-pool and the up-conv ---- */
  lvl_grid lg[SF_MAX_LEVELS + 1], mv[SF_MAX_LEVELS + 1];
  int merges[SF_MAX_LEVELS + 1];      /* level l >= 1 has fewer blocks than level l-1 */
  sf_tensor m_pool_in[SF_MAX_LEVELS + 1], m_pool_grad[SF_MAX_LEVELS + 1], m_skip_grad[SF_MAX_LEVELS + 1];
  sf_tensor m_up[SF_MAX_LEVELS + 1], m_up_grad[SF_MAX_LEVELS + 1];
  int *plevel;                        /* P: the level whose blocks contribute to parameter p's gradient */
  blk_scratch scratch[SF_MAX_SCRATCH];
  int nscratch;

  /* ---- activations ---- */
  sf_tensor in, lab, logits;
  dconv_block enc[SF_MAX_LEVELS + 1];
  dconv_block dec[SF_MAX_LEVELS];
  sf_tensor pool[SF_MAX_LEVELS + 1], pidx[SF_MAX_LEVELS + 1]; /* level i >= 1: maxpool of enc[i-1] */
  sf_tensor up[SF_MAX_LEVELS], cat[SF_MAX_LEVELS];            /* level i < L: upconv output, concat */
  int up_w[SF_MAX_LEVELS], up_b[SF_MAX_LEVELS];               /* Up producing level i */
  int out_w, out_b;                                           /* OutConv */

  /* ---- activation gradients (shared by the encoder and decoder block of a level) ---- */
  sf_tensor g_out[SF_MAX_LEVELS + 1], g_pre_b[SF_MAX_LEVELS + 1], g_act_a[SF_MAX_LEVELS + 1],
      g_pre_a[SF_MAX_LEVELS + 1];
  sf_tensor g_cat[SF_MAX_LEVELS], g_skip[SF_MAX_LEVELS], g_up[SF_MAX_LEVELS];
  sf_tensor g_pool[SF_MAX_LEVELS + 1];
  sf_tensor g_logits;
  sf_tensor ck_a[SF_MAX_LEVELS + 1], ck_b[SF_MAX_LEVELS + 1]; /* activation_checkpointing: A and B */

  /* ---- loss, Dice, class weights ---- */
  int bmax;                          /* the largest batch a step takes (config local_batch_size) */
  double *small;                     /* backing store of the partials below */
  size_t small_len;
  sf_handle loss_part[SF_MAX_SLABS]; /* SF_LOSS_NACC(K) */
  sf_handle *loss_acc;               /* bmax: reduced loss sums of sample b of the batch */
  sf_handle dice_part[SF_MAX_SLABS], dice_acc; /* (K,3) */
  double *loss_acc_buf, *dice_acc_buf; /* loss_acc_buf: bmax x SF_LOSS_NACC(K) */
  sf_handle wsum_part[SF_MAX_SLABS], wsum; /* bmax > 1: the batch's pooled CE weight sum, per slab and reduced */
  float *cw_buf;
  sf_handle cw;

  /* ---- parameters and optimizer state (arena layout of model.h) ---- */
  int P;
  float *params;                     /* caller's */
  float *grads, *m, *v, *gpart;      /* ours; gpart = arenas of per-slab partials, part_total floats each */
  int gpart_slabs;                   /* arenas in gpart: S, or the owned slabs in a spatial run */
  unsigned char *part_grad;          /* P: 1 if slab k writes its own partial (hgp), summed in slab order */
  size_t *part_off, part_total;      /* P: offset of p's partial in a slab's arena; floats per arena */
  sf_handle *split_grad;             /* 2P: the two tap blocks of gradient p (NULL: not split) */
  int *split_taps;                   /* P: taps in the first block (its rows: taps*Cin); 0 = not split */
  size_t total;
  sf_handle *hp, *hg, *hm, *hv;      /* P each; hv is RMSprop's square_avg, SGD uses neither */
  sf_optimizer_kind opt;             /* the config's optimizer (src/train/optimizers.c) */
  sf_handle *hgp;                    /* S*P, [k*P + p]; NULL entries for params without partials */
  unsigned char *slab_grad;          /* P: 1 if slabs contribute to this gradient (conv, upconv, outconv) */
  sf_handle *gn_sample;              /* bmax > 1: bmax*P, [b*P + p]: sample b's GroupNorm parameter
                                      * gradients (NULL for the others), summed in sample order */
  float *gn_sample_mem;
  size_t gn_sample_floats;
  sf_handle *hpk;                     /* 2P, [2p + flip]: torch_amp's bf16 copies of conv weight p packed once per
                                      * forward for the forward (flip 0) and dX (1); NULL where packed per task */
  unsigned char *wpack;              /* their memory, wpack_bytes */
  size_t wpack_bytes;
  double *sumsq_buf;                 /* P */
  sf_handle *hsumsq;                 /* P */
  double clip_buf[2];                /* [coefficient, norm] */
  sf_handle clip;

  /* ---- distribution (scaffold/dist.h); zero / NULL in a single process ----
   * spatial > 1: slab k belongs to rank owner[k] of this replica, every handle a task may touch is
   * registered with StarPU-MPI, and tasks go through starpu_mpi_task_insert. Each shard q of the
   * replica has its own gradient arena (hgq[q*P + p], memory on that rank only): its slabs'
   * contributions, and on shard 0 the GroupNorm parameters' (full-volume) gradients. The all-reduce
   * then sums every rank's arena and scales by 1/replicas. */
  int spatial, me, shard, root;      /* shards per replica, world rank, shard index, rank of shard 0 */
  int owner[SF_MAX_SLABS];           /* world rank owning slab k */
  int ntensor, nsmall, nnode;        /* tag counters (same order on every rank of the replica) */
  sf_handle *hgq;                    /* spatial*P; hg = hgq + shard*P */
  struct sf_allreduce *ar;           /* world size > 1 */

  /* ---- task options (scaffold/tasks.h), set at creation ----
   * Priorities: sample loads, then the activation path (forward, dX), then weight gradients and the
   * optimizer. mpi = 1 in a spatial run: every task of the replica goes through StarPU-MPI. */
  sf_topt opt_load, opt_crit, opt_low;

  int sample, batch;                 /* the sample of the batch whose backward is being submitted */
  double step_flops;
  long tasks_per_step;
  size_t bytes;                      /* allocated by the graph */
  double last_norm;
};

/* graph_forward.c: forward of the whole network from g->in to g->logits. */
void sf_graph_submit_forward(sf_graph *g);
/* graph_forward.c, activation_checkpointing: the parts of block b's forward that the backward
 * recomputes, with the GroupNorm statistics the forward kept (so bitwise the forward's values):
 * pre_a = conv a(x), act_a = ReLU(GN a(pre_a)); pre_b = conv b(act_a), and when out is not NULL
 * out = ReLU(GN b(pre_b)). */
void sf_graph_recompute_a(sf_graph *g, dconv_block *b, sf_tensor *x, sf_tensor *pre_a, sf_tensor *act_a);
void sf_graph_recompute_b(sf_graph *g, dconv_block *b, sf_tensor *act_a, sf_tensor *pre_b, sf_tensor *out);
/* graph_backward.c: the loss partials and their reduction into the loss sums of sample b of the
 * batch; the loss backward and the backward of the network for sample b of a batch of B, adding
 * into the batch's gradients (the first sample starts them, the last one completes them); then
 * clipping and the optimizer the config selects (Adam, SGD or RMSprop). */
void sf_graph_submit_loss(sf_graph *g, int b);
void sf_graph_submit_backward(sf_graph *g, int b, int B);
void sf_graph_submit_optimizer(sf_graph *g, double lr, long step);

/* graph_blocks.c: with H/W blocks (g->nh * g->nw > 1), a 3x3x3 conv runs on padded copies of its
 * blocks. y = conv(x); dx (or NULL) and dW of y = conv(x) from dy (the weight gradient through
 * conv3_weights_task, graph_backward.c's accumulation rule). Every halo it needs is exchanged here. */
static inline int sf_graph_blocked_at(const sf_graph *g, int l) { return g->lg[l].nh * g->lg[l].nw > 1; }
static inline int sf_graph_blocked(const sf_graph *g) { return sf_graph_blocked_at(g, 0); }
void sf_graph_scratch_init(sf_graph *g);
void sf_graph_scratch_free(sf_graph *g);
int sf_graph_level_of(const sf_graph *g, const sf_tensor *t);
void sf_graph_conv3_forward_blocked(sf_graph *g, sf_tensor *y, sf_tensor *x, int w, int cin, int cout);
typedef void (*sf_conv3_dw_fn)(sf_graph *g, sf_handle lo, sf_handle x, sf_handle hi, sf_handle dy, int H, int W,
                               int w, int cin, int cout, int k, const sf_topt *o);
void sf_graph_conv3_backward_blocked(sf_graph *g, sf_tensor *dx, sf_tensor *dy, sf_tensor *x, int w, int cin, int cout,
                                     sf_conv3_dw_fn dw);

/* The gradient handle of parameter p on shard q (spatial runs), or this rank's. */
static inline sf_handle sf_graph_grad_of(const sf_graph *g, int q, int p)
{
  return g->spatial > 1 ? g->hgq[(size_t)q * g->P + p] : g->hg[p];
}
/* The shard owning slab k of level 0 / block k of level l (0 in a single process). */
static inline int sf_graph_shard_of(const sf_graph *g, int k) { return g->owner[k] - g->root; }
static inline int sf_graph_shard_at(const sf_graph *g, int l, int k) { return g->lg[l].owner[k] - g->root; }
/* graph_plan.c: after sf_graph_check_config, the level-0 blocks fine[3] (depth slabs, row and
 * column blocks) and the depth shard count; 0, or -1 with the reason in err. */
int sf_graph_plan_blocks(const sf_unet *u, const sf_config *c, int spatial, int fine[3], int *depth_shards, char *err,
                         size_t errlen);
/* graph_plan.c: every level's block grid (lvl_grid) and owners, the merged view grids g->mv and
 * g->merges, g->S and g->owner, for `fine` level-0 blocks over depth_shards shards along the depth. */
void sf_graph_level_grids(sf_graph *g, const sf_unet *u, const int fine[3], int depth_shards);
/* graph.c: the tensor grid of a level's blocks (mv: the merged view grid). */
sf_tensor_grid sf_graph_tensor_grid(const lvl_grid *lg);
/* graph_forward.c: copies src into dst, a tensor of the same volume in another block grid, box by box
 * (merging blocks onto fewer owners, or splitting them back). */
void sf_graph_regrid(sf_graph *g, sf_tensor *dst, const sf_tensor *src);

/* Conv weight p packed for the forward (flip 0) or dX (flip 1), or NULL (graph.c packed_weights_init) */
static inline sf_handle sf_graph_packed(const sf_graph *g, int p, int flip) { return g->hpk[2 * p + flip]; }
/* The tasks that pack them, at the start of each forward */
void sf_graph_submit_weight_packing(sf_graph *g);

#endif
