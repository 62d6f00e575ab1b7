/* The transposed convolution's variants, which only the family's entry (upconv3d.c) chooses between and
 * the kernel tests call directly; same arguments as the references (scaffold/ops.h). */
#ifndef SF_UPCONV3D_VARIANTS_H
#define SF_UPCONV3D_VARIANTS_H

/* OpenBLAS sgemm over chunks of voxels' children (upconv3d_blas.c) */
void sf_upconv3d_forward_blas(float *y, const float *x, const float *w, const float *b, int nd, int H, int W, int Cin,
                              int Cout);
void sf_upconv3d_backward_data_blas(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                    int Cout);
void sf_upconv3d_backward_weights_blas(float *dw, float *db, const float *x, const float *dy, int nd, int H, int W,
                                       int Cin, int Cout);
/* the direct small-GEMM kernel of the active CPU kernel set (upconv3d_direct.c), fp32 or, _direct_amx, bf16
 * operands with fp32 sums on AMX tiles */
void sf_upconv3d_forward_direct(float *y, const float *x, const float *w, const float *b, int nd, int H, int W,
                                int Cin, int Cout);
void sf_upconv3d_backward_data_direct(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                      int Cout);
void sf_upconv3d_backward_weights_direct(float *dw, float *db, const float *x, const float *dy, int nd, int H, int W,
                                         int Cin, int Cout);
void sf_upconv3d_forward_direct_amx(float *y, const float *x, const float *w, const float *b, int nd, int H, int W,
                                    int Cin, int Cout);
void sf_upconv3d_backward_data_direct_amx(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                          int Cout);
void sf_upconv3d_backward_weights_direct_amx(float *dw, float *db, const float *x, const float *dy, int nd, int H,
                                             int W, int Cin, int Cout);
/* The AMX kernels on the tensors in place (upconv3d_amx.c) */
/* 1 when the AMX kernels take this layer: W a multiple of 4, Cin of 16, Cout of 16 or 8 */
int sf_upconv3d_amx_fits(int W, int Cin, int Cout);
void sf_upconv3d_amx_forward(float *y, const float *x, const float *w, const float *b, int nd, int H, int W, int Cin,
                             int Cout);
void sf_upconv3d_amx_backward_data(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                   int Cout);
void sf_upconv3d_amx_backward_weights(float *dw, float *db, const float *x, const float *dy, int nd, int H, int W,
                                      int Cin, int Cout);

#endif
