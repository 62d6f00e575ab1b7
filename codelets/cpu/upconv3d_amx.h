/* The AMX transposed convolution kernels (upconv3d_amx.c), which the _bf16 entry points of upconv3d_direct.c
 * take where sf_upconv3d_amx_fits says the shape allows (same contracts as scaffold/ops.h's _bf16 kernels). */
#ifndef SF_UPCONV3D_AMX_H
#define SF_UPCONV3D_AMX_H

/* 1 when the AMX kernels take this layer: W a multiple of 4, Cin of 16, Cout of 16 or 8 */
int sf_upconv3d_amx_fits(int W, int Cin, int Cout);
void sf_upconv3d_amx_forward(float *y, const float *x, const float *w, const float *b, int nd, int H, int W, int Cin,
                             int Cout);
void sf_upconv3d_amx_backward_data(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                   int Cout);
void sf_upconv3d_amx_backward_weights(float *dw, float *db, const float *x, const float *dy, int nd, int H, int W,
                                      int Cin, int Cout);

#endif
