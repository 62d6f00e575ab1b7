/* The bf16 3x3x3 convolution kernels (torch_amp: 1 on CPU workers), every engine this CPU has (AVX-512
 * VDPBF16PS: src/kernels/conv3d/conv3d_bf16*.c; AMX tiles: conv3d_amx*.c), each made active in turn, against the
 * naive fp32 _ref oracle, forward, dX and dW (whole and as two tap blocks, accumulated onto a non-zero
 * gradient):
 *  - on inputs already rounded to bf16 the products are exact in fp32, so the kernel must equal the
 *    reference to fp32 summation error (max relative error <= 1e-5): this checks the arithmetic;
 *  - on the raw fp32 inputs it must stay within bf16's tolerance (<= 2e-2 relative to the largest value)
 *    and differ from fp32 by more than summation error (>= 1e-4): this checks that the operands really
 *    are rounded, as upstream's autocast rounds them;
 *  - the rounding itself is round-to-nearest-even, checked against a scalar definition on ties.
 * Shapes: odd and even channel counts (pairs), a partial last output vector, one or two vectors, rows split
 * into uneven register blocks, odd rows (dW's last voxel pairs with zero), AMX's K chunks and partial C
 * tiles, AMX's runs of interior voxels and compact slabs, AMX's im2col dW of few inputs, every halo case.
 * Winograd is off (SF_CONV_WINOGRAD's test hook), so the entries run the direct engines; Winograd with bf16
 * GEMMs has its own test (test_conv_winograd_bf16.c).
 * Skipped (exit 77) on a CPU without AVX512_BF16; an engine the CPU lacks is skipped with a message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bf16test.h"
#include "convtest.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "testutil.h"

/* RNE to bf16 by its definition, for finite inputs */
static float rne_bf16(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void check_rounding(void)
{
  float in[70], out[70], want[70];
  for (int i = 0; i < 64; i++)
    in[i] = ldexpf(1.0f + (float)i / 128.0f + (i % 2 ? 0x1p-9f : 0.0f), i % 9 - 4) * (i % 3 ? 1 : -1);
  in[64] = 1.0f + 0x1p-8f;           /* a tie, rounds down to even 1.0 */
  in[65] = 1.0f + 0x1p-7f + 0x1p-8f; /* a tie, rounds up to even 1 + 2^-6 */
  in[66] = 0.0f, in[67] = -0.0f, in[68] = 3.0e38f, in[69] = 1.0e-30f;
  for (int i = 0; i < 70; i++) want[i] = rne_bf16(in[i]);
  sf_bf16_round_floats(out, in, 70); /* 70: one full vector pair, then a masked tail */
  sf_check_bitwise_f("bf16 rounding (nearest even, ties, signs, extremes)", out, want, 70);
}

/* Where the engine packs weights once per step for this shape (AMX, whole K chunks of 32): the kernel on the packed
 * copy (sf_conv3d_bf16_pack) equals want, the kernel that packs per call, bit for bit; else says it has none */
static void check_packed(const char *name, const float *want, const float *lo, const float *in, const float *hi,
                         const float *w, int nd, int H, int W, int Ci, int Co, int flip)
{
  size_t bytes = sf_conv3d_bf16_packed_bytes(Ci, Co, flip), nout = (size_t)nd * H * W * (flip ? Ci : Co);
  char nm[224];
  snprintf(nm, sizeof nm, "%s on weights packed once", name);
  if (!bytes) {
    int amx = sf_bf16_engine_active() == SF_BF16_AMX, K = flip ? Co : Ci, N = flip ? Ci : Co;
    SF_CHECK(!amx || K % 32 || N % 16, "%s: no packed form though K %d and N %d fit AMX's", nm, K, N);
    return;
  }
  /* alone, and with the other direction's copy where it has one (one read of w for both) */
  size_t other = sf_conv3d_bf16_packed_bytes(Ci, Co, !flip);
  for (int both = 0; both <= (other > 0); both++) {
    void *wp = sf_aligned_alloc(bytes, "packed weights"), *wo = both ? sf_aligned_alloc(other, "packed weights") : NULL;
    float *out = ct_rand(nout, 98);
    sf_conv3d_bf16_pack(flip ? wo : wp, flip ? wp : wo, w, Ci, Co);
    sf_conv3d_bf16_packed(out, lo, in, hi, wp, nd, H, W, Ci, Co, flip);
    char nb[260];
    snprintf(nb, sizeof nb, "%s%s", nm, both ? " (both directions packed)" : "");
    sf_check_bitwise_f(nb, out, want, nout);
    free(wp), free(wo), free(out);
  }
}

typedef void (*conv_fn)(float *, const float *, const float *, const float *, const float *, int, int, int, int, int);

static void check_dirs(const char *tag, int nd, int H, int W, int Ci, int Co, const float *xlo, const float *x,
                       const float *xhi, const float *dylo, const float *dy, const float *dyhi, const float *w)
{
  size_t pl_x = (size_t)H * W * Ci, pl_y = (size_t)H * W * Co;
  const float *rx[3] = {ct_rounded(xlo, pl_x), ct_rounded(x, nd * pl_x), ct_rounded(xhi, pl_x)};
  const float *rdy[3] = {ct_rounded(dylo, pl_y), ct_rounded(dy, nd * pl_y), ct_rounded(dyhi, pl_y)};
  float *rw = ct_rounded(w, (size_t)27 * Ci * Co);
  const struct {
    const char *dir;
    conv_fn ref, bf16;
    const float *lo, *in, *hi, *const *r;
    size_t nout;
  } dirs[2] = {
      {"forward", sf_conv3d_forward_ref, sf_conv3d_forward_bf16, xlo, x, xhi, rx, nd * pl_y},
      {"dX", sf_conv3d_backward_data_ref, sf_conv3d_backward_data_bf16, dylo, dy, dyhi, rdy, nd * pl_x},
  };
  for (int i = 0; i < 2; i++) {
    float *exact = ct_zeros(dirs[i].nout), *fp32 = ct_zeros(dirs[i].nout), *out = ct_rand(dirs[i].nout, 99);
    dirs[i].ref(exact, dirs[i].r[0], dirs[i].r[1], dirs[i].r[2], rw, nd, H, W, Ci, Co);
    dirs[i].ref(fp32, dirs[i].lo, dirs[i].in, dirs[i].hi, w, nd, H, W, Ci, Co);
    dirs[i].bf16(out, dirs[i].lo, dirs[i].in, dirs[i].hi, w, nd, H, W, Ci, Co);
    char nm[192];
    snprintf(nm, sizeof nm, "%s %s", tag, dirs[i].dir);
    ct_check_bf16(nm, out, exact, fp32, dirs[i].nout);
    check_packed(nm, out, dirs[i].lo, dirs[i].in, dirs[i].hi, w, nd, H, W, Ci, Co, i);
    free(exact), free(fp32), free(out);
  }
  for (int i = 0; i < 3; i++) free((void *)rx[i]), free((void *)rdy[i]);
  free(rw);
}

static void check_dw(const char *tag, int nd, int H, int W, int Ci, int Co, const float *xlo, const float *x,
                     const float *xhi, const float *dy, uint64_t s)
{
  size_t pl_x = (size_t)H * W * Ci, pl_y = (size_t)H * W * Co, nw = (size_t)27 * Ci * Co;
  float *rxlo = ct_rounded(xlo, pl_x), *rx = ct_rounded(x, nd * pl_x), *rxhi = ct_rounded(xhi, pl_x);
  float *rdy = ct_rounded(dy, nd * pl_y), *dw0 = ct_rand(nw, s);
  for (size_t i = 0; i < nw; i++) dw0[i] *= 0.1f * (float)(nd * H * W); /* the size of a gradient, not above */
  float *exact = ct_copy(dw0, nw), *fp32 = ct_copy(dw0, nw), *out = ct_copy(dw0, nw);
  sf_conv3d_backward_weights_ref(exact, rxlo, rx, rxhi, rdy, nd, H, W, Ci, Co);
  sf_conv3d_backward_weights_ref(fp32, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  sf_conv3d_backward_weights_taps_bf16(out, 0, 14, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  sf_conv3d_backward_weights_taps_bf16(out + (size_t)14 * Ci * Co, 14, 27, xlo, x, xhi, dy, nd, H, W, Ci, Co);
  /* the accumulator's own size hides the rounding: compare the added parts */
  for (size_t i = 0; i < nw; i++) exact[i] -= dw0[i], fp32[i] -= dw0[i], out[i] -= dw0[i];
  char nm[192];
  snprintf(nm, sizeof nm, "%s dW taps [0,14) + [14,27), accumulated", tag);
  ct_check_bf16(nm, out, exact, fp32, nw);
  free(rxlo), free(rx), free(rxhi), free(rdy), free(dw0), free(exact), free(fp32), free(out);
}

static void check_conv(int nd, int H, int W, int Ci, int Co, int lo, int hi, uint64_t s)
{
  char tag[128];
  snprintf(tag, sizeof tag, "bf16[%s] conv3d %dx%dx%d %d->%d halo %s/%s", sf_bf16_engine_name(sf_bf16_engine_active()),
           nd, H, W, Ci, Co, lo ? "lo" : "-", hi ? "hi" : "-");
  size_t pl_x = (size_t)H * W * Ci, pl_y = (size_t)H * W * Co;
  float *x = ct_rand(nd * pl_x, s), *xlo = lo ? ct_rand(pl_x, s + 1) : NULL, *xhi = hi ? ct_rand(pl_x, s + 2) : NULL;
  float *dy = ct_rand(nd * pl_y, s + 3), *dylo = lo ? ct_rand(pl_y, s + 4) : NULL;
  float *dyhi = hi ? ct_rand(pl_y, s + 5) : NULL, *w = ct_rand((size_t)27 * Ci * Co, s + 6);
  check_dirs(tag, nd, H, W, Ci, Co, xlo, x, xhi, dylo, dy, dyhi, w);
  check_dw(tag, nd, H, W, Ci, Co, xlo, x, xhi, dy, s + 7);
  free(x), free(xlo), free(xhi), free(dy), free(dylo), free(dyhi), free(w);
}

static void check_all(void);

int main(void)
{
  if (!sf_cpu_bf16_supported()) {
    printf("skip: this CPU has no AVX512_BF16 (the bf16 kernels need "
           "VDPBF16PS)\n");
    return 77;
  }
  check_rounding();
  /* the direct engines: the entries would hand wide slabs to Winograd with bf16 GEMMs, whose rounding of
   * transformed values the exact check below cannot hold it to (test_conv_winograd_bf16.c checks it) */
  sf_conv_winograd_set_for_testing(0);
  for (int e = SF_BF16_VDPBF16PS; e <= SF_BF16_AMX; e++) {
    if (sf_bf16_engine_set_for_testing((sf_bf16_engine)e) != (sf_bf16_engine)e) {
      printf("skip bf16 engine %s: this CPU (or its OS) does not offer it\n", sf_bf16_engine_name((sf_bf16_engine)e));
      continue;
    }
    check_all();
  }
  return sf_test_end();
}

static void check_all(void)
{
  check_conv(3, 5, 7, 16, 32, 1, 1, 300);  /* 7 voxels: one block; two output vectors */
  check_conv(2, 4, 13, 5, 48, 0, 1, 310);  /* odd input channels (a zero pair member); 48 = 32 + 16 */
  check_conv(4, 3, 25, 32, 16, 1, 0, 320); /* 25 = 9 + 8 + 8; dW: odd rows */
  check_conv(1, 1, 1, 16, 16, 0, 0, 330);  /* a single voxel */
  check_conv(2, 2, 12, 48, 80, 1, 1, 340); /* full blocks; 80 = 32 + 32 + 16 */
  check_conv(3, 4, 11, 1, 8, 1, 1, 355);   /* one input channel (the network's first conv), 8 outputs */
  check_conv(2, 3, 6, 24, 20, 1, 1, 385);  /* 20 = 16 + a masked 4; dX: 24 = 16 + 8 */
  check_conv(2, 4, 4, 64, 64, 0, 0, 390);  /* short rows, many channels; dW blocks of 11 + 11 + 10 ... */
  check_conv(3, 9, 9, 40, 36, 1, 1, 400);  /* AMX: a K chunk of 32 + 8, C tiles of 16 + 16 + 4 / 8 */
  check_conv(2, 5, 6, 96, 16, 0, 1, 410);  /* AMX: three K chunks; dW: three input channel tiles */
  check_conv(1, 3, 16, 32, 48, 1, 1, 420); /* AMX rows of 16: an odd run count (3), C tiles 32 + 16 */
  check_conv(2, 2, 32, 3, 8, 0, 1, 430);   /* AMX rows of 32: the folded input conv, 8 outputs (buffered) */
  check_conv(2, 2, 32, 64, 40, 1, 0, 440); /* AMX rows of 32: two K chunks, 40 = 32 + 8 outputs */
  check_conv(3, 4, 8, 48, 40, 1, 1, 450);  /* AMX dW on the compact grid (H*W = 32): input tiles 32 + 16 */
  check_conv(2, 2, 16, 16, 32, 0, 1, 460); /* AMX dW compact, rows of 16 */
  check_conv(2, 8, 12, 24, 20, 1, 1, 470); /* AMX dW compact, rows of 12 (H*W = 96) */
  check_conv(2, 4, 8, 3, 16, 1, 1, 480);   /* AMX forward on the compact grid, 3 inputs (3*Kp = 12) */
  check_conv(3, 2, 8, 32, 16, 0, 1, 490);  /* AMX forward compact, whole K chunks (weights packed fast) */
  check_conv(2, 2, 32, 8, 24, 1, 1, 500);  /* AMX rows of 32 with 8 inputs (base 8), 24 = 16 + 8 outputs */
  check_conv(2, 3, 9, 7, 16, 1, 0, 510);   /* AMX padded grid, 7 inputs (an odd pair member) */
  check_conv(3, 2, 16, 1, 24, 1, 1, 520);  /* AMX dW im2col: 1 input (27 columns), 24 = 16 + 8 outputs */
  check_conv(2, 4, 8, 4, 40, 0, 1, 530);   /* AMX dW im2col: 4 inputs (108 columns), 40 = 32 + 8 outputs */
  check_conv(1, 2, 32, 2, 16, 1, 0, 540);  /* AMX dW im2col: 2 inputs (54 columns), a lone block group */
  check_conv(2, 3, 32, 16, 16, 1, 1, 550); /* AMX rows of 32, 16 -> 16: ps 5 b16's top level */
  check_conv(2, 3, 10, 15, 20, 0, 1, 560); /* AMX padded grid, 15 inputs (Kp 16), 20 = 16 + 4 */
  /* AMX dW over sub-groups of 256 voxels with the sums kept in tiles between them (16 blocks of 32 voxels or more) */
  check_conv(2, 8, 32, 32, 48, 1, 1, 570); /* rows of 32: 2 sub-groups; C tiles 2 x 2, then 2 x 1 */
  check_conv(3, 6, 32, 16, 16, 0, 1, 580); /* 18 blocks: sub-groups 8, 8, 2; 4 taps per block (14 = 4+4+4+2) */
  check_conv(2, 16, 17, 16, 32, 1, 1, 590); /* padded grid (W odd): 22 blocks */
  check_conv(4, 16, 8, 24, 20, 1, 1, 600);  /* compact grid; 24 and 20 channels: masked rows and columns */
  check_conv(2, 2, 32, 32, 64, 1, 1, 610);  /* weights packed once, both directions from one read: rows of 32 */
  check_conv(2, 4, 16, 64, 32, 0, 1, 620);  /* the same, 64 -> 32 on rows of 16 */
}
