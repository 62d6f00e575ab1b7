/* Data registration for the host executors (runtime: openmp | sequential; scaffold/tensor.h): a
 * handle is a host record holding a StarPU-layout block or vector interface on the caller's memory.
 * Nothing is copied: tasks read and write that memory directly, so acquiring a handle only waits
 * for the tasks submitted so far. */
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"
#include "scaffold/common.h"
#include "scaffold/runtime.h"

sf_handle sf_host_block_register(void *p, size_t nx, size_t ny, size_t nz, size_t ldy, size_t ldz, size_t elemsize,
                                 const char *name)
{
  sf_host_data *d = sf_calloc(1, sizeof *d, "host data handle");
  d->is_block = 1;
  d->name = name;
  struct starpu_block_interface *b = &d->iface.blk;
  b->id = STARPU_BLOCK_INTERFACE_ID;
  b->ptr = (uintptr_t)p;
  b->nx = (uint32_t)nx;
  b->ny = (uint32_t)ny;
  b->nz = (uint32_t)nz;
  b->ldy = (uint32_t)ldy;
  b->ldz = (uint32_t)ldz;
  b->elemsize = elemsize;
  return (sf_handle)d;
}

sf_handle sf_host_vector_register(void *p, size_t n, size_t elemsize, const char *name)
{
  sf_host_data *d = sf_calloc(1, sizeof *d, "host data handle");
  d->name = name;
  struct starpu_vector_interface *v = &d->iface.vec;
  v->id = STARPU_VECTOR_INTERFACE_ID;
  v->ptr = (uintptr_t)p;
  v->nx = (uint32_t)n;
  v->elemsize = elemsize;
  return (sf_handle)d;
}

void sf_host_unregister(sf_handle h)
{
  if (!h) return;
  if (sf_runtime_which() == SF_RT_OPENMP) sf_omp_wait_all(); /* no task may still use it */
  free(SF_HD(h));
}

void sf_host_split_plan(sf_handle h, size_t len0, sf_handle parts[2])
{
  const struct starpu_vector_interface *v = &SF_HD(h)->iface.vec;
  SF_ASSERT(!SF_HD(h)->is_block && len0 <= v->nx);
  parts[0] = sf_host_vector_register((void *)v->ptr, len0, v->elemsize, SF_HD(h)->name);
  parts[1] = sf_host_vector_register((char *)v->ptr + len0 * v->elemsize, v->nx - len0, v->elemsize, SF_HD(h)->name);
}

static void no_op(void *buffers[], void *args)
{
  (void)buffers;
  (void)args;
}

void sf_host_split_order(sf_handle h, sf_handle parts[2])
{
  sf_handle all[3] = {h, parts[0], parts[1]};
  int modes[3] = {SF_ACCESS_RW, SF_ACCESS_RW, SF_ACCESS_RW};
  sf_host_submit("split", no_op, NULL, 3, all, modes, 0);
}
