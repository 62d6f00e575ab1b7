/* Common plumbing of the OpenCL launchers (codelets/opencl/ocl_internal.h): the kernel list
 * (SF_OCL_KERNELS), registered with the runtime's program registry at program start
 * (scaffold/opencl_devices.h: the runtime builds the programs for every OpenCL worker's device at
 * start-up and checks that each registered kernel exists), the one launch helper (1D NDRange padded to
 * the work-group size), copies and fills on the worker's queue, and the buffer accessors that turn a
 * StarPU interface into (cl_mem, element offset). */
#include "ocl_internal.h"

#ifdef STARPU_USE_OPENCL

#define SF_OCL_NAME_(k, f) "sf_" #k,
#define SF_OCL_FILE_(k, f) f,
static const char *const k_name[SF_OCL_NKERNELS] = {SF_OCL_KERNELS(SF_OCL_NAME_)};
static const char *const k_file[SF_OCL_NKERNELS] = {SF_OCL_KERNELS(SF_OCL_FILE_)};
static int g_kid[SF_OCL_NKERNELS]; /* the runtime's id of each kernel */

__attribute__((constructor)) static void register_kernels(void)
{
  for (int k = 0; k < SF_OCL_NKERNELS; k++) g_kid[k] = sf_opencl_kernel_register(k_name[k], k_file[k]);
}

const char *sf_ocl_kernel_name(sf_ocl_kernel_id id) { return k_name[id]; }

cl_command_queue sf_ocl_queue(void)
{
  cl_command_queue q;
  starpu_opencl_get_current_queue(&q);
  return q;
}

cl_kernel sf_ocl_kernel(sf_ocl_kernel_id id)
{
  size_t wg;
  return sf_opencl_kernel(g_kid[id], &wg);
}

void sf_ocl_launch(sf_ocl_kernel_id id, size_t items, int nargs, const sf_ocl_arg *args)
{
  if (items == 0) return;
  size_t local = 0;
  cl_kernel k = sf_opencl_kernel(g_kid[id], &local);
  for (int i = 0; i < nargs; i++) {
    cl_int err = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].ptr);
    if (err != CL_SUCCESS)
      sf_die(SF_EXIT_FAILURE, "OpenCL: clSetKernelArg(%s, argument %d, %zu bytes) failed: %s (%d)", k_name[id], i,
             args[i].size, starpu_opencl_error_string(err), (int)err);
  }
  size_t global = (items + local - 1) / local * local;
  sf_ocl_check(clEnqueueNDRangeKernel(sf_ocl_queue(), k, 1, NULL, &global, &local, 0, NULL, NULL),
               "clEnqueueNDRangeKernel", k_name[id]);
}

void sf_ocl_copy(sf_ocl_buf dst, sf_ocl_buf src, size_t n, size_t elemsize)
{
  if (n == 0) return;
  sf_ocl_check(clEnqueueCopyBuffer(sf_ocl_queue(), src.mem, dst.mem, src.off * elemsize, dst.off * elemsize,
                                   n * elemsize, 0, NULL, NULL),
               "clEnqueueCopyBuffer", NULL);
}

void sf_ocl_fill_zero(sf_ocl_buf dst, size_t n, size_t elemsize)
{
  if (n == 0) return;
  const cl_uchar zero = 0;
  sf_ocl_check(clEnqueueFillBuffer(sf_ocl_queue(), dst.mem, &zero, 1, dst.off * elemsize, n * elemsize, 0, NULL,
                                   NULL),
               "clEnqueueFillBuffer", NULL);
}

void sf_ocl_done(void)
{
  struct starpu_task *t = starpu_task_get_current();
  unsigned impl = t ? starpu_task_get_implementation(t) : 0;
  if (!t || !(t->cl->opencl_flags[impl] & STARPU_OPENCL_ASYNC)) sf_ocl_check(clFinish(sf_ocl_queue()), "clFinish", NULL);
}

void sf_ocl_check_args(const char *codelet, size_t size)
{
  struct starpu_task *t = starpu_task_get_current();
  if (!t || !t->cl_arg || t->cl_arg_size != size)
    SF_ABORT("OpenCL launcher for %s: cl_arg has %zu bytes, expected %zu (the op's struct in "
             "scaffold/codelet_args.h)",
             codelet, t && t->cl_arg ? t->cl_arg_size : (size_t)0, size);
}

int sf_ocl_nbuffers(void) { return (int)STARPU_TASK_GET_NBUFFERS(starpu_task_get_current()); }

/* ---- buffers ---- */
static sf_ocl_buf make_buf(uintptr_t dev, size_t off_bytes, size_t elemsize, const char *what)
{
  if (off_bytes % elemsize)
    SF_ABORT("OpenCL %s: offset %zu bytes is not a multiple of the element size %zu", what, off_bytes, elemsize);
  sf_ocl_buf b = {(cl_mem)dev, (cl_ulong)(off_bytes / elemsize)};
  return b;
}

sf_ocl_buf sf_ocl_block(void *iface, size_t elemsize, const char *what)
{
  struct starpu_block_interface *b = iface;
  if (b->id != STARPU_BLOCK_INTERFACE_ID) SF_ABORT("OpenCL %s: expected a block handle", what);
  if (b->elemsize != elemsize) SF_ABORT("OpenCL %s: element size %zu, expected %zu", what, b->elemsize, elemsize);
  if ((b->ny > 1 && b->ldy != b->nx) || (b->nz > 1 && b->ldz != (size_t)b->nx * b->ny))
    SF_ABORT("OpenCL %s: block is not contiguous (nx %u ny %u ldy %u ldz %u)", what, b->nx, b->ny, b->ldy, b->ldz);
  return make_buf(b->dev_handle, b->offset, elemsize, what);
}

sf_ocl_buf sf_ocl_vector(void *iface, size_t elemsize, const char *what)
{
  struct starpu_vector_interface *v = iface;
  if (v->id != STARPU_VECTOR_INTERFACE_ID) SF_ABORT("OpenCL %s: expected a vector handle", what);
  if (v->elemsize != elemsize) SF_ABORT("OpenCL %s: element size %zu, expected %zu", what, v->elemsize, elemsize);
  return make_buf(v->dev_handle, v->offset, elemsize, what);
}

sf_ocl_buf sf_ocl_any(void *iface, size_t elemsize, size_t *n, const char *what)
{
  if (*(enum starpu_data_interface_id *)iface == STARPU_VECTOR_INTERFACE_ID) {
    *n = STARPU_VECTOR_GET_NX(iface);
    return sf_ocl_vector(iface, elemsize, what);
  }
  sf_ocl_buf b = sf_ocl_block(iface, elemsize, what);
  *n = (size_t)STARPU_BLOCK_GET_NX(iface) * STARPU_BLOCK_GET_NY(iface) * STARPU_BLOCK_GET_NZ(iface);
  return b;
}

sf_ocl_buf sf_ocl_first_plane(void *iface, const char *what) { return sf_ocl_block(iface, sizeof(float), what); }

sf_ocl_buf sf_ocl_last_plane(void *iface, const char *what)
{
  sf_ocl_buf b = sf_ocl_block(iface, sizeof(float), what);
  b.off += (cl_ulong)(STARPU_BLOCK_GET_NZ(iface) - 1) * STARPU_BLOCK_GET_LDZ(iface);
  return b;
}

void sf_ocl_check_block(void *iface, size_t row, size_t ny, const char *what)
{
  if (STARPU_BLOCK_GET_NX(iface) != row || STARPU_BLOCK_GET_NY(iface) != ny)
    SF_ABORT("OpenCL %s: block is %u x %u per plane, the arguments say %zu x %zu", what,
             (unsigned)STARPU_BLOCK_GET_NX(iface), (unsigned)STARPU_BLOCK_GET_NY(iface), row, ny);
}

#endif /* STARPU_USE_OPENCL */
