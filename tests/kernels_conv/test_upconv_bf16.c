/* The bf16 transposed convolution (torch_amp: 1 with the AMX engine: sf_upconv3d_*_bf16 over
 * src/kernels/gemm/gemm_amx.c) against the naive fp32 _ref kernels, forward, dX and
 * dW/db (accumulated onto a non-zero gradient), the same three checks as kernels_conv_bf16:
 *  - on operands already rounded to bf16 the products are exact, so the kernel must equal the reference to
 *    fp32 summation error (max relative error <= 1e-5);
 *  - on the raw operands it stays within bf16's tolerance (<= 2e-2) and differs from fp32 by more than
 *    summation error (>= 1e-4), so the operands really are rounded;
 *  - db (fp32 in every path) matches the reference to 1e-5.
 * Shapes: channel counts below, at and above a tile (16) and a K chunk (32), odd ones, K past 32 in several
 * chunks, rows past a 2 x 2 block; for the in-place AMX kernels, tiles of 16, 8 and 4 voxels, 8 and 16-multiple
 * outputs, padded K chunks and a partial dW block. Skipped (exit 77) without the AMX engine. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bf16test.h"
#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "testutil.h"

/* Both layers share the checks: in (n_in), out (n_out), weights (nw), bias (nb); fn pointers per layer */
typedef struct {
  const char *name;
  size_t n_in, n_out, nw, nb;
  void (*fwd)(float *y, const float *x, const float *w, const float *b, const void *shape);
  void (*fwd_ref)(float *y, const float *x, const float *w, const float *b, const void *shape);
  void (*bwd)(float *dx, const float *dy, const float *w, const void *shape);
  void (*bwd_ref)(float *dx, const float *dy, const float *w, const void *shape);
  void (*dw)(float *dw, float *db, const float *x, const float *dy, const void *shape);
  void (*dw_ref)(float *dw, float *db, const float *x, const float *dy, const void *shape);
  const void *shape;
} layer;

static void check_layer(const layer *L, uint64_t s)
{
  float *x = ct_rand(L->n_in, s), *dy = ct_rand(L->n_out, s + 1), *w = ct_rand(L->nw, s + 2), *b = ct_rand(L->nb, s + 3);
  float *rx = ct_rounded(x, L->n_in), *rdy = ct_rounded(dy, L->n_out), *rw = ct_rounded(w, L->nw);
  char nm[160];
  { /* forward (bias in fp32) */
    float *exact = ct_zeros(L->n_out), *fp32 = ct_zeros(L->n_out), *out = ct_rand(L->n_out, 99);
    L->fwd_ref(exact, rx, rw, b, L->shape);
    L->fwd_ref(fp32, x, w, b, L->shape);
    L->fwd(out, x, w, b, L->shape);
    snprintf(nm, sizeof nm, "%s forward", L->name);
    ct_check_bf16(nm, out, exact, fp32, L->n_out);
    free(exact), free(fp32), free(out);
  }
  { /* dX */
    float *exact = ct_zeros(L->n_in), *fp32 = ct_zeros(L->n_in), *out = ct_rand(L->n_in, 98);
    L->bwd_ref(exact, rdy, rw, L->shape);
    L->bwd_ref(fp32, dy, w, L->shape);
    L->bwd(out, dy, w, L->shape);
    snprintf(nm, sizeof nm, "%s dX", L->name);
    ct_check_bf16(nm, out, exact, fp32, L->n_in);
    free(exact), free(fp32), free(out);
  }
  { /* dW, db accumulated onto a gradient of a gradient's size; compare the added parts */
    float *dw0 = ct_rand(L->nw, s + 4), *db0 = ct_rand(L->nb, s + 5);
    float *exact = ct_copy(dw0, L->nw), *fp32 = ct_copy(dw0, L->nw), *out = ct_copy(dw0, L->nw);
    float *db_ref = ct_copy(db0, L->nb), *db = ct_copy(db0, L->nb), *db_scratch = ct_copy(db0, L->nb);
    L->dw_ref(exact, db_scratch, rx, rdy, L->shape);
    L->dw_ref(fp32, db_ref, x, dy, L->shape);
    L->dw(out, db, x, dy, L->shape);
    for (size_t i = 0; i < L->nw; i++) exact[i] -= dw0[i], fp32[i] -= dw0[i], out[i] -= dw0[i];
    snprintf(nm, sizeof nm, "%s dW, accumulated", L->name);
    ct_check_bf16(nm, out, exact, fp32, L->nw);
    snprintf(nm, sizeof nm, "%s db (fp32), accumulated", L->name);
    sf_check_close_f(nm, db, db_ref, L->nb, RTOL_EXACT);
    free(dw0), free(db0), free(exact), free(fp32), free(out), free(db_ref), free(db), free(db_scratch);
  }
  free(x), free(dy), free(w), free(b), free(rx), free(rdy), free(rw);
}

/* ---- the transposed convolution: x (nd,H,W,Cin) -> y (2nd,2H,2W,Cout) ---- */
typedef struct {
  int nd, H, W, Cin, Cout;
} up_shape;
#define UP(sh) const up_shape *u = sh
static void up_fwd(float *y, const float *x, const float *w, const float *b, const void *sh)
{
  UP(sh);
  sf_upconv3d_forward_bf16(y, x, w, b, u->nd, u->H, u->W, u->Cin, u->Cout);
}
static void up_fwd_ref(float *y, const float *x, const float *w, const float *b, const void *sh)
{
  UP(sh);
  sf_upconv3d_forward_ref(y, x, w, b, u->nd, u->H, u->W, u->Cin, u->Cout);
}
static void up_bwd(float *dx, const float *dy, const float *w, const void *sh)
{
  UP(sh);
  sf_upconv3d_backward_data_bf16(dx, dy, w, u->nd, u->H, u->W, u->Cin, u->Cout);
}
static void up_bwd_ref(float *dx, const float *dy, const float *w, const void *sh)
{
  UP(sh);
  sf_upconv3d_backward_data_ref(dx, dy, w, u->nd, u->H, u->W, u->Cin, u->Cout);
}
static void up_dw(float *dw, float *db, const float *x, const float *dy, const void *sh)
{
  UP(sh);
  sf_upconv3d_backward_weights_bf16(dw, db, x, dy, u->nd, u->H, u->W, u->Cin, u->Cout);
}
static void up_dw_ref(float *dw, float *db, const float *x, const float *dy, const void *sh)
{
  UP(sh);
  sf_upconv3d_backward_weights_ref(dw, db, x, dy, u->nd, u->H, u->W, u->Cin, u->Cout);
}

static void check_upconv(int nd, int H, int W, int Cin, int Cout, uint64_t s)
{
  up_shape sh = {nd, H, W, Cin, Cout};
  size_t v = (size_t)nd * H * W;
  char name[96];
  snprintf(name, sizeof name, "bf16 upconv3d %dx%dx%d %d->%d", nd, H, W, Cin, Cout);
  layer L = {name, v * Cin, 8 * v * Cout, (size_t)8 * Cin * Cout, (size_t)Cout, up_fwd, up_fwd_ref, up_bwd, up_bwd_ref,
             up_dw, up_dw_ref, &sh};
  check_layer(&L, s);
}

int main(void)
{
  if (sf_bf16_engine_set_for_testing(SF_BF16_AMX) != SF_BF16_AMX) {
    printf("SKIPPED: the bf16 transposed convolution runs on AMX tiles, and this CPU (or its OS) offers "
           "no AMX-BF16 (best engine here: %s)\n",
           sf_bf16_engine_name(sf_bf16_engine_supported()));
    return 77;
  }
  check_upconv(2, 3, 5, 16, 8, 10);   /* base 8's first Up: 8*Cout = 64 columns, K = 16 */
  check_upconv(1, 4, 4, 64, 32, 20);  /* K = 64: two chunks; 8*Cout = 256 */
  check_upconv(2, 2, 3, 3, 5, 30);    /* odd: K = 3 (rounded to 4), 8*Cout = 40 (a partial tile) */
  check_upconv(3, 3, 3, 17, 33, 40);  /* K = 17 / 8*33 = 264, dW segments of odd rows */
  check_upconv(1, 2, 2, 128, 64, 50); /* a deep level: K = 128, dX K = 512 */
  /* the in-place AMX kernels (upconv3d_amx.c): tiles of 16, 8 and 4 voxels along a row */
  check_upconv(2, 2, 16, 32, 16, 60); /* ps 5 b16's top level: rows of 16, dX chunks of one child pair */
  check_upconv(1, 3, 16, 16, 8, 70);  /* 8 outputs: a 16-column tile is a child pair, dX chunks of 16 */
  check_upconv(2, 2, 8, 48, 48, 80);  /* rows of 8, K = 48 padded to 2 chunks, dX chunks across children, 3 C tiles */
  check_upconv(1, 3, 12, 16, 16, 90); /* rows of 4; 36 voxels: dW's last block of 32 partial */
  return sf_test_end();
}
