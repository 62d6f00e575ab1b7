/* Shared by the direct convolution kernels (conv3d_direct.c, conv3d_direct_dw.c) and their per-ISA
 * register-block tables (conv3d_direct_{avx512,avx2,c}.c, one template conv3d_direct_tiles.h):
 * the table type, workspace slots and the ring of W-padded input planes. */
#ifndef SF_CONV3D_DIRECT_INTERNAL_H
#define SF_CONV3D_DIRECT_INTERNAL_H

#include <stddef.h>

/* Workspace slots: 0 and 1 (the im2col kernels' slots, idle while a direct kernel runs) hold the
 * zero-padded copies of a channel block narrower than a vector (output row; dy group, gradient) */
#define SF_DIRECT_TAIL_SLOT 0
#define SF_DIRECT_TAIL2_SLOT 1
#define SF_DIRECT_RING_SLOT 2
#define SF_DIRECT_PACK_SLOT 3
#define SF_DIRECT_MAX_R 12 /* most register-block rows of any set */

/* The kernel sets for the preprocessor (conv3d_direct_vec.h), as SF_ISA_* in scaffold/cpu_isa.h */
#define SF_DIRECT_SET_C 1
#define SF_DIRECT_SET_AVX2 2
#define SF_DIRECT_SET_AVX512 3

/* Forward/dX register block: y[r][0 .. vw*NV) for r < R, rows ystride apart; rows[t9] the padded
 * input row of tap (kd,kh) = (t9/3, t9%3) at this output row (NULL: outside the volume), x0 the
 * first output voxel, wb: (27*K, vw*NV) the block's packed weights, K input channels. */
typedef void (*sf_direct_tile_fn)(float *y, size_t ystride, const float *const *rows, int x0, const float *wb,
                                  int K);
/* The slab-blocked driver's register block (conv3d_direct_blocked.c): R output voxels (at
 * y + yoff[r], vw*NV channels) += one tap's terms over kc input channels, voxel r's input at
 * x + xoff[r]; wb: (kc, vw*NV) packed weights. */
typedef void (*sf_direct_tap_fn)(float *y, const size_t *yoff, const float *x, const size_t *xoff, const float *wb,
                                 int kc);
/* dW register block: R rows of the gradient dwb (dstride apart, offset to tap, first input and
 * output channel) += sum over the group's voxels of x * dy. xrows[i]: the padded input row under
 * output row i of the group for this tap, offset by kw voxels and the first input channel (NULL:
 * outside the volume), voxels Cin apart; dy: the group's first output row at the block's first
 * channel, voxels gstride apart, rows W*gstride apart. */
typedef void (*sf_direct_dw_fn)(float *dwb, size_t dstride, const float *const *xrows, const float *dy,
                                size_t gstride, int nrows, int W, int Cin);

/* Packed dW register block (conv3d_direct_dw_packed.c): R gradient rows (dstride apart) += sum over
 * m voxels of xp[v][r] * gp[v][..], xp: (m, R), gp: (m, vw*NV) packed panels. */
typedef void (*sf_direct_dwp_fn)(float *dwb, size_t dstride, const float *xp, const float *gp, int m);

/* One kernel set's register blocks: [NV-1][R-1] for NV vectors of vw floats, R <= max_r rows */
typedef struct {
  int vw, max_r;
  sf_direct_tile_fn tile[2][SF_DIRECT_MAX_R];
  sf_direct_tap_fn tap[2][SF_DIRECT_MAX_R];
  sf_direct_dw_fn dw[2][SF_DIRECT_MAX_R];
  sf_direct_dwp_fn dwp[2][SF_DIRECT_MAX_R];
} sf_direct_kernels;

extern const sf_direct_kernels sf_direct_kernels_c;
#if defined(__x86_64__) && defined(__GNUC__)
#define SF_HAVE_X86_DIRECT 1
extern const sf_direct_kernels sf_direct_kernels_avx2, sf_direct_kernels_avx512;
#else
#define SF_HAVE_X86_DIRECT 0
#endif

/* The table for a conv producing `nout` channels per voxel (forward: Cout, dX: Cin, dW: Cout) under
 * the active kernel set (scaffold/cpu_isa.h): that set's, except AVX-512 with nout an odd multiple
 * of 8, which runs the AVX2 blocks (every AVX-512 CPU has AVX2) rather than half-empty zmm vectors.
 * Aborts when the set is SF_ISA_NONE. */
const sf_direct_kernels *sf_direct_kernels_for(int nout);

/* pl[kd] = input plane d+kd-1 of a slab (lo: plane -1, x: planes 0..nd-1, hi: plane nd; NULL
 * halos = the volume's faces) as a (H, W+2, C) plane with a zero voxel at both ends of each row,
 * or NULL where there is no plane. ring: 3 such planes; held[3] = {-2,-2,-2} before plane 0, then
 * kept by the caller between calls, so each plane is copied once as d advances. */
void sf_direct_ring_planes(const float *pl[3], float *ring, int held[3], int d, const float *lo, const float *x,
                           const float *hi, int nd, int H, int W, int C);

/* dst: (H, W+2, C) = src: (H,W,C) with a zero voxel before and after every row */
void sf_direct_pad_plane(float *dst, const float *src, int H, int W, int C);

/* wp: (27*K, width) = the weights of output channels [c0, c0+nb), zero beyond nb (a last block
 * narrower than its vectors), contiguous so a register block streams them sequentially; K is the
 * input channel count of the conv being run.
 * Forward (flip == 0): wp[k][c][j] = w[k][c][c0+j], w: (27, Cin=K, Cout).
 * dX (flip == 1), a forward conv of dy: wp[k][co][j] = w[26-k][c0+j][co], w: (27, Cin, Cout=K), the
 *   taps mirrored and the channels transposed. */
void sf_direct_pack_weights(float *wp, const float *w, int Cin, int Cout, int flip, int c0, int nb, int width);

/* The slab-blocked forward/dX driver (conv3d_direct_blocked.c) and when it replaces the ring
 * driver of conv3d_direct.c: (K, N) = (input, output) channels of the conv being run. */
int sf_direct_blocked_pays(const sf_direct_kernels *ks, int H, int W, int K, int N);
void sf_direct_conv_blocked(const sf_direct_kernels *ks, float *y, const float *x_lo, const float *x,
                            const float *x_hi, const float *w, int nd, int H, int W, int Cin, int Cout, int flip);

/* The packed weight gradient (conv3d_direct_dw_packed.c) of taps [t0, t1), for Cout a multiple of
 * the vector width: dw (taps t0.., Cin, Cout) += as sf_conv3d_backward_weights_taps_direct. */
void sf_direct_dw_packed(const sf_direct_kernels *ks, float *dw, int t0, int t1, const float *x_lo, const float *x,
                         const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout);

#endif
