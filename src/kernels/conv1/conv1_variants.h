/* The 1x1x1 convolution's variants, which only the family's entry (conv1.c) chooses between and the
 * kernel tests call directly; same arguments as the references (scaffold/ops.h). */
#ifndef SF_CONV1_VARIANTS_H
#define SF_CONV1_VARIANTS_H

#include <stddef.h>

/* OpenBLAS sgemm on row blocks (conv1_blas.c) */
void sf_conv1_forward_blas(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout);
void sf_conv1_backward_data_blas(float *dx, const float *dy, const float *w, size_t n, int Cin, int Cout);
void sf_conv1_backward_weights_blas(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin, int Cout);
/* register-blocked small-GEMM kernels of the active CPU kernel set (conv1_direct.c) */
void sf_conv1_forward_direct(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout);
void sf_conv1_backward_data_direct(float *dx, const float *dy, const float *w, size_t n, int Cin, int Cout);
void sf_conv1_backward_weights_direct(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin,
                                      int Cout);

#endif
