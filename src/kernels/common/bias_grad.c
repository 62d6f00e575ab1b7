/* The bias gradient of the 1x1x1 and transposed convolutions: column sums of the output gradient, each a
 * running double sum in row order, so every variant (OpenBLAS, direct, AMX) adds the same bits. */
#include <stddef.h>

#include "bias_grad.h"

/* acc[c] += g[i][c0 + c] over the n rows in order, c < m: a fixed m lets the compiler keep acc in vector registers
 * (the sums in memory were a store-to-load chain per row: 3 GB/s) */
static inline __attribute__((always_inline)) void bias_sums(double *restrict acc, const float *restrict g, size_t n,
                                                           int C, int c0, const int m)
{
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < m; c++) acc[c] += g[i * C + c0 + c];
}

#define BIAS_GROUP 32 /* channels summed per pass over the rows */

/* db: (C) += column sums of g: (n, C), each a running double sum in row order (the same bits on every path) */
void sf_bias_grad_rows(float *db, const float *g, size_t n, int C)
{
  for (int c0 = 0; c0 < C; c0 += BIAS_GROUP) {
    int m = C - c0 < BIAS_GROUP ? C - c0 : BIAS_GROUP;
    double acc[BIAS_GROUP] = {0};
    if (m == 32) bias_sums(acc, g, n, C, c0, 32);
    else if (m == 16) bias_sums(acc, g, n, C, c0, 16);
    else if (m == 8) bias_sums(acc, g, n, C, c0, 8);
    else bias_sums(acc, g, n, C, c0, m);
    for (int c = 0; c < m; c++) db[c0 + c] += (float)acc[c];
  }
}
