/* Block-split activation tensors and small vector handles (scaffold/tensor.h): one allocation per
 * tensor, one 3D block handle per block of its grid (depth slabs x row blocks x column blocks), each
 * block contiguous in it: StarPU handles, or the host executors' records under runtime openmp /
 * sequential (host_data.c). A spatially distributed tensor allocates its owned blocks only, registers
 * every block with its StarPU-MPI owner, and adds one-layer halo pieces at the boundaries between
 * owners (filled by the halo exchange of src/comm/halo.c). */
#include "scaffold/tensor.h"

#include <starpu.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/runtime.h"

#define H_(h) ((starpu_data_handle_t)(h))
#define HOST (sf_runtime_which() != SF_RT_STARPU)

void sf_slab_bounds(int *d0, int n, int coarse_edge, int scale)
{
  SF_ASSERT(n >= 1 && n <= coarse_edge && n <= SF_MAX_SLABS && scale >= 1);
  for (int k = 0; k <= n; k++) d0[k] = (int)((long)k * coarse_edge / n) * scale;
}

/* Under StarPU's SimGrid mode no codelet touches the data: every allocation is folded onto one physical
 * page (StarPU's simulation folding) and left unwritten, so a simulation of many ranks, each with its
 * own tensors, fits in the memory of one machine. */
#ifdef STARPU_SIMGRID
#define SF_DATA_FLAGS (STARPU_MALLOC_PINNED | STARPU_MALLOC_SIMULATION_FOLDED)
#define SF_DATA_ZERO(p, bytes) ((void)(p), (void)(bytes))
#else
#define SF_DATA_FLAGS STARPU_MALLOC_PINNED
#define SF_DATA_ZERO(p, bytes) memset((p), 0, (bytes))
#endif

void *sf_data_alloc(size_t bytes, const char *what)
{
  void *p = NULL;
  if (bytes == 0) bytes = 64;
  if (HOST) {
    if (posix_memalign(&p, SF_DATA_ALIGN, bytes) != 0 || !p) sf_die(SF_EXIT_FAILURE, "out of memory allocating %zu bytes for %s", bytes, what);
    memset(p, 0, bytes);
    return p;
  }
  if (starpu_malloc_flags(&p, bytes, SF_DATA_FLAGS) != 0 || !p)
    sf_die(SF_EXIT_FAILURE, "out of memory allocating %zu bytes for %s", bytes, what);
  SF_DATA_ZERO(p, bytes);
  return p;
}

void sf_data_free(void *p, size_t bytes)
{
  if (!p) return;
  if (bytes == 0) bytes = 64;
  if (HOST) {
    free(p);
    return;
  }
  starpu_free_flags(p, bytes, SF_DATA_FLAGS);
}

static size_t tensor_bytes(const sf_tensor *t)
{
  return (size_t)t->D * t->H * t->W * t->C * t->elemsize;
}

/* A contiguous block of nd planes of H x W x C elements (or an unallocated one on another rank). */
static void block_register(starpu_data_handle_t *h, void *p, int W, int H, int C, int nd, size_t elemsize)
{
  const size_t plane = (size_t)H * W * C; /* elements per depth plane */
  starpu_block_data_register(h, p ? STARPU_MAIN_RAM : -1, (uintptr_t)p, (uint32_t)((size_t)W * C), (uint32_t)plane,
                             (uint32_t)((size_t)W * C), (uint32_t)H, (uint32_t)nd, elemsize);
}

/* Block k's grid coordinates. */
static void block_coords(const sf_tensor *t, int k, int c[3])
{
  c[2] = k % t->nw;
  c[1] = (k / t->nw) % t->nh;
  c[0] = k / (t->nw * t->nh);
}

void sf_tensor_block_box(const sf_tensor *t, int k, int lo[3], int n[3])
{
  int c[3];
  block_coords(t, k, c);
  const int *b[3] = {t->d0, t->h0, t->w0};
  for (int a = 0; a < 3; a++) {
    lo[a] = b[a][c[a]];
    n[a] = b[a][c[a] + 1] - lo[a];
  }
}

int sf_tensor_owns(const sf_tensor *t, int k) { return t->off[k] != (size_t)-1; }

int sf_tensor_neighbour(const sf_tensor *t, int k, int a, int s)
{
  int c[3], ext[3] = {t->nd, t->nh, t->nw};
  block_coords(t, k, c);
  c[a] += s ? 1 : -1;
  if (c[a] < 0 || c[a] >= ext[a]) return -1;
  return (c[0] * t->nh + c[1]) * t->nw + c[2];
}

static size_t block_bytes(const sf_tensor *t, int k)
{
  return sf_tensor_slab_voxels(t, k) * (size_t)t->C * t->elemsize;
}

/* The halo pieces at the boundaries between owners (see sf_tensor in tensor.h): memory for the ones
 * this rank writes, i.e. the copies of its own blocks' layers. */
static void register_halos(sf_tensor *t, const sf_tensor_dist *dist)
{
  size_t bytes = 0;
  for (int pass = 0; pass < 2; pass++) {
    char *pm = t->plane_mem;
    for (int a = 0; a < 3; a++)
      for (int k = 0; k < t->nslabs && ((dist->halo >> a) & 1); k++) {
        int n = sf_tensor_neighbour(t, k, a, SF_SIDE_HI);
        if (n < 0 || dist->owner[k] == dist->owner[n]) continue;
        int lo[3], ext[3];
        sf_tensor_block_box(t, k, lo, ext); /* k and n have the same extent across axis a */
        ext[a] = 1;
        size_t piece = (size_t)ext[0] * ext[1] * ext[2] * t->C * t->elemsize;
        if (pass == 0) {
          bytes += piece * ((dist->owner[k] == dist->me) + (dist->owner[n] == dist->me));
          continue;
        }
        starpu_data_handle_t lo_of_n, hi_of_k; /* k's last layer, by k's owner; n's first, by n's owner */
        block_register(&lo_of_n, dist->owner[k] == dist->me ? pm : NULL, ext[2], ext[1], t->C, ext[0], t->elemsize);
        if (dist->owner[k] == dist->me) pm += piece;
        block_register(&hi_of_k, dist->owner[n] == dist->me ? pm : NULL, ext[2], ext[1], t->C, ext[0], t->elemsize);
        if (dist->owner[n] == dist->me) pm += piece;
        starpu_data_set_name(lo_of_n, "halo");
        starpu_data_set_name(hi_of_k, "halo");
        sf_dist_register((sf_handle)lo_of_n,
                         sf_dist_tag(SF_TAG_HALO, dist->scope, dist->obj, (a * 2 + SF_SIDE_LO) * SF_MAX_SLABS + n),
                         dist->owner[k]);
        sf_dist_register((sf_handle)hi_of_k,
                         sf_dist_tag(SF_TAG_HALO, dist->scope, dist->obj, (a * 2 + SF_SIDE_HI) * SF_MAX_SLABS + k),
                         dist->owner[n]);
        t->halo[a][SF_SIDE_LO][n] = (sf_handle)lo_of_n;
        t->halo[a][SF_SIDE_HI][k] = (sf_handle)hi_of_k;
      }
    if (pass == 0) {
      t->plane_bytes = bytes;
      t->plane_mem = bytes ? sf_data_alloc(bytes, "halo pieces") : NULL;
    }
  }
}

static void tensor_init(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize,
                        const sf_tensor_grid *grid, const sf_tensor_dist *dist)
{
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->D = D;
  t->H = H;
  t->W = W;
  t->C = C;
  t->elemsize = elemsize;
  t->nd = grid->nd;
  t->nh = grid->nh;
  t->nw = grid->nw;
  t->nslabs = t->nd * t->nh * t->nw;
  SF_ASSERT(t->nd >= 1 && t->nh >= 1 && t->nw >= 1 && t->nh <= SF_MAX_HW && t->nw <= SF_MAX_HW &&
            t->nslabs <= SF_MAX_SLABS);
  SF_ASSERT(grid->d0[0] == 0 && grid->d0[t->nd] == D && grid->h0[0] == 0 && grid->h0[t->nh] == H &&
            grid->w0[0] == 0 && grid->w0[t->nw] == W);
  memcpy(t->d0, grid->d0, (size_t)(t->nd + 1) * sizeof(int));
  memcpy(t->h0, grid->h0, (size_t)(t->nh + 1) * sizeof(int));
  memcpy(t->w0, grid->w0, (size_t)(t->nw + 1) * sizeof(int));
  for (int k = 0; k < t->nslabs; k++) { /* the owned blocks, packed in block order */
    t->off[k] = (size_t)-1;
    if (dist && dist->owner[k] != dist->me) continue;
    t->off[k] = t->data_bytes;
    t->data_bytes += block_bytes(t, k);
  }
  SF_ASSERT(dist || t->data_bytes == tensor_bytes(t));
  t->data = t->data_bytes ? sf_data_alloc(t->data_bytes, t->name) : NULL;
  for (int k = 0; k < t->nslabs; k++) {
    int lo[3], n[3];
    sf_tensor_block_box(t, k, lo, n);
    SF_ASSERT(n[0] >= 1 && n[1] >= 1 && n[2] >= 1);
    void *p = sf_tensor_owns(t, k) ? (char *)t->data + t->off[k] : NULL;
    if (HOST) { /* one process (sf_runtime_check_config): every block is owned */
      SF_ASSERT(!dist);
      size_t nx = (size_t)n[2] * C;
      t->slab[k] = sf_host_block_register(p, nx, n[1], n[0], nx, nx * n[1], elemsize, t->name);
      continue;
    }
    starpu_data_handle_t h;
    block_register(&h, p, n[2], n[1], C, n[0], elemsize);
    starpu_data_set_name(h, t->name);
    starpu_data_set_coordinates(h, 1, k);
    if (dist) sf_dist_register((sf_handle)h, sf_dist_tag(SF_TAG_SLAB, dist->scope, dist->obj, k), dist->owner[k]);
    t->slab[k] = (sf_handle)h;
  }
  if (dist && dist->halo) register_halos(t, dist);
}

/* Depth slabs only: one block across every row and column. */
static sf_tensor_grid slab_grid(int nslabs, const int *d0, int H, int W, int hw[4])
{
  hw[0] = 0;
  hw[1] = H;
  hw[2] = 0;
  hw[3] = W;
  return (sf_tensor_grid){.nd = nslabs, .nh = 1, .nw = 1, .d0 = d0, .h0 = hw, .w0 = hw + 2};
}

void sf_tensor_init(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize, int nslabs,
                    const int *d0)
{
  int hw[4];
  sf_tensor_grid g = slab_grid(nslabs, d0, H, W, hw);
  tensor_init(t, name, D, H, W, C, elemsize, &g, NULL);
}

void sf_tensor_init_dist(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize, int nslabs,
                         const int *d0, const sf_tensor_dist *dist)
{
  SF_ASSERT(dist && dist->owner);
  int hw[4];
  sf_tensor_grid g = slab_grid(nslabs, d0, H, W, hw);
  tensor_init(t, name, D, H, W, C, elemsize, &g, dist);
}

void sf_tensor_init_grid(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize,
                         const sf_tensor_grid *grid, const sf_tensor_dist *dist)
{
  SF_ASSERT(!dist || dist->owner);
  tensor_init(t, name, D, H, W, C, elemsize, grid, dist);
}

void sf_tensor_alias(sf_tensor *dst, const sf_tensor *src)
{
  *dst = *src;
  dst->alias = 1;
}

void sf_tensor_destroy(sf_tensor *t)
{
  if (t->alias) {
    memset(t, 0, sizeof *t);
    return;
  }
  if (!t->slab[0]) return;
  for (int k = 0; k < t->nslabs; k++) {
    if (HOST) {
      sf_host_unregister(t->slab[k]);
      t->slab[k] = NULL;
      continue;
    }
    if (t->slab[k]) starpu_data_unregister(H_(t->slab[k]));
    t->slab[k] = NULL;
    for (int a = 0; a < 3; a++)
      for (int s = 0; s < 2; s++)
        if (t->halo[a][s][k]) {
          starpu_data_unregister(H_(t->halo[a][s][k]));
          t->halo[a][s][k] = NULL;
        }
  }
  sf_data_free(t->data, t->data_bytes);
  sf_data_free(t->plane_mem, t->plane_bytes);
  t->data = t->plane_mem = NULL;
}

size_t sf_tensor_slab_voxels(const sf_tensor *t, int k)
{
  int lo[3], n[3];
  sf_tensor_block_box(t, k, lo, n);
  return (size_t)n[0] * n[1] * n[2];
}

size_t sf_tensor_voxels(const sf_tensor *t) { return (size_t)t->D * t->H * t->W; }

sf_handle sf_tensor_nb(const sf_tensor *t, int k, int axis, int side)
{
  int n = sf_tensor_neighbour(t, k, axis, side);
  if (n < 0) return NULL;
  return t->halo[axis][side][k] ? t->halo[axis][side][k] : t->slab[n];
}

sf_handle sf_tensor_lo(const sf_tensor *t, int k) { return sf_tensor_nb(t, k, SF_AXIS_D, SF_SIDE_LO); }
sf_handle sf_tensor_hi(const sf_tensor *t, int k) { return sf_tensor_nb(t, k, SF_AXIS_D, SF_SIDE_HI); }

void sf_tensor_gather_box(const sf_tensor *t, const int lo[3], const int n[3], void *box)
{
  const size_t vb = (size_t)t->C * t->elemsize; /* bytes per voxel */
  for (int k = 0; k < t->nslabs; k++) {
    int bl[3], bn[3];
    sf_tensor_block_box(t, k, bl, bn);
    int inside = 1;
    for (int a = 0; a < 3; a++) inside &= bl[a] >= lo[a] && bl[a] + bn[a] <= lo[a] + n[a];
    if (!inside) continue;
    SF_ASSERT(sf_tensor_owns(t, k));
    const char *src = (const char *)t->data + t->off[k];
    for (int z = 0; z < bn[0]; z++)
      for (int y = 0; y < bn[1]; y++, src += (size_t)bn[2] * vb) {
        size_t at = (((size_t)(bl[0] - lo[0] + z) * n[1] + (bl[1] - lo[1] + y)) * n[2] + (bl[2] - lo[2])) * vb;
        memcpy((char *)box + at, src, (size_t)bn[2] * vb);
      }
  }
}

void sf_tensor_acquire(sf_tensor *t, int write)
{
  for (int k = 0; k < t->nslabs; k++)
    if (sf_tensor_owns(t, k)) sf_handle_acquire(t->slab[k], write);
}

void sf_tensor_release(sf_tensor *t)
{
  for (int k = 0; k < t->nslabs; k++)
    if (sf_tensor_owns(t, k)) sf_handle_release(t->slab[k]);
}

sf_handle sf_vector_register(void *ptr, size_t n, size_t elemsize, const char *name)
{
  if (HOST) return sf_host_vector_register(ptr, n, elemsize, name);
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)ptr, (uint32_t)n, elemsize);
  if (name) starpu_data_set_name(h, name);
  return (sf_handle)h;
}

sf_handle sf_vector_register_remote(size_t n, size_t elemsize, const char *name)
{
  if (HOST) SF_ABORT("%s: remote data under runtime %s (one process only)", name ? name : "vector",
                     sf_runtime_kind_name(sf_runtime_which()));
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, -1, 0, (uint32_t)n, elemsize);
  if (name) starpu_data_set_name(h, name);
  return (sf_handle)h;
}

void sf_vector_split_plan(sf_handle h, size_t len0, sf_handle parts[2])
{
  if (HOST) {
    sf_host_split_plan(h, len0, parts);
    return;
  }
  uint32_t lens[2] = {(uint32_t)len0, (uint32_t)(starpu_vector_get_nx(H_(h)) - len0)};
  struct starpu_data_filter f = {.filter_func = starpu_vector_filter_list, .nchildren = 2, .filter_arg_ptr = lens};
  starpu_data_handle_t c[2];
  starpu_data_partition_plan(H_(h), &f, c); /* the lengths are copied into the children's interfaces */
  parts[0] = (sf_handle)c[0];
  parts[1] = (sf_handle)c[1];
}

void sf_vector_split_submit(sf_handle h, sf_handle parts[2])
{
  if (HOST) {
    sf_host_split_order(h, parts);
    return;
  }
  starpu_data_handle_t c[2] = {H_(parts[0]), H_(parts[1])};
  starpu_data_partition_submit(H_(h), 2, c);
}

void sf_vector_unsplit_submit(sf_handle h, sf_handle parts[2])
{
  if (HOST) {
    sf_host_split_order(h, parts);
    return;
  }
  starpu_data_handle_t c[2] = {H_(parts[0]), H_(parts[1])};
  starpu_data_unpartition_submit(H_(h), 2, c, STARPU_MAIN_RAM);
}

void sf_vector_split_clean(sf_handle h, sf_handle parts[2])
{
  if (HOST) {
    sf_host_unregister(parts[0]);
    sf_host_unregister(parts[1]);
    parts[0] = parts[1] = NULL;
    return;
  }
  starpu_data_handle_t c[2] = {H_(parts[0]), H_(parts[1])};
  starpu_data_partition_clean(H_(h), 2, c);
}

void sf_handle_unregister(sf_handle h)
{
  if (HOST) sf_host_unregister(h);
  else if (h) starpu_data_unregister(H_(h));
}

void sf_handle_acquire(sf_handle h, int write)
{
  if (HOST) { /* the memory is the handle's: only the tasks submitted so far must have run */
    sf_runtime_wait_all();
    return;
  }
  int rc = starpu_data_acquire(H_(h), write ? STARPU_RW : STARPU_R);
  if (rc != 0) SF_ABORT("starpu_data_acquire failed (%d)", rc);
}

void sf_handle_release(sf_handle h)
{
  if (!HOST) starpu_data_release(H_(h));
}

size_t sf_block_nx(sf_handle h) { return HOST ? SF_HD(h)->iface.blk.nx : starpu_block_get_nx(H_(h)); }
size_t sf_block_ny(sf_handle h) { return HOST ? SF_HD(h)->iface.blk.ny : starpu_block_get_ny(H_(h)); }
size_t sf_block_nz(sf_handle h) { return HOST ? SF_HD(h)->iface.blk.nz : starpu_block_get_nz(H_(h)); }
size_t sf_vector_nx(sf_handle h) { return HOST ? SF_HD(h)->iface.vec.nx : starpu_vector_get_nx(H_(h)); }

int sf_handle_is_block(sf_handle h)
{
  return HOST ? SF_HD(h)->is_block : starpu_data_get_interface_id(H_(h)) == STARPU_BLOCK_INTERFACE_ID;
}

size_t sf_handle_bytes(sf_handle h)
{
  if (!HOST) return starpu_data_get_size(H_(h));
  const sf_host_data *d = SF_HD(h);
  return d->is_block ? (size_t)d->iface.blk.nx * d->iface.blk.ny * d->iface.blk.nz * d->iface.blk.elemsize
                     : (size_t)d->iface.vec.nx * d->iface.vec.elemsize;
}
