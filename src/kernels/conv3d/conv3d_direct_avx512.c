/* The direct 3x3x3 convolution register blocks and Winograd stages for the AVX-512F (16-float zmm vectors) kernel
 * set: conv3d_direct_tiles.h and conv3d_winograd_tiles.h instantiated for it (scaffold/cpu_isa.h
 * picks the set at run time), the latter with its bf16 GEMMs (conv3d_winograd_bf16_tiles.h), which
 * carry their own AVX512_BF16 target and run only where the CPU has it. */
#include "conv3d_direct_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define SF_DIRECT_ISA SF_DIRECT_SET_AVX512
#define SF_DIRECT_TABLE sf_direct_kernels_avx512
#include "conv3d_direct_tiles.h"
#define SF_WINO_TABLE sf_wino_kernels_avx512
#define SF_WINO_BF16 1 /* and the GEMMs on VDPBF16PS (conv3d_winograd_bf16_tiles.h) */
#include "conv3d_winograd_tiles.h"
#endif
