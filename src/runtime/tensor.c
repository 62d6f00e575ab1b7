/* Slab-split activation tensors and small vector handles on StarPU (scaffold/tensor.h): one
 * allocation per tensor, one 3D block handle per depth slab, registered on slices of it. */
#include "scaffold/tensor.h"

#include <starpu.h>
#include <string.h>

#include "scaffold/common.h"

#define H_(h) ((starpu_data_handle_t)(h))

void sf_slab_bounds(int *d0, int n, int coarse_edge, int scale)
{
  SF_ASSERT(n >= 1 && n <= coarse_edge && n <= SF_MAX_SLABS && scale >= 1);
  for (int k = 0; k <= n; k++) d0[k] = (int)((long)k * coarse_edge / n) * scale;
}

void *sf_data_alloc(size_t bytes, const char *what)
{
  void *p = NULL;
  if (bytes == 0) bytes = 64;
  if (starpu_malloc_flags(&p, bytes, STARPU_MALLOC_PINNED) != 0 || !p)
    sf_die(SF_EXIT_FAILURE, "out of memory allocating %zu bytes for %s", bytes, what);
  memset(p, 0, bytes);
  return p;
}

void sf_data_free(void *p, size_t bytes)
{
  if (!p) return;
  if (bytes == 0) bytes = 64;
  starpu_free_flags(p, bytes, STARPU_MALLOC_PINNED);
}

static size_t tensor_bytes(const sf_tensor *t)
{
  return (size_t)t->D * t->H * t->W * t->C * t->elemsize;
}

void sf_tensor_init(sf_tensor *t, const char *name, int D, int H, int W, int C, size_t elemsize, int nslabs,
                    const int *d0)
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
  t->data = sf_data_alloc(tensor_bytes(t), t->name);
  const size_t plane = (size_t)H * W * C; /* elements per depth plane */
  for (int k = 0; k < nslabs; k++) {
    int nd = d0[k + 1] - d0[k];
    SF_ASSERT(nd >= 1);
    starpu_data_handle_t h;
    char *p = (char *)t->data + (size_t)d0[k] * plane * elemsize;
    starpu_block_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)p, (uint32_t)((size_t)W * C), (uint32_t)plane,
                               (uint32_t)((size_t)W * C), (uint32_t)H, (uint32_t)nd, elemsize);
    starpu_data_set_name(h, t->name);
    starpu_data_set_coordinates(h, 1, k);
    t->slab[k] = (sf_handle)h;
  }
}

void sf_tensor_destroy(sf_tensor *t)
{
  if (!t->data) return;
  for (int k = 0; k < t->nslabs; k++)
    if (t->slab[k]) starpu_data_unregister(H_(t->slab[k]));
  sf_data_free(t->data, tensor_bytes(t));
  t->data = NULL;
}

size_t sf_tensor_slab_voxels(const sf_tensor *t, int k)
{
  return (size_t)(t->d0[k + 1] - t->d0[k]) * t->H * t->W;
}

size_t sf_tensor_voxels(const sf_tensor *t) { return (size_t)t->D * t->H * t->W; }

sf_handle sf_tensor_lo(const sf_tensor *t, int k) { return k > 0 ? t->slab[k - 1] : NULL; }

sf_handle sf_tensor_hi(const sf_tensor *t, int k) { return k + 1 < t->nslabs ? t->slab[k + 1] : NULL; }

void sf_tensor_acquire(sf_tensor *t, int write)
{
  for (int k = 0; k < t->nslabs; k++) sf_handle_acquire(t->slab[k], write);
}

void sf_tensor_release(sf_tensor *t)
{
  for (int k = 0; k < t->nslabs; k++) sf_handle_release(t->slab[k]);
}

sf_handle sf_vector_register(void *ptr, size_t n, size_t elemsize, const char *name)
{
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)ptr, (uint32_t)n, elemsize);
  if (name) starpu_data_set_name(h, name);
  return (sf_handle)h;
}

void sf_handle_unregister(sf_handle h)
{
  if (h) starpu_data_unregister(H_(h));
}

void sf_handle_acquire(sf_handle h, int write)
{
  int rc = starpu_data_acquire(H_(h), write ? STARPU_RW : STARPU_R);
  if (rc != 0) SF_ABORT("starpu_data_acquire failed (%d)", rc);
}

void sf_handle_release(sf_handle h) { starpu_data_release(H_(h)); }
