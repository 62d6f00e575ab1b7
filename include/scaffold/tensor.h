/* Activation tensors as StarPU data (docs/architecture.md §5). A tensor is D x H x W x C (NDHWC, batch 1)
 * split into a grid of blocks: nd depth slabs x nh row blocks x nw column blocks (nh = nw = 1: depth
 * slabs only, the usual tiling). Block k = (kd * nh + kh) * nw + kw is its own StarPU 3D block handle
 * registered as block(nx = w*C, ny = h, nz = depth) on its own contiguous part of ONE allocation (the
 * blocks follow each other in block order), so a slab and its halo planes are contiguous and every
 * kernel sees a small NDHWC volume. Block boundaries are chosen at the coarsest (bottleneck) level and
 * scaled by 2 per level towards the input, so max-pool/up-conv block k maps exactly onto block k of the
 * next level. Callers see only opaque handles (sf_handle); the StarPU types stay in codelets/ and
 * here. */
#ifndef SF_TENSOR_H
#define SF_TENSOR_H

#include <stddef.h>

#define SF_MAX_SLABS 64 /* blocks of a tensor (all of its grid) */
#define SF_MAX_HW 16    /* row blocks, column blocks */

/* An opaque data handle: a starpu_data_handle_t under runtime starpu, the host executor's own
 * record (src/runtime/host_data.c) under openmp and sequential (scaffold/runtime.h). */
typedef struct sf_handle_s *sf_handle;

/* Axes of the block grid, and the sides of a block along one. */
enum { SF_AXIS_D = 0, SF_AXIS_H = 1, SF_AXIS_W = 2 };
enum { SF_SIDE_LO = 0, SF_SIDE_HI = 1 };

typedef struct sf_tensor {
  char name[48];   /* for traces: "enc2.pre_a" etc. (block k gets coordinate k) */
  int D, H, W, C;  /* NDHWC extents; C = 1 for label volumes */
  size_t elemsize; /* 4 for float, 2 for uint16 labels, 1 for uint8 argmax */
  void *data;      /* the owned blocks (all in a single process), each contiguous, in block order;
                    * zeroed at creation. With nh = nw = 1 and every slab owned: the NDHWC volume */
  int nslabs;      /* blocks in all: nd * nh * nw (the name is from when there were slabs only) */
  int nd, nh, nw;  /* blocks along depth, rows, columns */
  int d0[SF_MAX_SLABS + 1]; /* depth slab kd covers planes [d0[kd], d0[kd+1]) */
  int h0[SF_MAX_HW + 1], w0[SF_MAX_HW + 1]; /* rows [h0[kh], h0[kh+1]), columns [w0[kw], w0[kw+1]) */
  sf_handle slab[SF_MAX_SLABS];             /* block k */
  size_t off[SF_MAX_SLABS];                 /* bytes from data to owned block k; (size_t)-1: not owned */
  size_t data_bytes;                        /* bytes allocated at data */
  /* ---- spatially distributed tensors (sf_tensor_init_dist with halo): at a boundary between blocks
   * of different owners along axis a, halo[a][SF_SIDE_LO][k] is a copy of the lower neighbour's last
   * layer (block k's lo halo, made by that neighbour's owner) and halo[a][SF_SIDE_HI][k] a copy of the
   * upper neighbour's first layer: one plane, row or column of the block's extent crosses ---- */
  sf_handle halo[3][2][SF_MAX_SLABS];
  void *plane_mem; /* the owned halo pieces' memory */
  size_t plane_bytes;
  int alias; /* 1: shares another tensor's handles and memory (sf_tensor_alias) */
} sf_tensor;

/* The block grid of a tensor: nd x nh x nw blocks with the given boundaries (nd + 1, nh + 1, nw + 1
 * entries, from 0 to the extent). */
typedef struct sf_tensor_grid {
  int nd, nh, nw;
  const int *d0, *h0, *w0;
} sf_tensor_grid;

/* Ownership of a tensor's blocks over StarPU-MPI ranks (scaffold/dist.h). Blocks are registered with
 * their owner and the tag (SF_TAG_SLAB, scope, obj, k); memory is allocated for the owned blocks
 * only. halo is a mask of axes (bit SF_AXIS_D, _H, _W; 1 = depth only): along those, every boundary
 * between blocks of different owners gets two halo pieces
 * (tags SF_TAG_HALO; sf_tensor_nb returns them instead of the neighbouring block) that
 * sf_halo_exchange (scaffold/comm.h) fills: StarPU-MPI then moves one layer per boundary and
 * direction. */
typedef struct sf_tensor_dist {
  const int *owner; /* world rank of block k, k = 0..nslabs-1 */
  int me;           /* this rank */
  int scope, obj;   /* tag scope (the replica) and object (unique per tensor in the replica) */
  int halo; /* axis mask, see above */
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
/* The same with a block grid (dist may be NULL: one process). */
void sf_tensor_init_grid(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize,
                         const sf_tensor_grid *grid, const sf_tensor_dist *dist);
/* Unregisters every slab (waiting for its tasks; the data ends up in t->data) and frees the memory. */
void sf_tensor_destroy(sf_tensor *t);
/* dst becomes another name for src: the same handles and memory, so StarPU orders every access to
 * either through the same data dependencies (reuse of a buffer whose contents are dead). Destroying
 * the alias does nothing; src must outlive it. src must have the same shape. */
void sf_tensor_alias(sf_tensor *dst, const sf_tensor *src);
/* Voxels (D*H*W positions) of block k, and of the whole tensor. */
size_t sf_tensor_slab_voxels(const sf_tensor *t, int k);
size_t sf_tensor_voxels(const sf_tensor *t);
/* Block k's first voxel (lo[axis]) and extents (n[axis]), axes SF_AXIS_D, _H, _W. */
void sf_tensor_block_box(const sf_tensor *t, int k, int lo[3], int n[3]);
/* Whether this rank holds block k's memory (always in a single process). */
int sf_tensor_owns(const sf_tensor *t, int k);
/* The block next to k along axis on side (SF_SIDE_LO: below), NULL at the volume's faces; at a
 * boundary between owners, the halo piece instead (the halo convention of the conv and pad
 * codelets: a neighbour is passed whole, or as the one layer of it that matters). */
sf_handle sf_tensor_nb(const sf_tensor *t, int k, int axis, int side);
/* The index of that neighbouring block, or -1 at the volume's faces. */
int sf_tensor_neighbour(const sf_tensor *t, int k, int axis, int side);
/* The depth neighbours: sf_tensor_nb(t, k, SF_AXIS_D, SF_SIDE_LO / SF_SIDE_HI). */
sf_handle sf_tensor_lo(const sf_tensor *t, int k);
sf_handle sf_tensor_hi(const sf_tensor *t, int k);
/* Copies between the block layout of t->data (acquired) and a plain NDHWC box of the volume:
 * planes [lo[0], lo[0]+n[0]), rows [lo[1], ...), columns [lo[2], ...), made of whole owned blocks. */
void sf_tensor_gather_box(const sf_tensor *t, const int lo[3], const int n[3], void *box);
/* Acquire every (owned) block in main memory (write != 0: read-write), so t->data may be read (or written)
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

/* The alignment of every tensor's buffer (a cache line, so a kernel's 64-byte rows never straddle two) */
#define SF_DATA_ALIGN 64

/* Memory for data handed to StarPU (pinned where a GPU is present), zeroed; free with sf_data_free. */
void *sf_data_alloc(size_t bytes, const char *what);
void sf_data_free(void *p, size_t bytes);

#endif
