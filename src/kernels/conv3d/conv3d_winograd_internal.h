/* Shared by the Winograd F(2x2x2, 3x3x3) convolution driver (conv3d_winograd.c) and its per-ISA
 * stages (conv3d_winograd_tiles.h, instantiated beside the direct register blocks in
 * conv3d_direct_{avx512,avx2,c}.c): the job a block of tiles works on and the table of stages.
 *
 * Layouts (xi = one of the 4x4x4 = 64 transformed points, i*16 + j*4 + l for depth, row, column):
 *   U: (64, K, N) transformed weights, each xi's (K, N) stored as column blocks of 2*vw floats
 *      (the last block vw when N is an odd multiple of vw): block b at U + xi*K*N + b*2*vw*K, (K, width);
 *   V: (64, tb, K) transformed input tiles of one block of tb tiles, points vs floats apart;
 *   M: (64, tb, N) their products, points ms floats apart, transformed back into 2x2x2 output voxels;
 *      for dW, the transformed output-gradient tiles (A dy A^T, 2x2x2 -> 4x4x4) instead;
 *   Wt: (64, K, N) dW only: the sum over tiles of V^T M per point, plain (K, N) row-major matrices,
 *      which G^T (4 -> 3 per axis) turns into the 27 taps' gradient rows at the end.
 * vs and ms are padded a cache line past tb*K, tb*N: a tile's 64 points are stored (and read back)
 * at once, and at a power-of-two stride they would all fall in one L1 set.
 * bf16 GEMMs (the AVX-512 set only, conv3d_winograd_bf16_tiles.h; U and V then NULL):
 *   Ub: (64, K, N) bf16 = U rounded, each column block (K/2, width, 2): input channel pairs
 *       (2p, 2p+1) of one output channel adjacent, as one VDPBF16PS lane takes them;
 *   Vb: (64, tb, K) bf16 = V rounded (channel pairs are adjacent already), points vs bf16 apart.
 * bf16 dW GEMMs (conv3d_winograd_bf16_dw_tiles.h; V, M, Ub then NULL): the sum runs over tiles, so a
 * VDPBF16PS lane takes a pair of tiles (2q, 2q+1) of one channel, adjacent:
 *   Vb: (64, tb/2, K, 2) bf16 = V rounded, points vs bf16 apart;
 *   Mb: (64, tb/2, N, 2) bf16 = the transformed dy tiles (M above) rounded, points ms bf16 apart;
 *   a block of an odd number of tiles pads its last pair with a zero tile; Wt is fp32, as above. */
#ifndef SF_CONV3D_WINOGRAD_INTERNAL_H
#define SF_CONV3D_WINOGRAD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  float *y;                   /* (nd, H, W, N) output slab */
  const float *lo, *x, *hi;   /* input planes -1 (NULL: zero), 0..nd-1, nd (NULL: zero), (H, W, K) each */
  const float *U;             /* (64, K, N) transformed weights, as above (forward/dX) */
  const float *dy;            /* dW: (nd, H, W, N) output gradient */
  float *Wt;                  /* dW: (64, K, N) accumulated products, as above */
  const float *zero;          /* a row of W*K zeros: the rows outside the volume */
  float *V, *M;               /* scratch: (64, tb, K), (64, tb, N) */
  const uint16_t *Ub;         /* bf16 GEMMs: (64, K, N) transformed weights, as above (forward/dX) */
  uint16_t *Vb;               /* bf16 GEMMs: (64, tb, K) scratch, as above; dW: (64, tb/2, K, 2) */
  uint16_t *Mb;               /* bf16 dW: (64, tb/2, N, 2) scratch, as above */
  uint64_t pts;               /* bf16 dW: bit xi set = point xi's GEMM runs (the taps asked for need it) */
  int wt_first;               /* bf16 dW: the block is the call's first: it stores Wt instead of adding */
  size_t vs, ms;              /* between points in V, M */
  int nd, H, W, K, N, tb;     /* nd, H, W even; K, N multiples of the set's vw */
} sf_wino_job;

typedef struct {
  int vw;
  /* U = the transformed weights of w: (27, K, N) (tap (kd,kh,kw) = kd*9+kh*3+kw, then input, output
   * channel); N a multiple of vw */
  void (*weights)(float *U, const float *w, int K, int N);
  /* the output voxels of tiles [t0, t0 + nt) (nt <= tb; tile t = (td, th, tw) flattened, tw fastest,
   * covering output voxels 2td..2td+1, 2th..2th+1, 2tw..2tw+1) */
  void (*block)(const sf_wino_job *j, size_t t0, int nt);
  /* dW: Wt += the products of tiles [t0, t0 + nt) (x tiles as above, dy's 2x2x2 output tiles) */
  void (*dw_block)(const sf_wino_job *j, size_t t0, int nt);
  /* dW: dw: (t1 - t0, K, N) += the rows of taps [t0, t1) of G^T Wt G per channel pair */
  void (*dw_finish)(float *dw, const float *Wt, int K, int N, int t0, int t1);
  /* The bf16 GEMMs (NULL in a set without them; the CPU must have AVX512_BF16): Ub = U (from
   * weights) rounded to bf16 and pair-interleaved, K even; block as above, on j->Vb and j->Ub */
  void (*bf16_weights)(uint16_t *Ub, const float *U, int K, int N);
  void (*bf16_block)(const sf_wino_job *j, size_t t0, int nt);
  /* dW with bf16 GEMMs (conv3d_winograd_bf16_dw_tiles.h): Wt += the products of tiles [t0, t0 + nt) at the
   * points j->pts selects, from j->Vb and j->Mb (dW layouts above) */
  void (*bf16_dw_block)(const sf_wino_job *j, size_t t0, int nt);
} sf_wino_kernels;

extern const sf_wino_kernels sf_wino_kernels_c;
#if defined(__x86_64__) && defined(__GNUC__)
extern const sf_wino_kernels sf_wino_kernels_avx2, sf_wino_kernels_avx512;
#endif

#endif
