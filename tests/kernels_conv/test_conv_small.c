/* The plain-loop 3x3x3 convolution for layers of a few channels (src/kernels/conv3d/conv3d_small.c) against the
 * naive reference: forward, dX and dW (accumulating onto a non-zero gradient), within 1e-5 relative, at the
 * granularity sweep's block shapes (1-2 planes of 1x1 to 3x3 voxels plus padded blocks) and beyond (odd
 * extents, 5 planes, one voxel), every channel pair up to 16x16 that it runs, with both halo planes, one, or
 * none (volume faces). Then the entry's rule: it picks small where conv3d.c says (few channels whose output
 * count does not fill the vectors), and the entry runs it (the variant counts). */
#include <stdio.h>

#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/kernel_tuning.h"
#include "scaffold/ops.h"
#include "testutil.h"

#include "../../src/kernels/conv3d/conv3d_small.h"

#define RTOL 1e-5

static const int blocks[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 3, 3}, {2, 3, 3}, {1, 2, 5}, {3, 4, 1}, {5, 3, 6}, {2, 9, 7}};
static const int chans[][2] = {{1, 1}, {2, 1}, {1, 2}, {3, 1}, {2, 3}, {3, 3}, {4, 4}, {6, 6},
                               {8, 1}, {1, 8}, {5, 7}, {16, 1}, {1, 16}, {16, 16}};

/* One shape, halos as `halo` says (bit 0: lo present, bit 1: hi present) */
static void check_shape(int nd, int H, int W, int Cin, int Cout, int halo)
{
  size_t plane_in = (size_t)H * W * Cin, plane_out = (size_t)H * W * Cout, nw = (size_t)27 * Cin * Cout;
  float *x = ct_rand(nd * plane_in, 1), *xlo = halo & 1 ? ct_rand(plane_in, 2) : NULL,
        *xhi = halo & 2 ? ct_rand(plane_in, 3) : NULL;
  float *dy = ct_rand(nd * plane_out, 4), *glo = halo & 1 ? ct_rand(plane_out, 5) : NULL,
        *ghi = halo & 2 ? ct_rand(plane_out, 6) : NULL;
  float *w = ct_rand(nw, 7), *dw0 = ct_rand(nw, 8);
  float *y = ct_zeros(nd * plane_out), *yr = ct_zeros(nd * plane_out);
  float *dx = ct_zeros(nd * plane_in), *dxr = ct_zeros(nd * plane_in);
  float *dw = ct_copy(dw0, nw), *dwr = ct_copy(dw0, nw);
  char name[96];
  snprintf(name, sizeof name, "%dx%dx%d %d->%d halos %d", nd, H, W, Cin, Cout, halo);
  sf_conv3d_forward_small(y, xlo, x, xhi, w, nd, H, W, Cin, Cout);
  sf_conv3d_forward_ref(yr, xlo, x, xhi, w, nd, H, W, Cin, Cout);
  char what[128];
  snprintf(what, sizeof what, "forward %s", name);
  sf_check_close_f(what, y, yr, nd * plane_out, RTOL);
  sf_conv3d_backward_data_small(dx, glo, dy, ghi, w, nd, H, W, Cin, Cout);
  sf_conv3d_backward_data_ref(dxr, glo, dy, ghi, w, nd, H, W, Cin, Cout);
  snprintf(what, sizeof what, "dX %s", name);
  sf_check_close_f(what, dx, dxr, nd * plane_in, RTOL);
  sf_conv3d_backward_weights_small(dw, xlo, x, xhi, dy, nd, H, W, Cin, Cout);
  sf_conv3d_backward_weights_ref(dwr, xlo, x, xhi, dy, nd, H, W, Cin, Cout);
  snprintf(what, sizeof what, "dW %s", name);
  sf_check_close_f(what, dw, dwr, nw, RTOL);
  free(x), free(xlo), free(xhi), free(dy), free(glo), free(ghi), free(w), free(dw0);
  free(y), free(yr), free(dx), free(dxr), free(dw), free(dwr);
}

/* The rule (conv3d.c) and the entry: small for few channels whose output count is not a multiple of 8 */
static void check_rule(void)
{
  if (sf_cpu_isa_active() == SF_ISA_NONE) { /* SF_CONV_DIRECT=0: im2col everywhere */
    SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 0, 2, 3, 3, 1, 1) == SF_CONV3D_IM2COL, "SF_CONV_DIRECT=0: im2col");
    return;
  }
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 0, 2, 3, 3, 1, 1) == SF_CONV3D_SMALL, "forward 1->1");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 0, 2, 3, 3, 3, 2) == SF_CONV3D_SMALL, "forward 3->2");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_BACKWARD_DATA, 0, 2, 3, 3, 1, 8) == SF_CONV3D_SMALL, "dX 1->8 (dx: 1 channel)");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_BACKWARD_WEIGHTS, 0, 1, 3, 3, 3, 3) == SF_CONV3D_SMALL, "dW 3->3");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_BACKWARD_WEIGHTS, 0, 1, 3, 3, 4, 4) != SF_CONV3D_SMALL, "dW 4->4: past 9");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 0, 2, 3, 3, 1, 8) != SF_CONV3D_SMALL, "forward 1->8: direct");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 0, 2, 3, 3, 12, 12) != SF_CONV3D_SMALL, "forward 12->12: past 36");
  SF_CHECK(sf_conv3d_choose(SF_CONV3D_FORWARD, 1, 2, 4, 4, 1, 1) != SF_CONV3D_SMALL, "bf16 keeps its engine");
  /* the entry runs it: one forward call of a 1->1 layer counts one "small" */
  sf_kernel_choices_reset();
  float *x = ct_rand(18, 1), *w = ct_rand(27, 2), *y = ct_zeros(18), *yr = ct_zeros(18);
  sf_conv3d_forward(y, NULL, x, NULL, w, 2, 3, 3, 1, 1);
  sf_conv3d_forward_ref(yr, NULL, x, NULL, w, 2, 3, 3, 1, 1);
  sf_check_close_f("entry forward 2x3x3 1->1", y, yr, 18, RTOL);
  char desc[512];
  sf_kernel_choices_describe(desc, sizeof desc);
  SF_CHECK(strstr(desc, "small") != NULL, "the entry ran small: %s", desc);
  free(x), free(w), free(y), free(yr);
}

int main(void)
{
  sf_conv3d_tuning_clear(); /* the built-in rules, whatever record the machine has */
  for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
    for (size_t c = 0; c < sizeof chans / sizeof chans[0]; c++)
      for (int halo = 0; halo < 4; halo++)
        check_shape(blocks[b][0], blocks[b][1], blocks[b][2], chans[c][0], chans[c][1], halo);
  check_rule();
  return sf_test_end();
}
