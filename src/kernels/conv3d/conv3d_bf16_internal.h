/* Shared by the bf16 3x3x3 convolution kernels (conv3d_bf16.c: forward and dX, conv3d_bf16_dw.c: dW, the AMX
 * kernels conv3d_amx*.c, conv3d_bf16_pad.c: the padded slab): the geometry of a slab's zero-padded bf16 copy, the
 * workspace slots, and the engines' kernels that the bf16 entries of conv3d.c choose between.
 *
 * Padded slab: (nd+2, H+2, W+2) voxels of Kp bf16 channels, plane e+1 = input plane e (e = -1..nd, the halos; a
 * NULL halo is zero), a zero voxel around every plane and row, then SF_BF16_MARGIN zero voxels past the end.
 * Every tap of every output voxel then reads inside it without a border test: output voxel (d,h,w) sits at
 * padded index sf_bf16_pidx(d,h,w), its tap t input at that plus sf_bf16_tap_off(t). */
#ifndef SF_CONV3D_BF16_INTERNAL_H
#define SF_CONV3D_BF16_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/bf16_internal.h"

#define SF_BF16_MARGIN                                                                                                 \
  2 /* zero voxels past the last plane: dW's pair of a last odd voxel reads                                            \
       one */

/* Workspace slots of the bf16 kernels (the fp32 kernels' slots: no kernel runs inside another) */
#define SF_BF16_SLOT_X 2    /* the padded slab */
#define SF_BF16_SLOT_PACK 3 /* packed weights (forward/dX), packed output gradient (dW) */
#define SF_BF16_SLOT_AUX 0  /* fp32 staging of the weights (forward/dX), the voxel-pair copy (dW) */
#define SF_BF16_SLOT_LIST 1 /* dW: the output voxel pairs */

static inline size_t sf_bf16_pad_voxels(int nd, int H, int W)
{
  return (size_t)(nd + 2) * (H + 2) * (W + 2) + SF_BF16_MARGIN;
}
static inline size_t sf_bf16_pidx(int d, int h, int w, int H, int W)
{
  return ((size_t)(d + 1) * (H + 2) + (size_t)(h + 1)) * (W + 2) + (size_t)(w + 1);
}
static inline ptrdiff_t sf_bf16_tap_off(int t, int H, int W)
{
  return ((ptrdiff_t)(t / 9 - 1) * (H + 2) + (t / 3 % 3 - 1)) * (W + 2) + (t % 3 - 1);
}

/* The engines' kernels (conv3d_bf16*.c, conv3d_amx*.c), which the bf16 entries of conv3d.c dispatch
 * to: forward (flip 0) or dX (flip 1: x = dy, y = dx), and the dW rows of taps [t0, t1) */
void sf_conv3d_vdpbf16(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd, int H,
                       int W, int Cin, int Cout, int flip);
void sf_conv3d_amx(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd, int H, int W,
                   int Cin, int Cout, int flip);
/* The AMX kernel's weights packed once for every slab (scaffold/ops.h sf_conv3d_bf16_packed_bytes): the bytes (0 when
 * K = flip ? Cout : Cin is not a multiple of 32 or N = flip ? Cin : Cout not of 16, the shapes whose layout depends on
 * the slab), the packing, and sf_conv3d_amx on them (w not read) */
size_t sf_conv3d_amx_packed_bytes(int Cin, int Cout, int flip);
void sf_conv3d_amx_pack(void *wfwd, void *wdx, const float *w, int Cin, int Cout);
void sf_conv3d_amx_packed(float *y, const float *x_lo, const float *x, const float *x_hi, const void *wp, int nd, int H,
                          int W, int Cin, int Cout, int flip);
void sf_conv3d_weights_vdpbf16(float *dw, int t0, int t1, const float *x_lo, const float *x, const float *x_hi,
                               const float *dy, int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_weights_amx(float *dw, int t0, int t1, const float *x_lo, const float *x, const float *x_hi,
                           const float *dy, int nd, int H, int W, int Cin, int Cout);

/* xb: the padded slab of x (K channels per voxel, Kp >= K stored, the rest zero), as above */
void sf_bf16_pad_slab(sf_bf16 *xb, const float *x_lo, const float *x, const float *x_hi, int nd, int H, int W, int K,
                      int Kp);

#endif
