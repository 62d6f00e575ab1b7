/* What the direct 3x3x3 convolution drivers share (conv3d_direct.c: forward and dX by rows,
 * conv3d_direct_blocked.c: by slab blocks, conv3d_direct_dw*.c: dW): the active kernel set's register
 * blocks, the W-padded input planes and their ring of three, and the weights packed per channel block. */
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"

#include "conv3d_direct_internal.h"
#include "conv3d_variants.h"

int sf_conv3d_direct_available(void) { return sf_cpu_isa_active() != SF_ISA_NONE; }

const sf_direct_kernels *sf_direct_kernels_for(int nout)
{
  switch (sf_cpu_isa_active()) {
#if SF_HAVE_X86_DIRECT
  case SF_ISA_AVX512: return nout % 16 && nout % 8 == 0 ? &sf_direct_kernels_avx2 : &sf_direct_kernels_avx512;
  case SF_ISA_AVX2: return &sf_direct_kernels_avx2;
#endif
  case SF_ISA_C: return &sf_direct_kernels_c;
  default: SF_ABORT("direct conv3d kernels called with the kernel set off (SF_CONV_DIRECT=0)");
  }
}

void sf_direct_pad_plane(float *dst, const float *src, int H, int W, int C)
{
  size_t row = (size_t)W * C;
  for (int h = 0; h < H; h++, dst += row + 2 * (size_t)C, src += row) {
    memset(dst, 0, sizeof(float) * C);
    memcpy(dst + C, src, sizeof(float) * row);
    memset(dst + C + row, 0, sizeof(float) * C);
  }
}

void sf_direct_ring_planes(const float *pl[3], float *ring, int held[3], int d, const float *lo, const float *x,
                           const float *hi, int nd, int H, int W, int C)
{
  size_t plane = (size_t)H * W * C, pplane = (size_t)H * (W + 2) * C;
  for (int kd = 0; kd < 3; kd++) {
    int e = d + kd - 1, s = (e + 3) % 3;
    const float *src = e < 0 ? lo : e >= nd ? hi : x + (size_t)e * plane;
    pl[kd] = src ? ring + (size_t)s * pplane : NULL;
    if (src && held[s] != e) sf_direct_pad_plane(ring + (size_t)s * pplane, src, H, W, C), held[s] = e;
  }
}

#define SF_PACK_PREFETCH 128 /* rows ahead */

void sf_direct_pack_weights(float *wp, const float *w, int Cin, int Cout, int flip, int c0, int nb, int width)
{
  int K = flip ? Cout : Cin;
  for (int k = 0; k < 27; k++) {
    const float *src = w + (size_t)(flip ? 26 - k : k) * Cin * Cout;
    for (int c = 0; c < K; c++, wp += width) {
      if (!flip) {
        /* one cache line per weight row, rows Cout floats apart: without the prefetch each waits
         * for memory (at 512 channels packing took as long as the block's FMAs) */
        if (c + SF_PACK_PREFETCH < K) __builtin_prefetch(src + (size_t)(c + SF_PACK_PREFETCH) * Cout + c0);
        memcpy(wp, src + (size_t)c * Cout + c0, sizeof(float) * nb);
      } else
        for (int j = 0; j < nb; j++) wp[j] = src[(size_t)(c0 + j) * Cout + c];
      memset(wp + nb, 0, sizeof(float) * (width - nb));
    }
  }
}

/* One output row y: (W, N) at channel c0 (already offset) from the 9 padded input rows, in
 * balanced tiles of at most max_r voxels; a block of nb < width channels goes through tail. */
