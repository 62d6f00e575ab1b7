/* OpenCL H/W block copies (codelets/opencl/launch_blocks.c: rectangular copies) against the CPU
 * kernels (src/kernels/halo/halo_blocks.c), run as StarPU tasks on the OpenCL worker: column padding
 * with a whole neighbour block on one side and a one-column halo piece on the other, and with no
 * neighbour (zeros); row padding the same way round; crop and embed; the layer copy of every axis,
 * first and last; a box copy into part of a block (the rest must stay). Outputs start as garbage.
 * Copies: the results must match exactly. */
#include <stdlib.h>
#include <string.h>

#include "ocl_testutil.h"
#include "scaffold/codelet_args.h"
#include "scaffold/common.h"
#include "scaffold/ops.h"

OCL_CODELET(c_pad_cols, sf_pad_cols_opencl);
OCL_CODELET(c_pad_rows, sf_pad_rows_opencl);
OCL_CODELET(c_crop, sf_crop_hw_opencl);
OCL_CODELET(c_embed, sf_embed_hw_opencl);
OCL_CODELET(c_layer, sf_layer_copy_opencl);
OCL_CODELET(c_box, sf_box_copy_opencl);

enum { ND = 2, H = 3, W = 4, C = 5 };
static const enum starpu_data_access_mode R = STARPU_R, Wm = STARPU_W, RW = STARPU_RW;

static float *garbage(size_t n)
{
  float *p = sf_malloc(n * sizeof(float), "test output");
  for (size_t i = 0; i < n; i++) p[i] = 1e30f;
  return p;
}

/* pad along the columns (rows = 0) or rows: lo a whole block (3 wide / high), hi a 1-layer piece; or none */
static void test_pad(uint64_t *seed, int rows, int neighbours)
{
  const int lo_n = 3, ext = rows ? H : W;
  const size_t vox = (size_t)ND * H * W, face = vox / ext;
  float *src = ocl_floats(vox * C, seed, -1, 1), *lo = ocl_floats(face * lo_n * C, seed, -1, 1);
  float *hi = ocl_floats(face * C, seed, -1, 1);
  const size_t out = vox / ext * (ext + 2) * C;
  float *want = garbage(out), *got = garbage(out);
  const void *l = neighbours ? lo : NULL, *h = neighbours ? hi : NULL;
  if (rows) sf_pad_rows(want, src, l, lo_n, h, 1, ND, H, W, (size_t)C * 4);
  else sf_pad_cols(want, src, l, lo_n, h, 1, ND, H, W, (size_t)C * 4);
  sf_blocks_args a = {.C = C, .has_lo = neighbours, .has_hi = neighbours};
  starpu_data_handle_t hd[4];
  hd[0] = rows ? ocl_block(got, (size_t)W * C, H + 2, ND, 4) : ocl_block(got, (size_t)(W + 2) * C, H, ND, 4);
  hd[1] = ocl_block(src, (size_t)W * C, H, ND, 4);
  hd[2] = rows ? ocl_block(lo, (size_t)W * C, lo_n, ND, 4) : ocl_block(lo, (size_t)lo_n * C, H, ND, 4);
  hd[3] = rows ? ocl_block(hi, (size_t)W * C, 1, ND, 4) : ocl_block(hi, (size_t)C, H, ND, 4);
  enum starpu_data_access_mode m[4] = {Wm, R, R, R};
  ocl_submit(rows ? &c_pad_rows : &c_pad_cols, &a, sizeof a, neighbours ? 4 : 2, hd, m);
  ocl_unregister(4, hd);
  char name[96];
  snprintf(name, sizeof name, "pad_%s, %s", rows ? "rows" : "cols", neighbours ? "block + piece" : "no neighbours");
  sf_check_close_f(name, got, want, out, 0.0);
  free(src), free(lo), free(hi), free(want), free(got);
}

static void test_crop_embed(uint64_t *seed)
{
  const size_t in = (size_t)ND * H * W * C, pad = (size_t)ND * (H + 2) * (W + 2) * C;
  float *x = ocl_floats(in, seed, -1, 1), *p = ocl_floats(pad, seed, -1, 1);
  float *emb_want = garbage(pad), *emb = garbage(pad), *crop_want = garbage(in), *crop = garbage(in);
  sf_embed_hw(emb_want, x, ND, H, W, (size_t)C * 4);
  sf_crop_hw(crop_want, p, ND, H, W, (size_t)C * 4);
  sf_blocks_args a = {.C = C};
  starpu_data_handle_t hd[4] = {ocl_block(emb, (size_t)(W + 2) * C, H + 2, ND, 4), ocl_block(x, (size_t)W * C, H, ND, 4),
                                ocl_block(crop, (size_t)W * C, H, ND, 4),
                                ocl_block(p, (size_t)(W + 2) * C, H + 2, ND, 4)};
  enum starpu_data_access_mode m[2] = {Wm, R};
  ocl_submit(&c_embed, &a, sizeof a, 2, hd, m);
  ocl_submit(&c_crop, &a, sizeof a, 2, hd + 2, m);
  ocl_unregister(4, hd);
  sf_check_close_f("embed_hw", emb, emb_want, pad, 0.0);
  sf_check_close_f("crop_hw", crop, crop_want, in, 0.0);
  free(x), free(p), free(emb_want), free(emb), free(crop_want), free(crop);
}

static void test_layers(uint64_t *seed)
{
  const int n[3] = {ND, H, W};
  float *src = ocl_floats((size_t)ND * H * W * C, seed, -1, 1);
  for (int axis = 0; axis < 3; axis++)
    for (int last = 0; last < 2; last++) {
      int p[3] = {ND, H, W};
      p[axis] = 1;
      size_t np = (size_t)p[0] * p[1] * p[2] * C;
      float *want = garbage(np), *got = garbage(np);
      sf_layer_copy(want, src, n, axis, last, (size_t)C * 4);
      sf_blocks_args a = {.C = C, .axis = axis, .last = last};
      starpu_data_handle_t hd[2] = {ocl_block(got, (size_t)p[2] * C, p[1], p[0], 4),
                                    ocl_block(src, (size_t)W * C, H, ND, 4)};
      enum starpu_data_access_mode m[2] = {Wm, R};
      ocl_submit(&c_layer, &a, sizeof a, 2, hd, m);
      ocl_unregister(2, hd);
      char name[64];
      snprintf(name, sizeof name, "layer_copy axis %d %s", axis, last ? "last" : "first");
      sf_check_close_f(name, got, want, np, 0.0);
      free(want), free(got);
    }
  free(src);
}

/* a (1, 2, 3) box of a (2, 3, 4) block into a (3, 4, 5) block at (2, 1, 1); the rest of dst stays */
static void test_box(uint64_t *seed)
{
  const int sn[3] = {ND, H, W}, dn[3] = {3, 4, 5}, slo[3] = {1, 1, 0}, dlo[3] = {2, 1, 1}, ext[3] = {1, 2, 3};
  const size_t ns = (size_t)ND * H * W * C, nd = (size_t)3 * 4 * 5 * C;
  float *src = ocl_floats(ns, seed, -1, 1), *got = ocl_floats(nd, seed, -1, 1), *want = ocl_copy(got, nd);
  sf_box_copy(want, dn, dlo, src, sn, slo, ext, (size_t)C * 4);
  sf_blocks_args a = {.C = C};
  for (int i = 0; i < 3; i++) a.dlo[i] = dlo[i], a.slo[i] = slo[i], a.ext[i] = ext[i];
  starpu_data_handle_t hd[2] = {ocl_block(got, (size_t)5 * C, 4, 3, 4), ocl_block(src, (size_t)W * C, H, ND, 4)};
  enum starpu_data_access_mode m[2] = {RW, R};
  ocl_submit(&c_box, &a, sizeof a, 2, hd, m);
  ocl_unregister(2, hd);
  sf_check_close_f("box_copy (into part of a block)", got, want, nd, 0.0);
  free(src), free(got), free(want);
}

int main(void)
{
  int rc = ocl_begin("blocks");
  if (rc) return rc;
  uint64_t seed = 7;
  for (int rows = 0; rows < 2; rows++)
    for (int nb = 0; nb < 2; nb++) test_pad(&seed, rows, nb);
  test_crop_embed(&seed);
  test_layers(&seed);
  test_box(&seed);
  ocl_end();
  return sf_test_end();
}
