/* The U-Net training step as a tiled StarPU task graph (docs/architecture.md §5): every activation is a
 * slab-split StarPU block (scaffold/tensor.h), every op a task (scaffold/tasks.h). A step submits
 * sample loading, forward, loss, backward, the fixed-order reductions, gradient clipping and the
 * optimizer (Adam, SGD or RMSprop) asynchronously, then waits once. All memory (activations,
 * gradients, optimizer state, partial sums)
 * is allocated by sf_graph_create, so steps allocate nothing.
 *
 * Usage (StarPU started first with sf_runtime_init):
 *   sf_graph *g = sf_graph_create(&unet, &cfg, params, err, sizeof err);
 *   for each sample:  sf_graph_train_step(g, x, labels, class_w, lr, ++adam_step, out);
 *   (or each batch:   sf_graph_train_batch(g, B, xs, labels, class_w, lr, ++adam_step, out);)
 *   validation:       sf_graph_eval(g, x, labels, class_w, out4);
 *   checkpoint:       sf_graph_acquire_state(g, 0); write params / m / v; sf_graph_release_state(g);
 *   sf_graph_destroy(g);   (params then hold the trained weights)
 *
 * The parameters arena is owned by the caller but registered with StarPU while the graph exists:
 * touch it (and the m, v, grads arenas) only between sf_graph_acquire_state and
 * sf_graph_release_state. Samples: x is (G,G,G,in_channels) fp32 NDHWC, labels (G,G,G) uint16 in
 * 0..K-1, class_w (K) fp32; they are read by tasks during the call only. In a spatially distributed
 * graph (spatial_ranks or dc_num_shards > 1 rank per volume) x and labels hold only this rank's box
 * of sf_graph_sample_box: x is (n[0],n[1],n[2],in_channels) NDHWC, labels (n[0],n[1],n[2]).
 *
 * Configuration keys used: `slabs` (0 = automatic: enough slabs per layer to feed every worker,
 * capped by the bottleneck edge), `dc_num_shards` / `dc_shard_dims` / `spatial_ranks` (the shard
 * grid: blocks along depth, rows and columns on their ranks; rows and columns split make the convs
 * run on padded copies, graph_blocks.c; a grid finer than a deep level merges there; in one process
 * the test hook SF_HW_BLOCKS=RxC splits rows and columns), `more_determinism` (1 = fixed-order weight-gradient reduction:
 * bitwise identical results whatever the scheduler or worker count; the automatic slab count then
 * depends on the problem only), `optimizer` (a name of
 * src/train/optimizers.c's table), `local_batch_size` (the largest batch a
 * step takes: per-sample loss sums and GroupNorm gradient copies are allocated for it),
 * `activation_checkpointing` (1 = a level's encoder and decoder blocks keep their tensors in two
 * buffers and the level's two gradient buffers; the backward recomputes by tasks what it needs
 * from the concat or max-pool output the forward kept; bitwise the same results). scaffold/memory_plan.h estimates what sf_graph_create allocates. */
#ifndef SF_GRAPH_H
#define SF_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "scaffold/config.h"
#include "scaffold/model.h"

typedef struct sf_graph sf_graph;

/* Adam hyper-parameters (torch defaults) and the clipping norm of spec §6.1/§6.4. */
#define SF_ADAM_BETA1 0.9
#define SF_ADAM_BETA2 0.999
#define SF_ADAM_EPS 1e-8
#define SF_CLIP_MAX_NORM 1.0f
/* The largest local_batch_size a graph takes (the per-sample GroupNorm gradients of a batch are
 * summed by one task, which takes at most 255 inputs). */
#define SF_GRAPH_MAX_BATCH 255

/* RMSprop hyper-parameters (torch defaults; spec §6.4: momentum 0, not centered). SGD has lr only. */
#define SF_RMSPROP_ALPHA 0.99
#define SF_RMSPROP_EPS 1e-8

/* ---- optimizers (src/train/optimizers.c) ----
 * The optimizers the graph implements, by upstream config name (spec §6.4: ADAM, SGD, and RMSprop
 * for any other name; we accept "RMSProp" (upstream's CLI choice) and "RMSprop" only). `scaffold
 * benchmark` refuses any other `optimizer` before it starts; sf_graph_create checks again. State:
 * Adam's m and v; RMSprop's square_avg lives in v (m stays zero); SGD has none. */
typedef enum { SF_OPT_ADAM, SF_OPT_SGD, SF_OPT_RMSPROP } sf_optimizer_kind;
typedef struct {
  const char *name; /* as written in the config ("ADAM", "SGD", "RMSProp", "RMSprop") */
  sf_optimizer_kind kind;
  const char *what; /* hyper-parameters, for messages */
} sf_optimizer_info;
/* The implemented optimizer of that exact name, or NULL. */
const sf_optimizer_info *sf_optimizer_find(const char *name);
/* "ADAM, SGD, RMSProp, RMSprop" (the implemented names, comma-separated). */
void sf_optimizer_names(char *buf, size_t len);

/* The checks of sf_graph_create that need neither StarPU nor memory: `optimizer` in the table
 * above, `slabs` within the bottleneck edge (and SF_MAX_SLABS), `spatial_ranks` (= spatial, the
 * shards per replica) within the slab count. Returns 0, or -1 with the key at fault in *key and
 * what was expected in err ("... expected 0 (automatic) or 1..8 ..."). */
int sf_graph_check_config(const sf_unet *u, const sf_config *c, int spatial, const char **key, char *err,
                          size_t errlen);

/* The box of a sample this rank's tasks read (its blocks of the input): first voxel lo[] and extents
 * n[] along depth, rows, columns; the whole grid in a single process or with one rank per volume.
 * The step functions take samples of this box. */
void sf_graph_sample_box(const sf_graph *g, int lo[3], int n[3]);

/* Builds the graph's data for the network u (which must outlive the graph) and registers params
 * (u->total_params floats). StarPU must be running. Returns NULL with a message in err on a bad
 * configuration (e.g. `slabs` above the bottleneck edge, an optimizer not in the table above). */
sf_graph *sf_graph_create(const sf_unet *u, const sf_config *c, float *params, char *err, size_t errlen);
/* Waits for pending tasks, unregisters every handle and frees the graph's memory. */
void sf_graph_destroy(sf_graph *g);

/* One training step on one sample: forward, loss, backward, clip to SF_CLIP_MAX_NORM, the optimizer
 * with learning rate lr (Adam: at step adam_step, counted from 1; SGD and RMSprop ignore it). out: ce, soft foreground Dice, loss (of the
 * forward before the update). Returns 0; -1 if the loss is not finite (the update is applied anyway,
 * as upstream does). */
int sf_graph_train_step(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double lr,
                        long adam_step, double out[3]);
/* Forward + loss + backward only: the gradients (arena layout, see sf_graph_grads) of one sample;
 * no clipping, no update. out as above. */
int sf_graph_grad_step(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double out[3]);
/* One training step on a batch of B samples x[b], labels[b] (1 <= B <= the config's
 * local_batch_size), upstream's batch semantics (spec §6.1-6.3): CE over the whole batch with one
 * pooled denominator (sum of class_w[label] over every voxel of the batch), soft foreground Dice
 * averaged over samples and classes, loss = CE + 1 - Dice; its gradient, summed over the samples in
 * the graph, is clipped and applied by the same tasks as a single sample's. out: the batch's ce,
 * Dice and loss. B = 1 is sf_graph_train_step. */
int sf_graph_train_batch(sf_graph *g, int B, const float *const *x, const uint16_t *const *labels,
                         const float *class_w, double lr, long adam_step, double out[3]);
/* The same without clipping and update: the batch loss's gradients. */
int sf_graph_grad_batch(sf_graph *g, int B, const float *const *x, const uint16_t *const *labels,
                        const float *class_w, double out[3]);
/* Validation: forward only. out: ce, soft foreground Dice, loss, hard foreground Dice. */
int sf_graph_eval(sf_graph *g, const float *x, const uint16_t *labels, const float *class_w, double out[4]);
/* Forward only; logits (G,G,G,K) copied out (for tests and inference). */
void sf_graph_forward(sf_graph *g, const float *x, float *logits);

/* Make params, grads, m and v readable (write != 0: also writable) by the host, in their arenas;
 * release hands them back to the task graph. */
void sf_graph_acquire_state(sf_graph *g, int write);
void sf_graph_release_state(sf_graph *g);
float *sf_graph_params(sf_graph *g);
float *sf_graph_grads(sf_graph *g);   /* gradients of the last step, before clipping; distributed:
                                       * after a train step the mean over replicas, after a grad
                                       * step this rank's own (its slabs' part in a spatial run) */
float *sf_graph_adam_m(sf_graph *g); /* the optimizer state: Adam's m and v; RMSprop's square_avg */
float *sf_graph_adam_v(sf_graph *g); /* is v (m stays zero); SGD leaves both zero */
/* Global gradient L2 norm of the last train step (before clipping). */
double sf_graph_last_grad_norm(const sf_graph *g);

/* Declared flops of one training step (forward + backward + optimizer; the first step's batch), as
 * the tasks carry them. */
double sf_graph_step_flops(const sf_graph *g);
int sf_graph_nslabs(const sf_graph *g);
/* Bytes of the bf16 weight copies packed once per forward for the CPU workers (torch_amp: 1 on AMX; 0 when each task
 * packs its own: scaffold/tasks.h sf_conv3d_packed_bytes) */
size_t sf_graph_packed_weight_bytes(const sf_graph *g);
/* The automatic slab count: 0 < result <= min(coarse_edge, SF_MAX_SLABS). With deterministic != 0
 * it depends on coarse_edge only (4); otherwise the smallest power of two >= the worker count (1
 * with one worker), so slabs are even (the bottleneck edge is a power of two), doubled once with
 * several workers when each doubled slab still holds >= SF_OVERDECOMPOSE_MIN_FLOATS of the top
 * level's activation (top_floats: one sample's edge^3 x base channels; the samples of a batch run
 * one after another, so they add no parallelism). Two tasks per worker and op let a faster worker
 * take over a slower one's share: on AMX hosts whose two vCPUs ran 330 vs 850 GFLOP/s side by side,
 * ps 5 b64 gained 10 % (docs/performance.md, "Slabs"); below the floor the extra halos and tasks
 * cost more than the balance gains (ps 4 b8: 2.77 ms with 2 slabs, 3.68 with 4). */
#define SF_OVERDECOMPOSE_MIN_FLOATS (1L << 18)
int sf_graph_auto_slabs(int coarse_edge, int nworkers, int deterministic, long top_floats);
/* The same for the U-Net u under config c (its more_determinism). */
int sf_graph_auto_slabs_for(const sf_unet *u, const sf_config *c, int nworkers);
/* One line: slabs, tasks per step, allocated bytes, reduction scheme. */
void sf_graph_describe(const sf_graph *g, char *buf, size_t len);

#endif
