/* StarPU glue for the H/W block decomposition (docs/architecture.md §5; kernels in
 * src/kernels/halo/halo_blocks.c): the layer copy that fills a halo piece (one row or column layer of a
 * block, for the neighbouring rank), the column and row padding that builds a block with its
 * neighbours' border, and the crop / embed between a block and its padded shape. Copies of a few
 * layers. CPU = src/kernels/halo/halo_blocks.c; CUDA (cuda_glue/blocks_cuda.c) and OpenCL
 * (opencl/launch_blocks.c) do the same as rectangular device copies (halo_blocks_moves.h). */
#include "codelet_common.h"
#include "scaffold/codelet_args.h"
#include "scaffold/opencl.h"
#include "scaffold/ops.h"

typedef sf_blocks_args cl_blocks_args;

static void extents(void *iface, int C, int n[3])
{
  n[0] = (int)STARPU_BLOCK_GET_NZ(iface);
  n[1] = (int)STARPU_BLOCK_GET_NY(iface);
  n[2] = (int)(STARPU_BLOCK_GET_NX(iface) / (uint32_t)C);
}

static size_t voxel_bytes(void *iface, int C) { return STARPU_BLOCK_GET_ELEMSIZE(iface) * (size_t)C; }

/* buffers: [dst piece, src block] */
static void layer_copy_cpu(void *buffers[], void *cl_arg)
{
  const cl_blocks_args *a = cl_arg;
  int n[3], p[3];
  extents(buffers[1], a->C, n);
  extents(buffers[0], a->C, p);
  for (int i = 0; i < 3; i++) SF_ASSERT(p[i] == (i == a->axis ? 1 : n[i]));
  sf_layer_copy((void *)STARPU_BLOCK_GET_PTR(buffers[0]), (const void *)STARPU_BLOCK_GET_PTR(buffers[1]), n, a->axis,
                a->last, voxel_bytes(buffers[1], a->C));
}

/* The neighbours after [dst, src]: pointer and extent along axis (a whole block or a halo piece). */
static void pad_neighbours(void *buffers[], const cl_blocks_args *a, int axis, const void **lo, int *lo_n,
                           const void **hi, int *hi_n)
{
  int i = 2, n[3];
  *lo = *hi = NULL;
  *lo_n = *hi_n = 0;
  if (a->has_lo) {
    extents(buffers[i], a->C, n);
    *lo = (const void *)STARPU_BLOCK_GET_PTR(buffers[i++]);
    *lo_n = n[axis];
  }
  if (a->has_hi) {
    extents(buffers[i], a->C, n);
    *hi = (const void *)STARPU_BLOCK_GET_PTR(buffers[i]);
    *hi_n = n[axis];
  }
}

/* buffers: [dst, src, lo?, hi?]; along the columns (axis 2): dst (nd, h, w+2) from src (nd, h, w);
 * along the rows (axis 1): dst (nd, h+2, W) from src (nd, h, W) */
static void pad_cpu(void *buffers[], const cl_blocks_args *a, int axis)
{
  int n[3], lo_n, hi_n;
  const void *lo, *hi;
  extents(buffers[1], a->C, n);
  pad_neighbours(buffers, a, axis, &lo, &lo_n, &hi, &hi_n);
  void *dst = (void *)STARPU_BLOCK_GET_PTR(buffers[0]);
  const void *src = (const void *)STARPU_BLOCK_GET_PTR(buffers[1]);
  size_t vb = voxel_bytes(buffers[1], a->C);
  if (axis == 2) sf_pad_cols(dst, src, lo, lo_n, hi, hi_n, n[0], n[1], n[2], vb);
  else sf_pad_rows(dst, src, lo, lo_n, hi, hi_n, n[0], n[1], n[2], vb);
}

static void pad_cols_cpu(void *buffers[], void *cl_arg) { pad_cpu(buffers, cl_arg, 2); }
static void pad_rows_cpu(void *buffers[], void *cl_arg) { pad_cpu(buffers, cl_arg, 1); }

/* buffers: [dst (nd, h, w), src (nd, h+2, w+2)] */
static void crop_hw_cpu(void *buffers[], void *cl_arg)
{
  const cl_blocks_args *a = cl_arg;
  int n[3];
  extents(buffers[0], a->C, n);
  sf_crop_hw((void *)STARPU_BLOCK_GET_PTR(buffers[0]), (const void *)STARPU_BLOCK_GET_PTR(buffers[1]), n[0], n[1], n[2],
             voxel_bytes(buffers[0], a->C));
}

/* buffers: [dst (nd, h+2, w+2), src (nd, h, w)] */
static void embed_hw_cpu(void *buffers[], void *cl_arg)
{
  const cl_blocks_args *a = cl_arg;
  int n[3];
  extents(buffers[1], a->C, n);
  sf_embed_hw((void *)STARPU_BLOCK_GET_PTR(buffers[0]), (const void *)STARPU_BLOCK_GET_PTR(buffers[1]), n[0], n[1], n[2],
              voxel_bytes(buffers[1], a->C));
}

/* buffers: [dst block, src block] */
static void box_copy_cpu(void *buffers[], void *cl_arg)
{
  const cl_blocks_args *a = cl_arg;
  int dn[3], sn[3];
  extents(buffers[0], a->C, dn);
  extents(buffers[1], a->C, sn);
  for (int i = 0; i < 3; i++) SF_ASSERT(a->dlo[i] + a->ext[i] <= dn[i] && a->slo[i] + a->ext[i] <= sn[i]);
  sf_box_copy((void *)STARPU_BLOCK_GET_PTR(buffers[0]), dn, a->dlo, (const void *)STARPU_BLOCK_GET_PTR(buffers[1]), sn,
              a->slo, a->ext, voxel_bytes(buffers[1], a->C));
}

/* each with CPU, CUDA and OpenCL variants; exact copies, so OpenCL may take them in bitwise runs */
#define BLOCKS_CODELET(op)                                         \
  SF_CODELET(op, v1, op##_cpu, sf_##op##_cuda, sf_##op##_opencl); \
  SF_OPENCL_CODELET(op, SF_OCL_EXACT)
BLOCKS_CODELET(box_copy);
BLOCKS_CODELET(layer_copy);
BLOCKS_CODELET(pad_cols);
BLOCKS_CODELET(pad_rows);
BLOCKS_CODELET(crop_hw);
BLOCKS_CODELET(embed_hw);

static void submit2(struct starpu_codelet *cl, const sf_topt *o, cl_blocks_args *a, sf_handle dst, sf_handle src)
{
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dst, STARPU_W);
  sf_buf_add(&b, src, STARPU_R);
  sf_submit(cl, o, a, sizeof *a, &b, 0.0);
}

void insert_task_layer_copy(const sf_topt *o, sf_handle piece, sf_handle src, int axis, int last, int C)
{
  cl_blocks_args a = {.C = C, .axis = axis, .last = last};
  submit2(&cl_layer_copy, o, &a, piece, src);
}

static void pad(struct starpu_codelet *cl, const sf_topt *o, sf_handle dst, sf_handle src, sf_handle lo, sf_handle hi,
                int C)
{
  cl_blocks_args a = {.C = C, .has_lo = lo != NULL, .has_hi = hi != NULL};
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dst, STARPU_W);
  sf_buf_add(&b, src, STARPU_R);
  if (lo) sf_buf_add(&b, lo, STARPU_R);
  if (hi) sf_buf_add(&b, hi, STARPU_R);
  sf_submit(cl, o, &a, sizeof a, &b, 0.0);
}

void insert_task_pad_cols(const sf_topt *o, sf_handle dst, sf_handle src, sf_handle lo, sf_handle hi, int C)
{
  pad(&cl_pad_cols, o, dst, src, lo, hi, C);
}

void insert_task_pad_rows(const sf_topt *o, sf_handle dst, sf_handle src, sf_handle lo, sf_handle hi, int C)
{
  pad(&cl_pad_rows, o, dst, src, lo, hi, C);
}

void insert_task_crop_hw(const sf_topt *o, sf_handle dst, sf_handle src, int C)
{
  cl_blocks_args a = {.C = C};
  submit2(&cl_crop_hw, o, &a, dst, src);
}

void insert_task_embed_hw(const sf_topt *o, sf_handle dst, sf_handle src, int C)
{
  cl_blocks_args a = {.C = C};
  submit2(&cl_embed_hw, o, &a, dst, src);
}

void insert_task_box_copy(const sf_topt *o, sf_handle dst, const int dlo[3], sf_handle src, const int slo[3],
                          const int ext[3], int C, int whole)
{
  cl_blocks_args a = {.C = C};
  for (int i = 0; i < 3; i++) {
    a.dlo[i] = dlo[i];
    a.slo[i] = slo[i];
    a.ext[i] = ext[i];
  }
  sf_buf b = {.n = 0};
  sf_buf_add(&b, dst, whole ? STARPU_W : STARPU_RW);
  sf_buf_add(&b, src, STARPU_R);
  sf_submit(&cl_box_copy, o, &a, sizeof a, &b, 0.0);
}
