/* Slab decomposition of the convolution kernels: running an op slab by slab (depth splits of 2, 3
 * and uneven [1,4,2] planes), with halo planes taken from the neighbouring slabs and weight/bias
 * gradients accumulated across slabs, equals the untiled (one-slab) result within 1e-6 relative.
 * Checked for both the _ref and the _blas variants of the 3x3x3 conv, the transposed conv and the
 * 1x1x1 conv. */
#include <cblas.h>
#include <stdio.h>

#include "convtest.h"
#include "scaffold/ops.h"
#include "testutil.h"

#define RTOL 1e-6
#define D 7
#define H 5
#define W 6

typedef struct {
  const char *name;
  void (*fwd)(float *, const float *, const float *, const float *, const float *, int, int, int, int, int);
  void (*bwd_data)(float *, const float *, const float *, const float *, const float *, int, int, int, int, int);
  void (*bwd_w)(float *, const float *, const float *, const float *, const float *, int, int, int, int, int);
  void (*up_fwd)(float *, const float *, const float *, const float *, int, int, int, int, int);
  void (*up_bwd_data)(float *, const float *, const float *, int, int, int, int, int);
  void (*up_bwd_w)(float *, float *, const float *, const float *, int, int, int, int, int);
  void (*c1_fwd)(float *, const float *, const float *, const float *, size_t, int, int);
  void (*c1_bwd_data)(float *, const float *, const float *, size_t, int, int);
  void (*c1_bwd_w)(float *, float *, const float *, const float *, size_t, int, int);
} variant;

static const variant variants[] = {
    {"ref", sf_conv3d_forward_ref, sf_conv3d_backward_data_ref, sf_conv3d_backward_weights_ref,
     sf_upconv3d_forward_ref, sf_upconv3d_backward_data_ref, sf_upconv3d_backward_weights_ref,
     sf_conv1_forward_ref, sf_conv1_backward_data_ref, sf_conv1_backward_weights_ref},
    {"blas", sf_conv3d_forward, sf_conv3d_backward_data, sf_conv3d_backward_weights,
     sf_upconv3d_forward, sf_upconv3d_backward_data, sf_upconv3d_backward_weights,
     sf_conv1_forward, sf_conv1_backward_data, sf_conv1_backward_weights},
};

typedef struct {
  const char *name;
  int n, sizes[D];
} split;

static const split splits[] = {
    {"[7]", 1, {7}}, {"[4,3]", 2, {4, 3}}, {"[3,2,2]", 3, {3, 2, 2}}, {"[1,4,2]", 3, {1, 4, 2}},
    {"[1,1,1,1,1,1,1]", 7, {1, 1, 1, 1, 1, 1, 1}},
};

static void check_conv3(const variant *v, const split *s, int Ci, int Co)
{
  size_t px = (size_t)H * W * Ci, py = (size_t)H * W * Co, nw = (size_t)27 * Ci * Co;
  float *x = ct_rand(D * px, 1), *w = ct_rand(nw, 2), *dy = ct_rand(D * py, 3), *dw0 = ct_rand(nw, 4);
  float *y1 = ct_zeros(D * py), *dx1 = ct_zeros(D * px), *dw1 = ct_copy(dw0, nw);
  v->fwd(y1, NULL, x, NULL, w, D, H, W, Ci, Co);
  v->bwd_data(dx1, NULL, dy, NULL, w, D, H, W, Ci, Co);
  v->bwd_w(dw1, NULL, x, NULL, dy, D, H, W, Ci, Co);

  float *ys = ct_rand(D * py, 90), *dxs = ct_rand(D * px, 91), *dws = ct_copy(dw0, nw);
  for (int k = 0, d0 = 0; k < s->n; d0 += s->sizes[k++]) {
    int nd = s->sizes[k];
    const float *xlo = ct_plane(x, d0 - 1, D, H, W, Ci), *xhi = ct_plane(x, d0 + nd, D, H, W, Ci);
    const float *glo = ct_plane(dy, d0 - 1, D, H, W, Co), *ghi = ct_plane(dy, d0 + nd, D, H, W, Co);
    v->fwd(ys + d0 * py, xlo, x + d0 * px, xhi, w, nd, H, W, Ci, Co);
    v->bwd_data(dxs + d0 * px, glo, dy + d0 * py, ghi, w, nd, H, W, Ci, Co);
    v->bwd_w(dws, xlo, x + d0 * px, xhi, dy + d0 * py, nd, H, W, Ci, Co);
  }
  char nm[160];
  snprintf(nm, sizeof nm, "conv3d %s %d->%d slabs %s forward", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, ys, y1, D * py, RTOL);
  snprintf(nm, sizeof nm, "conv3d %s %d->%d slabs %s dX", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, dxs, dx1, D * px, RTOL);
  snprintf(nm, sizeof nm, "conv3d %s %d->%d slabs %s dW", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, dws, dw1, nw, RTOL);
  free(x), free(w), free(dy), free(dw0), free(y1), free(dx1), free(dw1), free(ys), free(dxs), free(dws);
}

/* Transposed conv: input slab [d0, d0+nd) -> output planes [2*d0, 2*(d0+nd)); no halo. */
static void check_up(const variant *v, const split *s, int Ci, int Co)
{
  size_t px = (size_t)H * W * Ci, py = (size_t)4 * H * W * Co, nw = (size_t)8 * Ci * Co; /* py: one output plane */
  float *x = ct_rand(D * px, 11), *w = ct_rand(nw, 12), *b = ct_rand(Co, 13), *dy = ct_rand(2 * D * py, 14);
  float *y1 = ct_zeros(2 * D * py), *dx1 = ct_zeros(D * px), *dw1 = ct_zeros(nw), *db1 = ct_zeros(Co);
  v->up_fwd(y1, x, w, b, D, H, W, Ci, Co);
  v->up_bwd_data(dx1, dy, w, D, H, W, Ci, Co);
  v->up_bwd_w(dw1, db1, x, dy, D, H, W, Ci, Co);

  float *ys = ct_rand(2 * D * py, 92), *dxs = ct_rand(D * px, 93), *dws = ct_zeros(nw), *dbs = ct_zeros(Co);
  for (int k = 0, d0 = 0; k < s->n; d0 += s->sizes[k++]) {
    int nd = s->sizes[k];
    v->up_fwd(ys + 2 * d0 * py, x + d0 * px, w, b, nd, H, W, Ci, Co);
    v->up_bwd_data(dxs + d0 * px, dy + 2 * d0 * py, w, nd, H, W, Ci, Co);
    v->up_bwd_w(dws, dbs, x + d0 * px, dy + 2 * d0 * py, nd, H, W, Ci, Co);
  }
  char nm[160];
  snprintf(nm, sizeof nm, "upconv3d %s %d->%d slabs %s forward", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, ys, y1, 2 * D * py, RTOL);
  snprintf(nm, sizeof nm, "upconv3d %s %d->%d slabs %s dX", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, dxs, dx1, D * px, RTOL);
  snprintf(nm, sizeof nm, "upconv3d %s %d->%d slabs %s dW", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, dws, dw1, nw, RTOL);
  snprintf(nm, sizeof nm, "upconv3d %s %d->%d slabs %s db", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, dbs, db1, Co, RTOL);
  free(x), free(w), free(b), free(dy), free(y1), free(dx1), free(dw1), free(db1);
  free(ys), free(dxs), free(dws), free(dbs);
}

/* 1x1x1 conv: a slab is a range of voxels. */
static void check_conv1(const variant *v, const split *s, int Ci, int Co)
{
  size_t pv = (size_t)H * W, n = D * pv;
  float *x = ct_rand(n * Ci, 21), *w = ct_rand((size_t)Ci * Co, 22), *b = ct_rand(Co, 23), *dy = ct_rand(n * Co, 24);
  float *y1 = ct_zeros(n * Co), *dx1 = ct_zeros(n * Ci), *dw1 = ct_zeros((size_t)Ci * Co), *db1 = ct_zeros(Co);
  v->c1_fwd(y1, x, w, b, n, Ci, Co);
  v->c1_bwd_data(dx1, dy, w, n, Ci, Co);
  v->c1_bwd_w(dw1, db1, x, dy, n, Ci, Co);

  float *ys = ct_rand(n * Co, 94), *dxs = ct_rand(n * Ci, 95), *dws = ct_zeros((size_t)Ci * Co), *dbs = ct_zeros(Co);
  for (int k = 0, d0 = 0; k < s->n; d0 += s->sizes[k++]) {
    size_t v0 = d0 * pv, nv = s->sizes[k] * pv;
    v->c1_fwd(ys + v0 * Co, x + v0 * Ci, w, b, nv, Ci, Co);
    v->c1_bwd_data(dxs + v0 * Ci, dy + v0 * Co, w, nv, Ci, Co);
    v->c1_bwd_w(dws, dbs, x + v0 * Ci, dy + v0 * Co, nv, Ci, Co);
  }
  char nm[160];
  snprintf(nm, sizeof nm, "conv1 %s %d->%d slabs %s forward", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, ys, y1, n * Co, RTOL);
  snprintf(nm, sizeof nm, "conv1 %s %d->%d slabs %s dX", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, dxs, dx1, n * Ci, RTOL);
  snprintf(nm, sizeof nm, "conv1 %s %d->%d slabs %s dW", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, dws, dw1, (size_t)Ci * Co, RTOL);
  snprintf(nm, sizeof nm, "conv1 %s %d->%d slabs %s db", v->name, Ci, Co, s->name);
  sf_check_close_f(nm, dbs, db1, Co, RTOL);
  free(x), free(w), free(b), free(dy), free(y1), free(dx1), free(dw1), free(db1);
  free(ys), free(dxs), free(dws), free(dbs);
}

int main(void)
{
  openblas_set_num_threads(1);
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
    for (size_t j = 0; j < sizeof splits / sizeof splits[0]; j++) {
      check_conv3(&variants[i], &splits[j], 3, 5);
      check_conv3(&variants[i], &splits[j], 8, 4);
      check_conv3(&variants[i], &splits[j], 4, 32);   /* _blas: scattered dX, untransposed dW */
      check_conv3(&variants[i], &splits[j], 16, 256); /* _blas: dX with one GEMM per tap */
      check_up(&variants[i], &splits[j], 6, 3);
      check_conv1(&variants[i], &splits[j], 8, 6);
    }
  return sf_test_end();
}
