/* Shared by the direct AVX-512 convolution kernels (conv3d_direct.c, conv3d_direct_dw.c): the
 * target attribute, workspace slots and the ring of W-padded input planes. */
#ifndef SF_CONV3D_DIRECT_INTERNAL_H
#define SF_CONV3D_DIRECT_INTERNAL_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SF_HAVE_DIRECT 1
#define SF_AVX512 __attribute__((target("avx512f,fma")))
#define SF_DIRECT_RING_SLOT 2 /* slots 0 and 1 belong to the im2col kernels */
#define SF_DIRECT_MAX_R 12    /* voxels (forward) or input channels (dW) per register block */

/* pl[kd] = input plane d+kd-1 of a slab (lo: plane -1, x: planes 0..nd-1, hi: plane nd; NULL
 * halos = the volume's faces) as a (H, W+2, C) plane with a zero voxel at both ends of each row,
 * or NULL where there is no plane. ring: 3 such planes; held[3] = {-2,-2,-2} before plane 0, then
 * kept by the caller between calls, so each plane is copied once as d advances. */
void sf_direct_ring_planes(const float *pl[3], float *ring, int held[3], int d, const float *lo, const float *x,
                           const float *hi, int nd, int H, int W, int C);
#else
#define SF_HAVE_DIRECT 0
#endif

#endif
