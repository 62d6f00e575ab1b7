/* The direct 3x3x3 convolution register blocks and Winograd stages for the AVX2 + FMA (8-float ymm vectors) kernel
 * set: conv3d_direct_tiles.h and conv3d_winograd_tiles.h instantiated for it (scaffold/cpu_isa.h
 * picks the set at run time). */
#include "conv3d_direct_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define SF_DIRECT_ISA SF_DIRECT_SET_AVX2
#define SF_DIRECT_TABLE sf_direct_kernels_avx2
#include "conv3d_direct_tiles.h"
#define SF_WINO_TABLE sf_wino_kernels_avx2
#include "conv3d_winograd_tiles.h"
#endif
