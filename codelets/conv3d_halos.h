/* Where a conv3d task (codelets/conv3d.c) keeps its halos, for the CPU function, the CUDA / HIP
 * wrapper (codelets/cuda_glue/conv3d_cuda.c) and the OpenCL launcher (codelets/opencl/launch_conv.c):
 * after [out, in, w|dy] come the previous slab (when has_lo) and the next slab (when has_hi), passed
 * whole (add_halos in conv3d.c adds them in that order); the kernels read the last plane of the
 * previous slab and the first plane of the next one, and see NULL at the volume's faces. */
#ifndef SF_CONV3D_HALOS_H
#define SF_CONV3D_HALOS_H

#include "codelet_common.h"
#include "scaffold/codelet_args.h"

/* The halo slabs' block interfaces: buffers 3 (lo) and 4 or 3 (hi); NULL for a missing one. */
static inline void sf_conv3d_halo_slabs(void *buffers[], const sf_conv3d_args *a, void **lo, void **hi)
{
  int i = 3;
  *lo = a->has_lo ? buffers[i++] : NULL;
  *hi = a->has_hi ? buffers[i] : NULL;
}

/* The halo planes as the CPU and CUDA kernels take them (host or device pointers): last plane of the
 * previous slab, first plane of the next; NULL at the faces. */
static inline void sf_conv3d_halo_planes(void *buffers[], const sf_conv3d_args *a, const float **lo,
                                         const float **hi)
{
  void *slab_lo, *slab_hi;
  sf_conv3d_halo_slabs(buffers, a, &slab_lo, &slab_hi);
  *lo = slab_lo ? sf_blk_last_plane(slab_lo) : NULL;
  *hi = slab_hi ? sf_blk_first_plane(slab_hi) : NULL;
}

#endif
