/* The bias gradient shared by the 1x1x1 and transposed convolution variants (common/bias_grad.c). */
#ifndef SF_BIAS_GRAD_H
#define SF_BIAS_GRAD_H

#include <stddef.h>

/* db: (C) += column sums of g: (n, C), each a running double sum in row order (the same bits on every path) */
void sf_bias_grad_rows(float *db, const float *g, size_t n, int C);

#endif
