/* Shared by the AMX kernels (the 3x3x3 convolutions conv3d/conv3d_amx*.c, the transposed convolution
 * upconv3d/upconv3d_amx.c, the GEMM gemm/gemm_amx.c): the tile configuration and the function attribute. AMX multiplies tiles: C (16 x 16 fp32) += A (16 rows x 32
 * bf16) . B (16 rows of 16 column pairs), B in "VNNI" order (B[k/2][n][k%2]). Tiles 0-3 are C accumulators, 4-5
 * A tiles, 6-7 B tiles. The OS must allow the tile data state (sf_amx_supported asks Linux once per process,
 * arch_prctl ARCH_REQ_XCOMP_PERM). */
#ifndef SF_AMX_INTERNAL_H
#define SF_AMX_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include <immintrin.h>

#include "bf16_internal.h"

#define SF_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

/* A run of padded voxels: AMX kernels read whole tiles of 32 consecutive padded voxels past the last output
 * voxel, so their slabs carry this many zero voxels beyond sf_bf16_pad_voxels */
#define SF_AMX_MARGIN 64

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} sf_amx_config;

/* C tiles 16 x 64 B; A tiles a_rows x a_colsb; B tiles b_rows x 64 B */
static inline void sf_amx_config_set(sf_amx_config *c, int a_rows, int a_colsb, int b_rows)
{
  memset(c, 0, sizeof *c);
  c->palette = 1;
  for (int i = 0; i < 4; i++) c->colsb[i] = 64, c->rows[i] = 16;
  for (int i = 4; i < 6; i++) c->colsb[i] = (uint16_t)a_colsb, c->rows[i] = (uint8_t)a_rows;
  for (int i = 6; i < 8; i++) c->colsb[i] = 64, c->rows[i] = (uint8_t)b_rows;
}

/* Full tiles configured (A 16 x 64 B, B 16 rows) and the 4 C tiles zeroed: where the tile benchmarks
 * (tests/kernels_conv/bench_amx_tiles.c, tests/perf/probe_cpus.c) start their loops */
SF_AMX_TARGET static inline void sf_amx_start_full_tiles(void)
{
  sf_amx_config cfg;
  sf_amx_config_set(&cfg, 16, 64, 16);
  _tile_loadconfig(&cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

/* The compact grid of a slab (forward and dX: conv3d_amx.c, dW: conv3d_amx_dw.c, for planes whose rows are too
 * short for runs of interior voxels on the padded grid): planes -1..nd of H+2 rows (a zero row above and below)
 * of W voxels, no padding column, so the interior rows of a plane are consecutive. Interior voxel v = (d, h, w)
 * of the slab sits at: */
static inline size_t sf_amx_compact_idx(size_t v, int H, int W)
{
  size_t hw = (size_t)H * W, d = v / hw, h = v % hw / W;
  return ((d + 1) * (H + 2) + h + 1) * W + v % W;
}

/* 16 x 16 floats in r[] transposed in registers (r[j] = the old column j) */
SF_AMX_TARGET static inline void sf_amx_transpose16(__m512 r[16])
{
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; j++) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

#endif
