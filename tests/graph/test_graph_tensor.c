/* The slab layer and the halo convention: slab boundaries align across levels (bottleneck plan
 * scaled by 2 per level), the automatic slab count, sample loading into slab handles, and the 3x3x3
 * conv codelets on 3 uneven slabs with halos (forward, dX, dW with RW|COMMUTE and with per-slab
 * partials summed in order) against the untiled naive kernels. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "graph_testlib.h"
#include "scaffold/common.h"
#include "scaffold/graph.h"
#include "scaffold/ops.h"
#include "scaffold/rng.h"
#include "scaffold/tasks.h"
#include "scaffold/tensor.h"
#include "testutil.h"

static void check_bounds(void)
{
  int bad = 0;
  for (int n = 1; n <= 8; n++) {
    int base[SF_MAX_SLABS + 1], lv[SF_MAX_SLABS + 1];
    sf_slab_bounds(base, n, 8, 1);
    for (int scale = 1; scale <= 8; scale *= 2) {
      sf_slab_bounds(lv, n, 8, scale);
      if (lv[0] != 0 || lv[n] != 8 * scale) bad++;
      for (int k = 0; k < n; k++) {
        if (lv[k + 1] - lv[k] < scale) bad++;        /* at least one bottleneck plane per slab */
        if (lv[k] != base[k] * scale) bad++;         /* pool/upconv slab k maps onto slab k */
      }
    }
  }
  SF_CHECK(bad == 0, "%d slab-boundary violations", bad);
  const long small = 32L * 32 * 32 * 8, big = 32L * 32 * 32 * 64; /* top levels: ps 5 b8, ps 5 b64 */
  static const struct {
    int coarse, workers, det;
    long top;
    int want;
    const char *what;
  } cases[] = {
      {8, 1, 0, big, 1, "1 worker: no doubling"},
      {8, 2, 0, small, 2, "2 workers, small slabs"},
      {8, 3, 0, small, 4, "3 workers, small slabs"},
      {8, 2, 0, big, 4, "2 workers, big slabs: doubled"},
      {8, 3, 0, big, 8, "3 workers, big slabs: doubled"},
      {8, 2, 0, 4 * SF_OVERDECOMPOSE_MIN_FLOATS, 4, "doubled at the size floor"},
      {8, 2, 0, 4 * SF_OVERDECOMPOSE_MIN_FLOATS - 1, 2, "one float under the floor"},
      {8, 4, 0, big, 8, "4 workers, big slabs: doubled"},
      {16, 8, 0, big, 8, "8 workers: 16 slabs would fall under the floor"},
      {8, 16, 0, big, 8, "capped by the edge"},
      {2, 4, 0, big, 2, "capped by the edge"},
      {8, 2, 1, big, 4, "deterministic"},
      {8, 2, 1, small, 4, "deterministic, small"},
      {128, 100, 0, big, SF_MAX_SLABS, "capped by SF_MAX_SLABS"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int got = sf_graph_auto_slabs(cases[i].coarse, cases[i].workers, cases[i].det, cases[i].top);
    SF_CHECK(got == cases[i].want, "auto slabs (%s: edge %d, %d workers, top %ld floats): %d, expected %d",
             cases[i].what, cases[i].coarse, cases[i].workers, cases[i].top, got, cases[i].want);
  }
  printf("ok   slab boundaries and automatic slab counts\n");
}

static void fill(float *x, size_t n, uint64_t stream)
{
  sf_rng r;
  sf_rng_seed(&r, 99, stream);
  sf_rng_fill_uniform(x, n, -1.0f, 1.0f, &r);
}

static void check_conv(void)
{
  enum { S = 3 };
  const int D = 11, H = 5, W = 6, Cin = 3, Cout = 4;
  const int d0[S + 1] = {0, 3, 4, 11}; /* uneven, with a one-plane slab */
  const size_t nv = (size_t)D * H * W, nw = (size_t)27 * Cin * Cout;
  sf_tensor x, y, dy, dx;
  sf_tensor_init(&x, "x", D, H, W, Cin, sizeof(float), S, d0);
  sf_tensor_init(&y, "y", D, H, W, Cout, sizeof(float), S, d0);
  sf_tensor_init(&dy, "dy", D, H, W, Cout, sizeof(float), S, d0);
  sf_tensor_init(&dx, "dx", D, H, W, Cin, sizeof(float), S, d0);
  float *hx = sf_malloc(nv * Cin * sizeof(float), "x"), *hdy = sf_malloc(nv * Cout * sizeof(float), "dy");
  float *w = sf_malloc(nw * sizeof(float), "w"), *dw = sf_calloc(nw, sizeof(float), "dw");
  float *dwp = sf_calloc((size_t)S * nw, sizeof(float), "dw partials"), *dw2 = sf_calloc(nw, sizeof(float), "dw2");
  fill(hx, nv * Cin, 1);
  fill(hdy, nv * Cout, 2);
  fill(w, nw, 3);
  sf_handle hw = sf_vector_register(w, nw, sizeof(float), "w");
  sf_handle hdw = sf_vector_register(dw, nw, sizeof(float), "dw");
  sf_handle hdw2 = sf_vector_register(dw2, nw, sizeof(float), "dw2");
  sf_handle hp[S];
  for (int k = 0; k < S; k++) hp[k] = sf_vector_register(dwp + (size_t)k * nw, nw, sizeof(float), "dw.part");
  const sf_topt o = {0};
  for (int k = 0; k < S; k++) {
    size_t v0 = (size_t)d0[k] * H * W, nk = sf_tensor_slab_voxels(&x, k);
    insert_task_sample_load(&o, x.slab[k], hx + v0 * Cin, nk * Cin * sizeof(float));
    insert_task_sample_load(&o, dy.slab[k], hdy + v0 * Cout, nk * Cout * sizeof(float));
  }
  insert_task_zero(&o, hdw);
  for (int k = 0; k < S; k++) {
    insert_task_conv3d_forward(&o, y.slab[k], sf_tensor_lo(&x, k), x.slab[k], sf_tensor_hi(&x, k), hw, NULL, H, W, Cin,
                               Cout);
    insert_task_conv3d_backward_data(&o, dx.slab[k], sf_tensor_lo(&dy, k), dy.slab[k], sf_tensor_hi(&dy, k), hw, NULL,
                                     H, W, Cin, Cout);
    insert_task_conv3d_backward_weights(&o, SF_ACC_COMMUTE, hdw, sf_tensor_lo(&x, k), x.slab[k], sf_tensor_hi(&x, k),
                                        dy.slab[k], H, W, Cin, Cout);
    insert_task_conv3d_backward_weights(&o, SF_ACC_PARTIAL, hp[k], sf_tensor_lo(&x, k), x.slab[k],
                                        sf_tensor_hi(&x, k), dy.slab[k], H, W, Cin, Cout);
  }
  insert_task_sum_f(&o, hdw2, hp, S);
  sf_tensor_acquire(&x, 0);
  sf_tensor_acquire(&y, 0);
  sf_tensor_acquire(&dx, 0);
  sf_handle_acquire(hdw, 0);
  sf_handle_acquire(hdw2, 0);
  SF_CHECK(memcmp(x.data, hx, nv * Cin * sizeof(float)) == 0, "sample_load: slab data differ from the host sample");
  float *ry = sf_malloc(nv * Cout * sizeof(float), "ref y"), *rdx = sf_malloc(nv * Cin * sizeof(float), "ref dx");
  float *rdw = sf_calloc(nw, sizeof(float), "ref dw");
  sf_conv3d_forward_ref(ry, NULL, hx, NULL, w, D, H, W, Cin, Cout);
  sf_conv3d_backward_data_ref(rdx, NULL, hdy, NULL, w, D, H, W, Cin, Cout);
  sf_conv3d_backward_weights_ref(rdw, NULL, hx, NULL, hdy, D, H, W, Cin, Cout);
  sf_check_close_f("conv3d forward, 3 slabs vs untiled", y.data, ry, nv * Cout, 1e-5);
  sf_check_close_f("conv3d dX, 3 slabs vs untiled", dx.data, rdx, nv * Cin, 1e-5);
  sf_check_close_f("conv3d dW (commute), 3 slabs vs untiled", dw, rdw, nw, 1e-5);
  sf_check_close_f("conv3d dW (partials), 3 slabs vs untiled", dw2, rdw, nw, 1e-5);
  sf_tensor_release(&x);
  sf_tensor_release(&y);
  sf_tensor_release(&dx);
  sf_handle_release(hdw);
  sf_handle_release(hdw2);
  for (int k = 0; k < S; k++) sf_handle_unregister(hp[k]);
  sf_handle_unregister(hw);
  sf_handle_unregister(hdw);
  sf_handle_unregister(hdw2);
  sf_tensor_destroy(&x);
  sf_tensor_destroy(&y);
  sf_tensor_destroy(&dy);
  sf_tensor_destroy(&dx);
  free(hx);
  free(hdy);
  free(w);
  free(dw);
  free(dwp);
  free(dw2);
  free(ry);
  free(rdx);
  free(rdw);
}

/* Tensors' buffers start on a cache line (SF_DATA_ALIGN) under StarPU as under the host runtimes: a 256 KiB one is
 * past malloc's mmap threshold, where malloc's own blocks start 16 bytes into a page */
static void check_alignment(void)
{
  sf_tensor small, big;
  const int d0[2] = {0, 3}, d1[2] = {0, 16};
  sf_tensor_init(&small, "small", 3, 5, 6, 3, sizeof(float), 1, d0);
  sf_tensor_init(&big, "big", 16, 32, 32, 4, sizeof(float), 1, d1);
  SF_CHECK((uintptr_t)small.data % SF_DATA_ALIGN == 0 && (uintptr_t)big.data % SF_DATA_ALIGN == 0,
           "tensor buffers not %d-byte aligned: %zu and %zu bytes past a line", SF_DATA_ALIGN,
           (size_t)((uintptr_t)small.data % SF_DATA_ALIGN), (size_t)((uintptr_t)big.data % SF_DATA_ALIGN));
  sf_tensor_destroy(&small);
  sf_tensor_destroy(&big);
}

int main(void)
{
  check_bounds();
  gt_runtime_start("lws", 2);
  check_alignment();
  check_conv();
  gt_runtime_stop();
  gt_cleanup();
  return sf_test_end();
}
