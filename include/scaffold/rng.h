/* Our own seeded RNG (xoshiro256**, seeded by splitmix64 from (seed, stream)), used wherever
 * upstream uses torch's or numba's RNG: weight init, training sampler, fractal point clouds.
 * Streams make results independent of worker count and task order: each (seed, stream) pair is an
 * independent sequence. */
#ifndef SF_RNG_H
#define SF_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t s[4]; } sf_rng;

void sf_rng_seed(sf_rng *r, uint64_t seed, uint64_t stream);
uint64_t sf_rng_next(sf_rng *r);
double sf_rng_uniform(sf_rng *r);                      /* [0, 1), 53 bits */
double sf_rng_uniform_range(sf_rng *r, double lo, double hi); /* [lo, hi) */
uint64_t sf_rng_below(sf_rng *r, uint64_t n);          /* unbiased integer in [0, n) */
void sf_rng_fill_uniform(float *x, size_t n, float lo, float hi, sf_rng *r);
/* Combine keys into one 64-bit stream id (order-sensitive). */
uint64_t sf_rng_mix(uint64_t a, uint64_t b);

#endif
