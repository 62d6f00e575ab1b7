/* Slab-split activation tensors and small vector handles (scaffold/tensor.h): one allocation per
 * tensor, one 3D block handle per depth slab, registered on slices of it: StarPU handles, or the host
 * executors' records under runtime openmp / sequential (host_data.c). A
 * spatially distributed tensor allocates its owned slabs only, registers every slab with its
 * StarPU-MPI owner, and adds one-plane halo handles at the boundaries between owners (filled by the
 * halo exchange of src/comm/halo.c). */
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

void *sf_data_alloc(size_t bytes, const char *what)
{
  void *p = NULL;
  if (bytes == 0) bytes = 64;
  if (HOST) {
    if (posix_memalign(&p, 64, bytes) != 0 || !p) sf_die(SF_EXIT_FAILURE, "out of memory allocating %zu bytes for %s", bytes, what);
    memset(p, 0, bytes);
    return p;
  }
  if (starpu_malloc_flags(&p, bytes, STARPU_MALLOC_PINNED) != 0 || !p)
    sf_die(SF_EXIT_FAILURE, "out of memory allocating %zu bytes for %s", bytes, what);
  memset(p, 0, bytes);
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
  starpu_free_flags(p, bytes, STARPU_MALLOC_PINNED);
}

static size_t tensor_bytes(const sf_tensor *t)
{
  return (size_t)t->D * t->H * t->W * t->C * t->elemsize;
}

static void block_register(starpu_data_handle_t *h, void *p, int W, int H, int C, int nd, size_t elemsize)
{
  const size_t plane = (size_t)H * W * C; /* elements per depth plane */
  starpu_block_data_register(h, p ? STARPU_MAIN_RAM : -1, (uintptr_t)p, (uint32_t)((size_t)W * C), (uint32_t)plane,
                             (uint32_t)((size_t)W * C), (uint32_t)H, (uint32_t)nd, elemsize);
}

static void tensor_init(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize, int nslabs,
                        const int *d0, const sf_tensor_dist *dist)
{
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->D = D;
  t->H = H;
  t->W = W;
  t->C = C;
  t->elemsize = elemsize;
  t->nslabs = nslabs;
  SF_ASSERT(nslabs >= 1 && nslabs <= SF_MAX_SLABS && d0[0] == 0 && d0[nslabs] == D);
  memcpy(t->d0, d0, (size_t)(nslabs + 1) * sizeof(int));
  t->k_lo = 0;
  t->k_hi = nslabs;
  if (dist) { /* the owned slabs: one contiguous range */
    t->k_lo = nslabs;
    t->k_hi = 0;
    for (int k = 0; k < nslabs; k++)
      if (dist->owner[k] == dist->me) {
        if (k < t->k_lo) t->k_lo = k;
        t->k_hi = k + 1;
      }
    for (int k = t->k_lo; k < t->k_hi; k++) SF_ASSERT(dist->owner[k] == dist->me);
    if (t->k_hi < t->k_lo) t->k_lo = t->k_hi = 0;
  }
  const size_t plane = (size_t)H * W * C; /* elements per depth plane */
  int p0 = d0[t->k_lo], p1 = d0[t->k_hi];
  t->data_bytes = (size_t)(p1 - p0) * plane * elemsize;
  SF_ASSERT(dist || t->data_bytes == tensor_bytes(t));
  t->data = t->data_bytes ? sf_data_alloc(t->data_bytes, t->name) : NULL;
  for (int k = 0; k < nslabs; k++) {
    int nd = d0[k + 1] - d0[k];
    SF_ASSERT(nd >= 1);
    if (HOST) { /* one process (sf_runtime_check_config): every slab is owned */
      SF_ASSERT(!dist);
      t->slab[k] = sf_host_block_register((char *)t->data + (size_t)d0[k] * plane * elemsize, (size_t)W * C, H, nd,
                                          (size_t)W * C, plane, elemsize, t->name);
      continue;
    }
    starpu_data_handle_t h;
    int own = k >= t->k_lo && k < t->k_hi;
    block_register(&h, own ? (char *)t->data + (size_t)(d0[k] - p0) * plane * elemsize : NULL, W, H, C, nd, elemsize);
    starpu_data_set_name(h, t->name);
    starpu_data_set_coordinates(h, 1, k);
    if (dist) sf_dist_register((sf_handle)h, sf_dist_tag(SF_TAG_SLAB, dist->scope, dist->obj, k), dist->owner[k]);
    t->slab[k] = (sf_handle)h;
  }
  if (!dist || !dist->halo) return;
  /* halo planes at the boundaries between owners: memory for the ones this rank writes */
  int nown = 0;
  for (int k = 1; k < nslabs; k++)
    if (dist->owner[k - 1] != dist->owner[k]) nown += (dist->owner[k - 1] == dist->me) + (dist->owner[k] == dist->me);
  t->plane_bytes = (size_t)nown * plane * elemsize;
  t->plane_mem = nown ? sf_data_alloc(t->plane_bytes, "halo planes") : NULL;
  char *pm = t->plane_mem;
  for (int k = 1; k < nslabs; k++) {
    int a = dist->owner[k - 1], b = dist->owner[k];
    if (a == b) continue;
    starpu_data_handle_t lo, hi;
    block_register(&lo, a == dist->me ? pm : NULL, W, H, C, 1, elemsize); /* slab k-1's last plane, by its owner */
    if (a == dist->me) pm += plane * elemsize;
    block_register(&hi, b == dist->me ? pm : NULL, W, H, C, 1, elemsize); /* slab k's first plane, by its owner */
    if (b == dist->me) pm += plane * elemsize;
    starpu_data_set_name(lo, "halo");
    starpu_data_set_name(hi, "halo");
    sf_dist_register((sf_handle)lo, sf_dist_tag(SF_TAG_HALO, dist->scope, dist->obj, 2 * k), a);
    sf_dist_register((sf_handle)hi, sf_dist_tag(SF_TAG_HALO, dist->scope, dist->obj, 2 * (k - 1) + 1), b);
    t->plane_lo[k] = (sf_handle)lo;
    t->plane_hi[k - 1] = (sf_handle)hi;
  }
}

void sf_tensor_init(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize, int nslabs,
                    const int *d0)
{
  tensor_init(t, name, D, H, W, C, elemsize, nslabs, d0, NULL);
}

void sf_tensor_init_dist(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize, int nslabs,
                         const int *d0, const sf_tensor_dist *dist)
{
  SF_ASSERT(dist && dist->owner);
  tensor_init(t, name, D, H, W, C, elemsize, nslabs, d0, dist);
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
    if (t->plane_lo[k]) starpu_data_unregister(H_(t->plane_lo[k]));
    if (t->plane_hi[k]) starpu_data_unregister(H_(t->plane_hi[k]));
    t->slab[k] = t->plane_lo[k] = t->plane_hi[k] = NULL;
  }
  sf_data_free(t->data, t->data_bytes);
  sf_data_free(t->plane_mem, t->plane_bytes);
  t->data = t->plane_mem = NULL;
}

size_t sf_tensor_slab_voxels(const sf_tensor *t, int k)
{
  return (size_t)(t->d0[k + 1] - t->d0[k]) * t->H * t->W;
}

size_t sf_tensor_voxels(const sf_tensor *t) { return (size_t)t->D * t->H * t->W; }

sf_handle sf_tensor_lo(const sf_tensor *t, int k)
{
  if (k <= 0) return NULL;
  return t->plane_lo[k] ? t->plane_lo[k] : t->slab[k - 1];
}

sf_handle sf_tensor_hi(const sf_tensor *t, int k)
{
  if (k + 1 >= t->nslabs) return NULL;
  return t->plane_hi[k] ? t->plane_hi[k] : t->slab[k + 1];
}

void sf_tensor_acquire(sf_tensor *t, int write)
{
  for (int k = t->k_lo; k < t->k_hi; k++) sf_handle_acquire(t->slab[k], write);
}

void sf_tensor_release(sf_tensor *t)
{
  for (int k = t->k_lo; k < t->k_hi; k++) sf_handle_release(t->slab[k]);
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
