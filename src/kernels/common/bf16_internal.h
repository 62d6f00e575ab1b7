/* Shared by every bf16 kernel (the 3x3x3, transposed and 1x1x1 convolutions, the AMX GEMM): the
 * bf16 type, the AVX-512 BF16 function attribute, and the fp32 to bf16 conversion (common/bf16.c). */
#ifndef SF_BF16_INTERNAL_H
#define SF_BF16_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

typedef uint16_t sf_bf16;

#define SF_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* dst[i] = src[i] rounded to bf16 (nearest even, as VCVTNE2PS2BF16), i < n */
void sf_bf16_from_floats(sf_bf16 *dst, const float *src, size_t n);

#endif
