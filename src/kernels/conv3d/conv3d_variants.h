/* The 3x3x3 convolution's variants, which only the family's entry (conv3d.c) chooses between and the
 * kernel tests call directly. Same arguments as the references in scaffold/ops.h; none calls an entry.
 *   im2col (conv3d_im2col.c):   im2col + OpenBLAS sgemm, any shape
 *   direct (conv3d_direct*.c):  register blocks of the active CPU kernel set (scaffold/cpu_isa.h), any
 *                               channel counts; needs sf_conv3d_direct_available()
 *   winograd (conv3d_winograd.c): F(2x2x2, 3x3x3) where sf_conv3d_winograd_fits (K, N = the input and
 *                               output channels of the conv being run: forward Cin, Cout; dX Cout, Cin)
 *   bf16 (conv3d_bf16*.c, conv3d_amx*.c): conv3d_bf16_internal.h */
#ifndef SF_CONV3D_VARIANTS_H
#define SF_CONV3D_VARIANTS_H

#include "scaffold/kernel_tuning.h"

#ifndef SF_CONV_DW_T_COUT
#define SF_CONV_DW_T_COUT 17 /* the im2col dW forms its GEMM transposed when Cout < this (taps need >=) */
/* Runs variant v for shape s (conv3d_run.c): the one dispatcher of the entry and the tuner. Arguments in the
 * order of the direction's entry: forward (y; x, its halo planes; w), dX (dx; dy planes; w), dW (dw; x planes;
 * dy), dW taps t0..t1 (the same); t0, t1 are read for taps only. */
void sf_conv3d_run(sf_conv3d_variant v, const sf_conv3d_shape *s, float *out, const float *lo, const float *mid,
                   const float *hi, const float *other, int t0, int t1);

#endif

void sf_conv3d_forward_im2col(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                              int H, int W, int Cin, int Cout);
void sf_conv3d_backward_data_im2col(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                    const float *w, int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_weights_im2col(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                       const float *dy, int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_weights_taps_im2col(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                            const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                            int Cout);

/* A kernel set is active (SF_CONV_DIRECT not set to 0) */
int sf_conv3d_direct_available(void);
void sf_conv3d_forward_direct(float *y, const float *x_lo, const float *x, const float *x_hi,
                              const float *w, int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_data_direct(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                    const float *w, int nd, int H, int W, int Cin, int Cout);
/* weight gradients (accumulated): all taps, or the rows of taps [t0, t1) */
void sf_conv3d_backward_weights_direct(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                       const float *dy, int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_weights_taps_direct(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                            const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                            int Cout);

/* wf: (27, Cout, Cin) = w: (27, Cin, Cout) with the taps mirrored (k -> 26-k) and each tap's matrix
 * transposed: the weights of dX as a forward conv of dy (conv3d_im2col.c) */
void sf_conv3d_mirror_weights(float *wf, const float *w, int Cin, int Cout);

/* The shapes Winograd can run: nd, H, W even; K, N multiples of the vector width; K*N small enough for
 * the transformed weights; a kernel set active */
int sf_conv3d_winograd_fits(int nd, int H, int W, int K, int N);
void sf_conv3d_forward_winograd(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w,
                                int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_data_winograd(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                      const float *w, int nd, int H, int W, int Cin, int Cout);
/* Winograd with its 64 GEMMs in bf16 on VDPBF16PS (torch_amp: 1; conv3d_winograd_bf16_tiles.h, dW
 * conv3d_winograd_bf16_dw_tiles.h), transforms in fp32: fits nd, H, W even, K, N multiples of 16,
 * K*N <= 256*256, a CPU with AVX512_BF16 and the AVX-512 kernel set active (it runs that set's transforms) */
int sf_conv3d_winograd_bf16_fits(int nd, int H, int W, int K, int N);
void sf_conv3d_forward_winograd_bf16(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w,
                                     int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_data_winograd_bf16(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                           const float *w, int nd, int H, int W, int Cin, int Cout);
/* its weight gradient (accumulated), the rows of taps [t0, t1) as sf_conv3d_weights_vdpbf16: fits for K, N = Cin,
 * Cout; a range of taps runs the GEMMs of the points those taps read (48 of 64 for either half) */
void sf_conv3d_backward_weights_winograd_bf16(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                              const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                              int Cout);
/* the weight gradient (accumulated, all 27 taps): K, N = Cin, Cout */
void sf_conv3d_backward_weights_winograd(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                         const float *dy, int nd, int H, int W, int Cin, int Cout);

/* Runs variant v for shape s (conv3d_run.c): the one dispatcher of the entry and the tuner. Arguments in the
 * order of the direction's entry: forward (y; x, its halo planes; w), dX (dx; dy planes; w), dW (dw; x planes;
 * dy), dW taps t0..t1 (the same); t0, t1 are read for taps only. */
void sf_conv3d_run(sf_conv3d_variant v, const sf_conv3d_shape *s, float *out, const float *lo, const float *mid,
                   const float *hi, const float *other, int t0, int t1);

#endif
