/* Double-precision mirrors of the element-wise ops, written from the textbook definitions (not from
 * the kernels' folded forms) so the finite-difference tests have an independent, accurate oracle.
 * Layouts as in ops.h: (n,C) voxels x channels, NDHWC. */
#ifndef ELEM_MIRROR_H
#define ELEM_MIRROR_H

#include <stddef.h>
#include <stdint.h>

/* y = [relu](gamma*(x-mean_g)/sqrt(var_g+eps) + beta); pre (may be NULL) gets the value before ReLU. */
void mir_gn_forward(double *y, double *pre, const double *x, const double *gamma, const double *beta, size_t n,
                    int C, int G, double eps, int relu);
/* dx, dgamma, dbeta (written) of sum(dy*y): dx = rstd*(dxhat - mean(dxhat) - xhat*mean(dxhat*xhat)). */
void mir_gn_backward(double *dx, double *dgamma, double *dbeta, const double *dy, const double *x,
                     const double *gamma, const double *beta, size_t n, int C, int G, double eps, int relu);

/* loss terms of spec §6.2-6.3 for z: (n,K), with the S == 0 -> S := I rule */
double mir_loss(double *ce, double *dice_fg, const double *z, const uint16_t *lab, const double *cw, size_t n, int K);
/* dz: (n,K) written, from dL/dP (explicit) chained through the full softmax Jacobian */
void mir_loss_backward(double *dz, const double *z, const uint16_t *lab, const double *cw, size_t n, int K);

/* 2x2x2 max pool of x: (2nd,2H,2W,C) into y: (nd,H,W,C) (no NaN handling needed here) */
void mir_maxpool(double *y, const double *x, int nd, int H, int W, int C);

#endif
