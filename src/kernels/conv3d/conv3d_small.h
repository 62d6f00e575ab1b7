/* The plain-loop 3x3x3 convolution for layers of a few channels (conv3d_small.c), one of the variants that
 * only the family's entry (conv3d.c) chooses between and the kernel tests call directly. Same arguments as
 * the references in scaffold/ops.h; Cin and Cout at most SF_CONV_SMALL_MAX_C. */
#ifndef SF_CONV3D_SMALL_H
#define SF_CONV3D_SMALL_H

#define SF_CONV_SMALL_MAX_C 16 /* what it runs; the rule that picks it is in conv3d.c */

void sf_conv3d_forward_small(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                             int H, int W, int Cin, int Cout);
void sf_conv3d_backward_data_small(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                   const float *w, int nd, int H, int W, int Cin, int Cout);
/* the weight gradient, accumulated, all 27 taps */
void sf_conv3d_backward_weights_small(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                      const float *dy, int nd, int H, int W, int Cin, int Cout);

#endif
