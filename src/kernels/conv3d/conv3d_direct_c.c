/* The direct 3x3x3 convolution register blocks and Winograd stages for the portable C kernel set
 * (GCC vector extensions, 8 floats; any build target): conv3d_direct_tiles.h and
 * conv3d_winograd_tiles.h instantiated for it (scaffold/cpu_isa.h picks the set at run time). */
#include "conv3d_direct_internal.h"

#define SF_DIRECT_ISA SF_DIRECT_SET_C
#define SF_DIRECT_TABLE sf_direct_kernels_c
#include "conv3d_direct_tiles.h"
#define SF_WINO_TABLE sf_wino_kernels_c
#include "conv3d_winograd_tiles.h"
