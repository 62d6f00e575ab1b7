/* The memory plan of `scaffold benchmark`: the peak host memory one rank is expected to
 * hold while training, computed before any work from the U-Net's topology and the configuration
 * alone (pure arithmetic, nothing allocated), so a problem that cannot fit is refused up front with
 * the figure. It mirrors what the training step allocates (src/train/graph.c: every activation and
 * activation-gradient tensor with its buffer reuse, the GroupNorm and loss partial sums, the
 * gradient / optimizer arenas and per-slab partials; src/train/train_step.c: the batch's sample
 * buffers and the loader's read buffer, the warm-up and async_save snapshots) plus the CPU workers'
 * scratch memory and a fixed process base (StarPU, BLAS, the binary), measured once and stated in
 * SF_MEMPLAN_BASE_BYTES. Checked against the measured peak RSS by the CTest memory_plan_rss. */
#ifndef SF_MEMORY_PLAN_H
#define SF_MEMORY_PLAN_H

#include <stddef.h>

#include "scaffold/config.h"
#include "scaffold/model.h"

/* The process's resident set besides what the plan counts: the binary, libc, StarPU and its worker
 * threads, OpenBLAS, hwloc, the dataset and fractal generation's leftovers (measured:
 * `scaffold benchmark -c configs/tiny.yml --set ncpu=2 --set n_instances_used_per_fractal=15
 * --set epochs=1 --max-count 2`, problem_scale 4, base 8, peaks at 77.2 MiB under /usr/bin/time,
 * of which the plan's other parts are 3.3 MiB). */
#define SF_MEMPLAN_BASE_BYTES ((double)(74u << 20))

/* What the plan depends on besides the network: the rank layout and the workers. */
typedef struct {
  int spatial;       /* depth shards sharing one volume (spatial_ranks) */
  int shards_h, shards_w; /* H and W shards (dc_num_shards; scaffold/scale_model.h; 0 or 1: none); the
                           * ranks per volume are spatial x shards_h x shards_w */
  int grid_depth;         /* 1: depth blocks by the scale model's rule (edge / min(spatial, edge) planes,
                           * any spatial) instead of the slabs (planning: equal when slabs = spatial) */
  int replicas;      /* data-parallel replicas (the world size / spatial) */
  int cpu_workers;   /* CPU workers of this rank: each holds its own scratch buffers */
  int workers;       /* all workers (CPU + CUDA + OpenCL): the automatic slab count and the per-slab
                      * gradient partials depend on it */
  size_t part_max_floats; /* SF_GRAD_PART_MAX_FLOATS (graph.c): 0 = the graph's default */
} sf_memplan_layout;

/* The plan, in bytes per rank, by what holds the memory. */
typedef struct {
  int slabs;            /* the depth slabs the graph will use */
  double activations;   /* forward tensors: input, labels, every block's four tensors, pools, concats,
                         * logits (this rank's slabs); activation_checkpointing: a level's two blocks
                         * keep their tensors in two buffers and the level's gradient buffers (the
                         * skip gradient in one of the two) */
  double act_grads;     /* activation-gradient tensors (two rotating buffers per level, the pools',
                         * skips' and logits' gradients) */
  double halo;          /* halo planes at shard boundaries (spatial_ranks > 1) */
  double pad_copies;    /* H/W blocks: the convs' padded copies of their blocks (graph_blocks.c) */
  double params;        /* the parameter arena */
  double grads;         /* the gradient arena, per-slab gradient partials, per-sample GroupNorm
                         * gradients of a batch, the all-reduce receive buffer */
  double optimizer;     /* Adam m and v (allocated for every optimizer), the warm-up snapshot, the
                         * async_save snapshot */
  double partial_sums;  /* GroupNorm, loss and Dice partial sums */
  double samples;       /* the batch's sample buffers and the loader's read buffer */
  double workspace;     /* the CPU workers' scratch buffers (im2col chunks, flipped weights) */
  double base;          /* SF_MEMPLAN_BASE_BYTES */
  double total;
} sf_memplan;

/* Fills *m for the network u under configuration c (slabs, local_batch_size, more_determinism,
 * warmup_batches, async_save, activation_checkpointing) and layout l. */
void sf_memory_plan(const sf_unet *u, const sf_config *c, const sf_memplan_layout *l, sf_memplan *m);

/* One line per part and the total, in MiB, each line prefixed with `prefix`. */
void sf_memory_plan_format(const sf_memplan *m, const char *prefix, char *buf, size_t len);

#endif
