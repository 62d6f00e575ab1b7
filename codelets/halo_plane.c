/* StarPU glue for the halo-plane copy of spatially distributed tensors (the halo exchange of
 * src/comm/halo.c): a shard runs it on the first / last plane of its boundary slab, so that
 * StarPU-MPI moves one plane (H x W x C) to the neighbouring shard instead of the whole slab. A
 * trivial loop, so the CPU code lives here. */
#include <string.h>

#include "codelet_common.h"

typedef struct {
  int last; /* 1: the source slab's last plane, 0: its first */
} cl_plane_args;

/* buffers: [dst (1-plane block), src (block slab)] */
static void plane_copy_cpu(void *buffers[], void *cl_arg)
{
  const cl_plane_args *a = cl_arg;
  void *d = buffers[0], *s = buffers[1];
  size_t es = STARPU_BLOCK_GET_ELEMSIZE(s), nx = STARPU_BLOCK_GET_NX(s), ny = STARPU_BLOCK_GET_NY(s);
  size_t sz = a->last ? STARPU_BLOCK_GET_NZ(s) - 1 : 0;
  const char *src = (const char *)STARPU_BLOCK_GET_PTR(s) + sz * STARPU_BLOCK_GET_LDZ(s) * es;
  char *dst = (char *)STARPU_BLOCK_GET_PTR(d);
  size_t lys = STARPU_BLOCK_GET_LDY(s), lyd = STARPU_BLOCK_GET_LDY(d);
  SF_ASSERT(STARPU_BLOCK_GET_NX(d) == nx && STARPU_BLOCK_GET_NY(d) == ny && STARPU_BLOCK_GET_NZ(d) == 1);
  if (lys == nx && lyd == nx) {
    memcpy(dst, src, nx * ny * es);
    return;
  }
  for (size_t y = 0; y < ny; y++) memcpy(dst + y * lyd * es, src + y * lys * es, nx * es);
}

SF_CODELET(plane_copy, v1, plane_copy_cpu, SF_NONE, SF_NONE);

void insert_task_plane_copy(const sf_topt *o, sf_handle dst, sf_handle src, int last)
{
  cl_plane_args a = {last};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dst, STARPU_W);
  sf_buf_add(&b, src, STARPU_R);
  sf_submit(&cl_plane_copy, o, &a, sizeof a, &b, 0.0);
}
