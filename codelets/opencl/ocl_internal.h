/* Private plumbing shared by the OpenCL launchers (codelets/opencl/launch_*.c, defined in
 * launch_common.c): the list of kernels and the source file each lives in (registered with the
 * runtime's program registry, scaffold/opencl_devices.h, which owns the programs and the per-worker
 * kernel objects), buffer accessors that turn a StarPU interface into (cl_mem, element offset), and
 * one launch helper (1D NDRange padded to the work-group size; the kernels bound-check). */
#ifndef SF_OCL_INTERNAL_H
#define SF_OCL_INTERNAL_H

/* OpenCL 1.2 API (clEnqueueFillBuffer, fp64 queries); StarPU's header defaults to 1.0 */
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <starpu.h>
#ifdef STARPU_USE_OPENCL
#include <starpu_opencl.h> /* before scaffold/opencl.h: opencl_devices.h declares its cl_* part then */
#endif

#include "scaffold/common.h"
#include "scaffold/opencl.h"

#ifdef STARPU_USE_OPENCL

/* X(kernel, source file): the kernel function is "sf_<kernel>" in codelets/opencl/<file>. */
#define SF_OCL_KERNELS(X)                                                                             \
  X(conv3d_fwd, "conv3d.cl") X(conv3d_bwd_data, "conv3d.cl") X(conv3d_bwd_weights, "conv3d.cl")       \
  X(conv1_fwd, "conv1.cl") X(conv1_bwd_data, "conv1.cl") X(conv1_bwd_weights, "conv1.cl")             \
  X(upconv3d_fwd, "upconv3d.cl") X(upconv3d_bwd_data, "upconv3d.cl")                                   \
  X(upconv3d_bwd_weights, "upconv3d.cl")                                                              \
  X(gn_stats, "groupnorm.cl") X(gn_fwd, "groupnorm.cl") X(gn_bwd_stats, "groupnorm.cl")               \
  X(gn_bwd_data, "groupnorm.cl") X(gn_param_grads, "groupnorm.cl")                                    \
  X(relu_fwd, "elementwise.cl") X(relu_bwd, "elementwise.cl") X(maxpool3d_fwd, "elementwise.cl")      \
  X(maxpool3d_bwd, "elementwise.cl") X(concat_fwd, "elementwise.cl") X(concat_bwd, "elementwise.cl")  \
  X(loss_partial, "loss.cl") X(loss_bwd, "loss.cl") X(loss_wsum, "loss.cl")                           \
  X(dice_hard_partial, "loss.cl")                                                                     \
  X(sumsq, "optim.cl") X(clip_step, "optim.cl") X(adam, "optim.cl") X(sgd, "optim.cl") X(rmsprop, "optim.cl")                                   \
  X(add_f, "reduce.cl") X(add_d, "reduce.cl")

#define SF_OCL_ENUM_(k, f) SF_OCL_K_##k,
typedef enum { SF_OCL_KERNELS(SF_OCL_ENUM_) SF_OCL_NKERNELS } sf_ocl_kernel_id;
#undef SF_OCL_ENUM_

/* The running worker's command queue, and its kernel object for id (the runtime's, created at first
 * use; the programs are built by sf_opencl_init, called then if nobody did). */
cl_command_queue sf_ocl_queue(void);
cl_kernel sf_ocl_kernel(sf_ocl_kernel_id id);
const char *sf_ocl_kernel_name(sf_ocl_kernel_id id);

/* A buffer as the kernels take it: memory object + offset in ELEMENTS. */
typedef struct {
  cl_mem mem;
  cl_ulong off;
} sf_ocl_buf;

/* Block / vector interfaces -> (cl_mem, element offset); dies unless the element size is elemsize
 * and (blocks) the data is contiguous (ldy == nx, ldz == nx*ny), as every slab handle is. what names
 * the buffer in messages ("conv3d_fwd y"). */
sf_ocl_buf sf_ocl_block(void *iface, size_t elemsize, const char *what);
sf_ocl_buf sf_ocl_vector(void *iface, size_t elemsize, const char *what);
/* A block or a vector of elemsize elements, with its element count in *n. */
sf_ocl_buf sf_ocl_any(void *iface, size_t elemsize, size_t *n, const char *what);
/* The first / last depth plane of a block slab (the halo plane for the next / previous slab). */
sf_ocl_buf sf_ocl_first_plane(void *iface, const char *what);
sf_ocl_buf sf_ocl_last_plane(void *iface, const char *what);
/* Depth (nz) of a block slab. */
static inline cl_int sf_ocl_nz(void *iface) { return (cl_int)STARPU_BLOCK_GET_NZ(iface); }
/* Voxels of a block holding C channels per voxel. */
static inline cl_ulong sf_ocl_vox(void *iface, int C)
{
  return (cl_ulong)(STARPU_BLOCK_GET_NX(iface) / (uint32_t)C) * STARPU_BLOCK_GET_NY(iface) * STARPU_BLOCK_GET_NZ(iface);
}
/* Dies unless the block holds nx == row and ny == ny elements per plane (checks cl_arg sizes). */
void sf_ocl_check_block(void *iface, size_t row, size_t ny, const char *what);

/* Dies unless the running task's cl_arg has `size` bytes, the size of the op's struct in
 * scaffold/codelet_args.h (catches a task submitted with another op's struct). */
void sf_ocl_check_args(const char *codelet, size_t size);
/* The running task's buffer count (variable-buffer codelets). */
int sf_ocl_nbuffers(void);

/* One kernel argument: its size and address. SF_OCL_ARG(x) takes an lvalue. */
typedef struct {
  size_t size;
  const void *ptr;
} sf_ocl_arg;
#define SF_OCL_ARG(x) ((sf_ocl_arg){sizeof(x), &(x)})
/* A buffer as two arguments (cl_mem, cl_ulong element offset). */
#define SF_OCL_BUF(b) SF_OCL_ARG((b).mem), SF_OCL_ARG((b).off)

/* Compile-time check of a cl_arg field (scaffold/codelet_args.h) that a launcher passes unchanged as a
 * kernel argument, SF_OCL_ARG(a->field): its host type must be the one of the kernel's parameter in
 * the .cl source (cl_int for `int`, cl_float for `float`), since clSetKernelArg copies sizeof(field)
 * bytes that the kernel reads as its own type. Changing such a field's type breaks the build here. */
#define SF_OCL_FIELD_IS(type, field, cltype)                                                          \
  _Static_assert(_Generic(((type *)0)->field, cltype: 1, default: 0),                                 \
                 #type "." #field " is passed to the kernels as " #cltype)

/* Sets the arguments and enqueues kernel id on the worker's queue over `items` work-items (nothing
 * when 0). Dies with the kernel name and the OpenCL error on failure. */
void sf_ocl_launch(sf_ocl_kernel_id id, size_t items, int nargs, const sf_ocl_arg *args);
#define SF_OCL_LAUNCH(id, items, ...)                                                                 \
  do {                                                                                                \
    const sf_ocl_arg sf_a_[] = {__VA_ARGS__};                                                         \
    sf_ocl_launch(id, items, (int)(sizeof sf_a_ / sizeof sf_a_[0]), sf_a_);                           \
  } while (0)

/* clEnqueueCopyBuffer of n elements of elemsize bytes on the worker's queue. */
void sf_ocl_copy(sf_ocl_buf dst, sf_ocl_buf src, size_t n, size_t elemsize);
/* Zero n elements of elemsize bytes. */
void sf_ocl_fill_zero(sf_ocl_buf dst, size_t n, size_t elemsize);
/* Call last in every launcher: waits for the queue unless the codelet declared STARPU_OPENCL_ASYNC
 * (then StarPU waits for the kernels through its own marker). */
void sf_ocl_done(void);
/* Dies with what failed and the OpenCL error name when err != CL_SUCCESS (the runtime's check). */
static inline void sf_ocl_check(cl_int err, const char *what, const char *detail)
{
  sf_opencl_check(err, what, detail);
}

#endif /* STARPU_USE_OPENCL */
#endif
