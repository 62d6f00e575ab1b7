/* Small helpers shared by the convolution kernel tests: random tensors, slab halo pointers,
 * float/double conversion. Header-only (static) so each test stays one source file. */
#ifndef SF_CONVTEST_H
#define SF_CONVTEST_H

#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/rng.h"

/* n floats uniform in [-1, 1) from stream `stream` of seed 1234. */
static inline float *ct_rand(size_t n, uint64_t stream)
{
  float *p = sf_malloc(sizeof(float) * (n ? n : 1), "test tensor");
  sf_rng r;
  sf_rng_seed(&r, 1234, stream);
  sf_rng_fill_uniform(p, n, -1.0f, 1.0f, &r);
  return p;
}

static inline float *ct_zeros(size_t n)
{
  return sf_calloc(n ? n : 1, sizeof(float), "test tensor");
}

static inline float *ct_copy(const float *a, size_t n)
{
  float *p = sf_malloc(sizeof(float) * (n ? n : 1), "test tensor");
  memcpy(p, a, sizeof(float) * n);
  return p;
}

static inline double *ct_to_double(const float *a, size_t n)
{
  double *p = sf_malloc(sizeof(double) * (n ? n : 1), "test tensor");
  for (size_t i = 0; i < n; i++) p[i] = a[i];
  return p;
}

static inline float *ct_to_float(const double *a, size_t n)
{
  float *p = sf_malloc(sizeof(float) * (n ? n : 1), "test tensor");
  for (size_t i = 0; i < n; i++) p[i] = (float)a[i];
  return p;
}

/* Plane d of a (D,H,W,C) volume, or NULL outside [0, D) (the face padding). */
static inline const float *ct_plane(const float *vol, int d, int D, int H, int W, int C)
{
  if (d < 0 || d >= D) return NULL;
  return vol + (size_t)d * H * W * C;
}

#endif
