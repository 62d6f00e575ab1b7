/* StarPU glue for distributed runs (scaffold/dist.h): the halo-plane copy that a spatial shard runs
 * on the first / last plane of its boundary slab, so that StarPU-MPI moves one plane (H x W x C)
 * to the neighbouring shard instead of the whole slab; and the combine step of the gradient
 * all-reduce, acc = (acc + received) * scale, and a gate that holds a receive buffer until a
 * gradient is complete. These are trivial loops, so the CPU code lives here. */
#include <string.h>

#include "codelet_common.h"

typedef struct {
  int last; /* 1: the source slab's last plane, 0: its first */
} cl_plane_args;

typedef struct {
  float scale;
} cl_combine_args;

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

/* buffers: [acc (float vector) RW, other (float vector) R] */
static void grad_combine_cpu(void *buffers[], void *cl_arg)
{
  const cl_combine_args *a = cl_arg;
  float *restrict acc = sf_vec_f(buffers[0]);
  const float *restrict o = sf_vec_f(buffers[1]);
  size_t n = sf_vec_n(buffers[0]);
  const float s = a->scale;
  if (s == 1.0f)
    for (size_t i = 0; i < n; i++) acc[i] += o[i];
  else
    for (size_t i = 0; i < n; i++) acc[i] = (acc[i] + o[i]) * s; /* as the host's batch mean: sum, then scale */
}

SF_CODELET(plane_copy, v1, plane_copy_cpu, SF_NONE, SF_NONE);
SF_CODELET(grad_combine, v1, grad_combine_cpu, SF_NONE, SF_NONE);
/* runs nowhere: only its data dependencies matter */
static struct starpu_codelet cl_gate = {.where = STARPU_NOWHERE, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "sf_gate"};

void insert_task_gate(const sf_topt *o, sf_handle gate, sf_handle after)
{
  sf_buf b = {.n = 0};
  sf_buf_add(&b, gate, STARPU_RW);
  sf_buf_add(&b, after, STARPU_R);
  sf_submit(&cl_gate, o, NULL, 0, &b, 0.0);
}

void insert_task_plane_copy(const sf_topt *o, sf_handle dst, sf_handle src, int last)
{
  cl_plane_args a = {last};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dst, STARPU_W);
  sf_buf_add(&b, src, STARPU_R);
  sf_submit(&cl_plane_copy, o, &a, sizeof a, &b, 0.0);
}

void insert_task_grad_combine(const sf_topt *o, sf_handle acc, sf_handle other, float scale)
{
  cl_combine_args a = {scale};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, acc, STARPU_RW);
  sf_buf_add(&b, other, STARPU_R);
  sf_submit(&cl_grad_combine, o, &a, sizeof a, &b, (double)starpu_vector_get_nx(SF_H(acc)) * (scale == 1.0f ? 1 : 2));
}
