/* OpenCL convolution kernels (conv3d fwd/dX/dW, conv1 fwd/dX/dW+db, upconv fwd/dX/dW+db) against the
 * CPU reference (_ref), run as StarPU tasks on the OpenCL worker: odd sizes, uneven depth slabs
 * (including a one-plane slab) with halos from the neighbour slab handles, gradients accumulated over
 * the slabs (SF_ACC_COMMUTE) and overwritten (SF_ACC_PARTIAL), and one run on the children of a
 * partitioned volume whose OpenCL buffers sit at nonzero offsets. Tolerance 1e-5 relative. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_testutil.h"
#include "scaffold/common.h"
#include "scaffold/ops.h"

#define RTOL 1e-5
#define MAXS 4

OCL_CODELET(c_conv3d_fwd, sf_conv3d_fwd_opencl);
OCL_CODELET(c_conv3d_bwd_data, sf_conv3d_bwd_data_opencl);
OCL_CODELET(c_conv3d_bwd_weights, sf_conv3d_bwd_weights_opencl);
OCL_CODELET(c_conv1_fwd, sf_conv1_fwd_opencl);
OCL_CODELET(c_conv1_bwd_data, sf_conv1_bwd_data_opencl);
OCL_CODELET(c_conv1_bwd_weights, sf_conv1_bwd_weights_opencl);
OCL_CODELET(c_up_fwd, sf_upconv3d_fwd_opencl);
OCL_CODELET(c_up_bwd_data, sf_upconv3d_bwd_data_opencl);
OCL_CODELET(c_up_bwd_weights, sf_upconv3d_bwd_weights_opencl);
OCL_CODELET(c_sample, sf_sample_load_opencl);

/* conv3d forward on partitioned children, recording the largest OpenCL buffer offset seen */
static size_t g_max_offset;
static void fwd_recording(void *buffers[], void *cl_arg)
{
  int n = (int)STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
  for (int i = 0; i < n; i++)
    if (STARPU_BLOCK_GET_OFFSET(buffers[i]) > g_max_offset) g_max_offset = STARPU_BLOCK_GET_OFFSET(buffers[i]);
  sf_conv3d_fwd_opencl(buffers, cl_arg);
}
OCL_CODELET(c_conv3d_fwd_rec, fwd_recording);

static const enum starpu_data_access_mode R = STARPU_R, Wm = STARPU_W, RW = STARPU_RW;

/* [out, in, w, lo?, hi?] for slab k of S */
static int conv_bufs(starpu_data_handle_t *h, enum starpu_data_access_mode *m, starpu_data_handle_t out,
                     enum starpu_data_access_mode out_mode, starpu_data_handle_t in, starpu_data_handle_t w,
                     starpu_data_handle_t *slabs, int k, int S)
{
  int n = 0;
  h[n] = out, m[n++] = out_mode;
  h[n] = in, m[n++] = R;
  h[n] = w, m[n++] = R;
  if (k > 0) h[n] = slabs[k - 1], m[n++] = R;
  if (k < S - 1) h[n] = slabs[k + 1], m[n++] = R;
  return n;
}

static void test_conv3d(uint64_t *seed)
{
  enum { D = 7, H = 5, W = 3, Cin = 3, Cout = 5, S = 3 };
  const int depths[S] = {3, 1, 3};
  int d0[S + 1];
  ocl_bounds(d0, S, depths);
  const size_t pin = (size_t)H * W * Cin, pout = (size_t)H * W * Cout, nw = 27 * Cin * Cout;
  float *x = ocl_floats(D * pin, seed, -1, 1), *w = ocl_floats(nw, seed, -1, 1), *dy = ocl_floats(D * pout, seed, -1, 1);
  float *dw0 = ocl_floats(nw, seed, -1, 1);
  /* reference: untiled forward / dX, dW accumulated slab by slab onto dw0 */
  float *yref = calloc(D * pout, 4), *dxref = calloc(D * pin, 4), *dwref = ocl_copy(dw0, nw);
  sf_conv3d_forward_ref(yref, NULL, x, NULL, w, D, H, W, Cin, Cout);
  sf_conv3d_backward_data_ref(dxref, NULL, dy, NULL, w, D, H, W, Cin, Cout);
  for (int k = 0; k < S; k++)
    sf_conv3d_backward_weights_ref(dwref, k > 0 ? x + (d0[k] - 1) * pin : NULL, x + d0[k] * pin,
                                   k < S - 1 ? x + d0[k + 1] * pin : NULL, dy + d0[k] * pout, depths[k], H, W, Cin,
                                   Cout);
  float *dwpart_ref = calloc(nw, 4); /* SF_ACC_PARTIAL of slab 1 */
  sf_conv3d_backward_weights_ref(dwpart_ref, x + (d0[1] - 1) * pin, x + d0[1] * pin,
                                 x + d0[2] * pin, dy + d0[1] * pout, depths[1], H, W, Cin, Cout);

  float *y = calloc(D * pout, 4), *dx = calloc(D * pin, 4), *dw = ocl_copy(dw0, nw);
  float *dwpart = ocl_floats(nw, seed, -5, 5); /* garbage: must be overwritten */
  starpu_data_handle_t hx[S], hy[S], hdy[S], hdx[S], hw = ocl_vec(w, nw, 4), hdw = ocl_vec(dw, nw, 4);
  starpu_data_handle_t hdwp = ocl_vec(dwpart, nw, 4);
  for (int k = 0; k < S; k++) {
    hx[k] = ocl_block(x + d0[k] * pin, W * Cin, H, depths[k], 4);
    hdx[k] = ocl_block(dx + d0[k] * pin, W * Cin, H, depths[k], 4);
    hy[k] = ocl_block(y + d0[k] * pout, W * Cout, H, depths[k], 4);
    hdy[k] = ocl_block(dy + d0[k] * pout, W * Cout, H, depths[k], 4);
  }
  for (int k = 0; k < S; k++) {
    sf_conv3d_args a = {H, W, Cin, Cout, k > 0, k < S - 1, 0, 0};
    starpu_data_handle_t h[5];
    enum starpu_data_access_mode m[5];
    int n = conv_bufs(h, m, hy[k], Wm, hx[k], hw, hx, k, S);
    ocl_submit(&c_conv3d_fwd, &a, sizeof a, n, h, m);
    n = conv_bufs(h, m, hdx[k], Wm, hdy[k], hw, hdy, k, S);
    ocl_submit(&c_conv3d_bwd_data, &a, sizeof a, n, h, m);
    n = conv_bufs(h, m, hdw, RW, hx[k], hdy[k], hx, k, S); /* [dw, x, dy, x_lo?, x_hi?] */
    ocl_submit(&c_conv3d_bwd_weights, &a, sizeof a, n, h, m);
    if (k == 1) {
      a.overwrite = 1;
      n = conv_bufs(h, m, hdwp, Wm, hx[k], hdy[k], hx, k, S);
      ocl_submit(&c_conv3d_bwd_weights, &a, sizeof a, n, h, m);
    }
  }
  ocl_unregister(S, hx);
  ocl_unregister(S, hy);
  ocl_unregister(S, hdx);
  ocl_unregister(S, hdy);
  starpu_data_handle_t hv[3] = {hw, hdw, hdwp};
  ocl_unregister(3, hv);
  sf_check_close_f("conv3d_fwd (slabs 3,1,3 with halos)", y, yref, D * pout, RTOL);
  sf_check_close_f("conv3d_bwd_data (slabs 3,1,3 with halos)", dx, dxref, D * pin, RTOL);
  sf_check_close_f("conv3d_bwd_weights accumulated over slabs", dw, dwref, nw, RTOL);
  sf_check_close_f("conv3d_bwd_weights overwrite (1-plane slab)", dwpart, dwpart_ref, nw, RTOL);

  /* partitioned volume: the children's OpenCL buffers are sub-ranges of the parent's */
  float *xbuf = calloc(D * pin, 4), *ybuf = calloc(D * pout, 4), *zeros = calloc(D * pout, 4);
  starpu_data_handle_t hxa = ocl_block(xbuf, W * Cin, H, D, 4), hya = ocl_block(ybuf, W * Cout, H, D, 4);
  sf_sample_args sx = {x, D * pin * 4, 1}, sy = {zeros, D * pout * 4, 1};
  ocl_submit(&c_sample, &sx, sizeof sx, 1, &hxa, &Wm); /* valid copy only on the OpenCL node */
  ocl_submit(&c_sample, &sy, sizeof sy, 1, &hya, &Wm);
  starpu_task_wait_for_all();
  struct starpu_data_filter f = {.filter_func = starpu_block_filter_depth_block, .nchildren = S};
  starpu_data_partition(hxa, &f);
  starpu_data_partition(hya, &f);
  starpu_data_handle_t cx[S];
  for (int k = 0; k < S; k++) cx[k] = starpu_data_get_sub_data(hxa, 1, k);
  g_max_offset = 0;
  hw = ocl_vec(w, nw, 4);
  for (int k = 0; k < S; k++) {
    sf_conv3d_args a = {H, W, Cin, Cout, k > 0, k < S - 1, 0, 0};
    starpu_data_handle_t h[5];
    enum starpu_data_access_mode m[5];
    int n = conv_bufs(h, m, starpu_data_get_sub_data(hya, 1, k), Wm, cx[k], hw, cx, k, S);
    ocl_submit(&c_conv3d_fwd_rec, &a, sizeof a, n, h, m);
  }
  starpu_task_wait_for_all();
  starpu_data_unregister(hw);
  starpu_data_unpartition(hxa, STARPU_MAIN_RAM);
  starpu_data_unpartition(hya, STARPU_MAIN_RAM);
  starpu_data_handle_t hp[2] = {hxa, hya};
  ocl_unregister(2, hp);
  SF_CHECK(g_max_offset > 0, "partitioned run saw no nonzero OpenCL buffer offset (max %zu): the offset path "
                             "was not exercised", g_max_offset);
  printf("     partitioned conv3d: largest OpenCL buffer offset %zu bytes\n", g_max_offset);
  sf_check_close_f("conv3d_fwd on partitioned children (nonzero offsets)", ybuf, yref, D * pout, RTOL);
  sf_check_close_f("sample_load of the whole volume", xbuf, x, D * pin, 0.0);
  free(x), free(w), free(dy), free(dw0), free(yref), free(dxref), free(dwref), free(dwpart_ref);
  free(y), free(dx), free(dw), free(dwpart), free(xbuf), free(ybuf), free(zeros);
}

static void test_conv1(uint64_t *seed)
{
  enum { D = 3, H = 5, W = 7, Cin = 6, Cout = 3, S = 2 };
  const int depths[S] = {2, 1};
  int d0[S + 1];
  ocl_bounds(d0, S, depths);
  const size_t plane = (size_t)H * W, n = D * plane;
  float *x = ocl_floats(n * Cin, seed, -1, 1), *w = ocl_floats(Cin * Cout, seed, -1, 1);
  float *b = ocl_floats(Cout, seed, -1, 1), *dy = ocl_floats(n * Cout, seed, -1, 1);
  float *dw = ocl_floats(Cin * Cout, seed, -1, 1), *db = ocl_floats(Cout, seed, -1, 1);
  float *yref = calloc(n * Cout, 4), *dxref = calloc(n * Cin, 4), *dwref = ocl_copy(dw, Cin * Cout);
  float *dbref = ocl_copy(db, Cout);
  sf_conv1_forward_ref(yref, x, w, b, n, Cin, Cout);
  sf_conv1_backward_data_ref(dxref, dy, w, n, Cin, Cout);
  for (int k = 0; k < S; k++)
    sf_conv1_backward_weights_ref(dwref, dbref, x + d0[k] * plane * Cin, dy + d0[k] * plane * Cout, depths[k] * plane,
                                  Cin, Cout);
  float *dwp_ref = calloc(Cin * Cout, 4), *dbp_ref = calloc(Cout, 4);
  sf_conv1_backward_weights_ref(dwp_ref, dbp_ref, x + d0[1] * plane * Cin, dy + d0[1] * plane * Cout,
                                depths[1] * plane, Cin, Cout);
  float *y = calloc(n * Cout, 4), *dx = calloc(n * Cin, 4);
  float *dwp = ocl_floats(Cin * Cout, seed, -5, 5), *dbp = ocl_floats(Cout, seed, -5, 5);
  starpu_data_handle_t hw = ocl_vec(w, Cin * Cout, 4), hb = ocl_vec(b, Cout, 4), hdw = ocl_vec(dw, Cin * Cout, 4);
  starpu_data_handle_t hdb = ocl_vec(db, Cout, 4), hdwp = ocl_vec(dwp, Cin * Cout, 4), hdbp = ocl_vec(dbp, Cout, 4);
  starpu_data_handle_t hs[4 * S];
  for (int k = 0; k < S; k++) {
    starpu_data_handle_t hx = hs[4 * k] = ocl_block(x + d0[k] * plane * Cin, W * Cin, H, depths[k], 4);
    starpu_data_handle_t hy = hs[4 * k + 1] = ocl_block(y + d0[k] * plane * Cout, W * Cout, H, depths[k], 4);
    starpu_data_handle_t hdx = hs[4 * k + 2] = ocl_block(dx + d0[k] * plane * Cin, W * Cin, H, depths[k], 4);
    starpu_data_handle_t hdy = hs[4 * k + 3] = ocl_block(dy + d0[k] * plane * Cout, W * Cout, H, depths[k], 4);
    sf_conv1_args a = {Cin, Cout, 0};
    starpu_data_handle_t f[4] = {hy, hx, hw, hb}, bd[3] = {hdx, hdy, hw}, bw[4] = {hdw, hdb, hx, hdy};
    enum starpu_data_access_mode mf[4] = {Wm, R, R, R}, mbd[3] = {Wm, R, R}, mbw[4] = {RW, RW, R, R};
    ocl_submit(&c_conv1_fwd, &a, sizeof a, 4, f, mf);
    ocl_submit(&c_conv1_bwd_data, &a, sizeof a, 3, bd, mbd);
    ocl_submit(&c_conv1_bwd_weights, &a, sizeof a, 4, bw, mbw);
    if (k == 1) {
      a.overwrite = 1;
      starpu_data_handle_t bp[4] = {hdwp, hdbp, hx, hdy};
      enum starpu_data_access_mode mp[4] = {Wm, Wm, R, R};
      ocl_submit(&c_conv1_bwd_weights, &a, sizeof a, 4, bp, mp);
    }
  }
  ocl_unregister(4 * S, hs);
  starpu_data_handle_t hv[6] = {hw, hb, hdw, hdb, hdwp, hdbp};
  ocl_unregister(6, hv);
  sf_check_close_f("conv1_fwd (slabs 2,1)", y, yref, n * Cout, RTOL);
  sf_check_close_f("conv1_bwd_data", dx, dxref, n * Cin, RTOL);
  sf_check_close_f("conv1_bwd_weights dw accumulated", dw, dwref, Cin * Cout, RTOL);
  sf_check_close_f("conv1_bwd_weights db accumulated", db, dbref, Cout, RTOL);
  sf_check_close_f("conv1_bwd_weights dw overwrite", dwp, dwp_ref, Cin * Cout, RTOL);
  sf_check_close_f("conv1_bwd_weights db overwrite", dbp, dbp_ref, Cout, RTOL);
  free(x), free(w), free(b), free(dy), free(dw), free(db), free(yref), free(dxref), free(dwref), free(dbref);
  free(dwp_ref), free(dbp_ref), free(y), free(dx), free(dwp), free(dbp);
}

static void test_upconv(uint64_t *seed)
{
  enum { D = 3, H = 3, W = 5, Cin = 4, Cout = 3, S = 2 };
  const int depths[S] = {2, 1};
  int d0[S + 1];
  ocl_bounds(d0, S, depths);
  const size_t pc = (size_t)H * W * Cin, pf = (size_t)4 * H * W * Cout, nw = (size_t)Cin * 8 * Cout;
  float *x = ocl_floats(D * pc, seed, -1, 1), *w = ocl_floats(nw, seed, -1, 1), *b = ocl_floats(Cout, seed, -1, 1);
  float *dy = ocl_floats(2 * D * pf, seed, -1, 1), *dw = ocl_floats(nw, seed, -1, 1), *db = ocl_floats(Cout, seed, -1, 1);
  float *yref = calloc(2 * D * pf, 4), *dxref = calloc(D * pc, 4), *dwref = ocl_copy(dw, nw), *dbref = ocl_copy(db, Cout);
  sf_upconv3d_forward_ref(yref, x, w, b, D, H, W, Cin, Cout);
  sf_upconv3d_backward_data_ref(dxref, dy, w, D, H, W, Cin, Cout);
  for (int k = 0; k < S; k++)
    sf_upconv3d_backward_weights_ref(dwref, dbref, x + d0[k] * pc, dy + 2 * d0[k] * pf, depths[k], H, W, Cin, Cout);
  float *dwp_ref = calloc(nw, 4), *dbp_ref = calloc(Cout, 4);
  sf_upconv3d_backward_weights_ref(dwp_ref, dbp_ref, x + d0[0] * pc, dy, depths[0], H, W, Cin, Cout);
  float *y = calloc(2 * D * pf, 4), *dx = calloc(D * pc, 4);
  float *dwp = ocl_floats(nw, seed, -5, 5), *dbp = ocl_floats(Cout, seed, -5, 5);
  starpu_data_handle_t hw = ocl_vec(w, nw, 4), hb = ocl_vec(b, Cout, 4), hdw = ocl_vec(dw, nw, 4);
  starpu_data_handle_t hdb = ocl_vec(db, Cout, 4), hdwp = ocl_vec(dwp, nw, 4), hdbp = ocl_vec(dbp, Cout, 4);
  starpu_data_handle_t hs[4 * S];
  for (int k = 0; k < S; k++) {
    starpu_data_handle_t hx = hs[4 * k] = ocl_block(x + d0[k] * pc, W * Cin, H, depths[k], 4);
    starpu_data_handle_t hdx = hs[4 * k + 1] = ocl_block(dx + d0[k] * pc, W * Cin, H, depths[k], 4);
    starpu_data_handle_t hy = hs[4 * k + 2] = ocl_block(y + 2 * d0[k] * pf, 2 * W * Cout, 2 * H, 2 * depths[k], 4);
    starpu_data_handle_t hdy = hs[4 * k + 3] = ocl_block(dy + 2 * d0[k] * pf, 2 * W * Cout, 2 * H, 2 * depths[k], 4);
    sf_upconv3d_args a = {Cin, Cout, 0};
    starpu_data_handle_t f[4] = {hy, hx, hw, hb}, bd[3] = {hdx, hdy, hw}, bw[4] = {hdw, hdb, hx, hdy};
    enum starpu_data_access_mode mf[4] = {Wm, R, R, R}, mbd[3] = {Wm, R, R}, mbw[4] = {RW, RW, R, R};
    ocl_submit(&c_up_fwd, &a, sizeof a, 4, f, mf);
    ocl_submit(&c_up_bwd_data, &a, sizeof a, 3, bd, mbd);
    ocl_submit(&c_up_bwd_weights, &a, sizeof a, 4, bw, mbw);
    if (k == 0) {
      a.overwrite = 1;
      starpu_data_handle_t bp[4] = {hdwp, hdbp, hx, hdy};
      enum starpu_data_access_mode mp[4] = {Wm, Wm, R, R};
      ocl_submit(&c_up_bwd_weights, &a, sizeof a, 4, bp, mp);
    }
  }
  ocl_unregister(4 * S, hs);
  starpu_data_handle_t hv[6] = {hw, hb, hdw, hdb, hdwp, hdbp};
  ocl_unregister(6, hv);
  sf_check_close_f("upconv3d_fwd (coarse slabs 2,1)", y, yref, 2 * D * pf, RTOL);
  sf_check_close_f("upconv3d_bwd_data", dx, dxref, D * pc, RTOL);
  sf_check_close_f("upconv3d_bwd_weights dw accumulated", dw, dwref, nw, RTOL);
  sf_check_close_f("upconv3d_bwd_weights db accumulated", db, dbref, Cout, RTOL);
  sf_check_close_f("upconv3d_bwd_weights dw overwrite", dwp, dwp_ref, nw, RTOL);
  sf_check_close_f("upconv3d_bwd_weights db overwrite", dbp, dbp_ref, Cout, RTOL);
  free(x), free(w), free(b), free(dy), free(dw), free(db), free(yref), free(dxref), free(dwref), free(dbref);
  free(dwp_ref), free(dbp_ref), free(y), free(dx), free(dwp), free(dbp);
}

int main(void)
{
  int rc = ocl_begin("ocl_conv");
  if (rc) return rc;
  uint64_t seed = 12345;
  double t0 = sf_now();
  test_conv3d(&seed);
  test_conv1(&seed);
  test_upconv(&seed);
  printf("tasks ran in %.2f s\n", sf_now() - t0);
  ocl_end();
  return sf_test_end();
}
