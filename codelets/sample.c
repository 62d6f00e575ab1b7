/* StarPU glue for sample loading: a task that copies a host sample (input slab, label slab, class
 * weights) into its registered handle, so loading is part of the step's task graph and later tasks
 * depend on it through the handle. The OpenCL variant (codelets/opencl/launch_optim.c) enqueues a
 * write of the host bytes into the device buffer. */
#include <string.h>

#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"

/* buffers: [dst] */
static void sample_load_cpu(void *buffers[], void *cl_arg)
{
  const sf_sample_args *a = cl_arg;
  void *iface = buffers[0];
  if (!a->is_block) {
    memcpy((void *)STARPU_VECTOR_GET_PTR(iface), a->src, a->bytes);
    return;
  }
  /* row by row, so any leading dimensions work */
  size_t es = STARPU_BLOCK_GET_ELEMSIZE(iface), nx = STARPU_BLOCK_GET_NX(iface);
  size_t ny = STARPU_BLOCK_GET_NY(iface), nz = STARPU_BLOCK_GET_NZ(iface);
  size_t ldy = STARPU_BLOCK_GET_LDY(iface), ldz = STARPU_BLOCK_GET_LDZ(iface);
  char *dst = (char *)STARPU_BLOCK_GET_PTR(iface);
  const char *src = a->src;
  if (ldy == nx && ldz == nx * ny) {
    memcpy(dst, src, a->bytes);
    return;
  }
  for (size_t z = 0; z < nz; z++)
    for (size_t y = 0; y < ny; y++, src += nx * es) memcpy(dst + (z * ldz + y * ldy) * es, src, nx * es);
}

SF_CODELET(sample_load, v1, sample_load_cpu, sf_sample_load_cuda, sf_sample_load_opencl);
SF_OPENCL_CODELET(sample_load, SF_OCL_EXACT);

void insert_task_sample_load(const sf_topt *o, sf_handle dst, const void *src, size_t bytes)
{
  int is_block = sf_handle_is_block(dst);
  size_t want = sf_handle_bytes(dst);
  if (bytes != want) SF_ABORT("sample_load: %zu bytes for a handle of %zu bytes", bytes, want);
  sf_sample_args a = {src, bytes, is_block};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dst, STARPU_W);
  sf_submit(&cl_sample_load, o, &a, sizeof a, &b, 0.0);
}

/* A block of an H/W-blocked tensor from a host box that holds it with other blocks: nz planes of ny
 * rows of row_bytes each, rows ld_row bytes apart and planes ld_plane bytes apart at src. CPU (the
 * data moves to a device afterwards if a task wants it there). */
typedef struct {
  const char *src;
  size_t row_bytes, ld_row, ld_plane;
} cl_box_args;

/* buffers: [dst (contiguous block)] */
static void sample_load_box_cpu(void *buffers[], void *cl_arg)
{
  const cl_box_args *a = cl_arg;
  void *iface = buffers[0];
  size_t ny = STARPU_BLOCK_GET_NY(iface), nz = STARPU_BLOCK_GET_NZ(iface);
  char *dst = (char *)STARPU_BLOCK_GET_PTR(iface);
  SF_ASSERT(STARPU_BLOCK_GET_NX(iface) * STARPU_BLOCK_GET_ELEMSIZE(iface) == a->row_bytes);
  for (size_t z = 0; z < nz; z++)
    for (size_t y = 0; y < ny; y++, dst += a->row_bytes) memcpy(dst, a->src + z * a->ld_plane + y * a->ld_row, a->row_bytes);
}

SF_CODELET(sample_load_box, v1, sample_load_box_cpu, SF_NONE, SF_NONE);

void insert_task_sample_load_box(const sf_topt *o, sf_handle dst, const void *src, size_t row_bytes, size_t ld_row,
                                 size_t ld_plane)
{
  cl_box_args a = {src, row_bytes, ld_row, ld_plane};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dst, STARPU_W);
  sf_submit(&cl_sample_load_box, o, &a, sizeof a, &b, 0.0);
}
