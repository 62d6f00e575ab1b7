/* Activation tensors as StarPU data (docs/architecture.md §5). A tensor is D x H x W x C (NDHWC, batch 1) in
 * ONE allocation, split into depth slabs; slab k is its own StarPU 3D block handle registered as
 * block(nx = W*C, ny = H, nz = slab depth) on a slice of that allocation, so a slab and its halo
 * planes are contiguous. Slab boundaries are chosen at the coarsest (bottleneck) level and scaled by
 * 2 per level towards the input, so max-pool/up-conv slab k maps exactly onto slab k of the next
 * level. Callers see only opaque handles (sf_handle); the StarPU types stay in codelets/ and here. */
#ifndef SF_TENSOR_H
#define SF_TENSOR_H

#include <stddef.h>

#define SF_MAX_SLABS 64

/* An opaque data handle: a starpu_data_handle_t under runtime starpu, the host executor's own
 * record (src/runtime/host_data.c) under openmp and sequential (scaffold/runtime.h). */
typedef struct sf_handle_s *sf_handle;

typedef struct sf_tensor {
  char name[48];   /* for traces: "enc2.pre_a" etc. (slab k gets coordinate k) */
  int D, H, W, C;  /* NDHWC extents; C = 1 for label volumes */
  size_t elemsize; /* 4 for float, 2 for uint16 labels, 1 for uint8 argmax */
  void *data;      /* D*H*W*C*elemsize bytes, zeroed at creation; distributed: the owned slabs only,
                    * planes [d0[k_lo], d0[k_hi]) */
  int nslabs;
  int d0[SF_MAX_SLABS + 1]; /* slab k covers planes [d0[k], d0[k+1]) */
  sf_handle slab[SF_MAX_SLABS];
  /* ---- spatially distributed tensors (sf_tensor_init_dist); a single process: k_lo = 0,
   * k_hi = nslabs and no planes ---- */
  int k_lo, k_hi;                   /* slabs owned by this rank */
  size_t data_bytes;                /* bytes allocated at data */
  sf_handle plane_lo[SF_MAX_SLABS]; /* at a shard boundary k: copy of slab k-1's last plane (k's lo halo) */
  sf_handle plane_hi[SF_MAX_SLABS]; /* at a shard boundary k+1: copy of slab k+1's first plane (k's hi halo) */
  void *plane_mem;                  /* the owned planes' memory */
  size_t plane_bytes;
  int alias;                        /* 1: shares another tensor's handles and memory (sf_tensor_alias) */
} sf_tensor;

/* Ownership of a tensor's slabs over StarPU-MPI ranks (scaffold/dist.h). Slabs are registered with
 * their owner and the tag (SF_TAG_SLAB, scope, obj, k); memory is allocated for the owned slabs
 * only. With halo != 0, every boundary between slabs of different owners gets two one-plane
 * handles (tags SF_TAG_HALO), which sf_tensor_lo/hi return instead of the neighbouring slab and
 * sf_halo_exchange (scaffold/comm.h) fills: StarPU-MPI then moves one plane per boundary and
 * direction. */
typedef struct sf_tensor_dist {
  const int *owner; /* world rank of slab k, k = 0..nslabs-1; the owned slabs must be contiguous */
  int me;           /* this rank */
  int scope, obj;   /* tag scope (the replica) and object (unique per tensor in the replica) */
  int halo;
} sf_tensor_dist;

/* Slab boundaries for a level of edge D = coarse_edge * scale: d0[k] = floor(k*coarse_edge/n) * scale,
 * k = 0..n. Requires 1 <= n <= min(coarse_edge, SF_MAX_SLABS). */
void sf_slab_bounds(int *d0, int n, int coarse_edge, int scale);

/* Allocates, zeroes and registers a tensor with the given slab boundaries (d0[0] = 0, d0[n] = D).
 * StarPU must be running. Dies on allocation failure. */
void sf_tensor_init(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize, int nslabs,
                    const int *d0);
/* The same, distributed over ranks (see sf_tensor_dist). */
void sf_tensor_init_dist(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize, int nslabs,
                         const int *d0, const sf_tensor_dist *dist);
/* Unregisters every slab (waiting for its tasks; the data ends up in t->data) and frees the memory. */
void sf_tensor_destroy(sf_tensor *t);
/* dst becomes another name for src: the same handles and memory, so StarPU orders every access to
 * either through the same data dependencies (reuse of a buffer whose contents are dead). Destroying
 * the alias does nothing; src must outlive it. src must have the same shape. */
void sf_tensor_alias(sf_tensor *dst, const sf_tensor *src);
/* Voxels (D*H*W positions) of slab k, and of the whole tensor. */
size_t sf_tensor_slab_voxels(const sf_tensor *t, int k);
size_t sf_tensor_voxels(const sf_tensor *t);
/* Slab k-1 / k+1, or NULL at the volume's faces (the halo convention of the conv codelets); at a
 * boundary between shards, the halo-plane handle instead. */
sf_handle sf_tensor_lo(const sf_tensor *t, int k);
sf_handle sf_tensor_hi(const sf_tensor *t, int k);
/* Acquire every (owned) slab in main memory (write != 0: read-write), so t->data may be read (or written)
 * by the host; release hands them back to the task graph. */
void sf_tensor_acquire(sf_tensor *t, int write);
void sf_tensor_release(sf_tensor *t);

/* A vector of n elements of elemsize bytes on caller-owned memory (parameters, gradients, partial
 * sums); name is kept by pointer and must outlive the handle. */
sf_handle sf_vector_register(void *ptr, size_t n, size_t elemsize, const char *name);
/* A vector whose data lives on another rank (no memory here; StarPU allocates on arrival). */
sf_handle sf_vector_register_remote(size_t n, size_t elemsize, const char *name);
void sf_handle_unregister(sf_handle h);
/* A vector handle split into 2 contiguous parts of len0 and (n - len0) elements (StarPU's
 * asynchronous partitioning): after sf_vector_split_submit only the parts may be used by tasks,
 * after sf_vector_unsplit_submit only the whole; StarPU orders both through the data dependencies.
 * sf_vector_split_clean before unregistering the whole. */
void sf_vector_split_plan(sf_handle h, size_t len0, sf_handle parts[2]);
void sf_vector_split_submit(sf_handle h, sf_handle parts[2]);
void sf_vector_unsplit_submit(sf_handle h, sf_handle parts[2]);
void sf_vector_split_clean(sf_handle h, sf_handle parts[2]);
void sf_handle_acquire(sf_handle h, int write);
void sf_handle_release(sf_handle h);
/* Shapes, for the insert helpers (declared flops, size checks): a block's nx, ny, nz in elements, a
 * vector's length, whether a handle is a block, and its size in bytes. */
size_t sf_block_nx(sf_handle h);
size_t sf_block_ny(sf_handle h);
size_t sf_block_nz(sf_handle h);
size_t sf_vector_nx(sf_handle h);
int sf_handle_is_block(sf_handle h);
size_t sf_handle_bytes(sf_handle h);

/* Memory for data handed to StarPU (pinned where a GPU is present), zeroed; free with sf_data_free. */
void *sf_data_alloc(size_t bytes, const char *what);
void sf_data_free(void *p, size_t bytes);

#endif
