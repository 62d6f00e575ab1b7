/* xoshiro256** with splitmix64 seeding (see scaffold/rng.h). */
#include "scaffold/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t sf_rng_mix(uint64_t a, uint64_t b)
{
  uint64_t x = a ^ (b * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
  return splitmix64(&x);
}

void sf_rng_seed(sf_rng *r, uint64_t seed, uint64_t stream)
{
  uint64_t x = sf_rng_mix(seed, stream);
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sf_rng_next(sf_rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double sf_rng_uniform(sf_rng *r) { return (double)(sf_rng_next(r) >> 11) * 0x1.0p-53; }

double sf_rng_uniform_range(sf_rng *r, double lo, double hi) { return lo + (hi - lo) * sf_rng_uniform(r); }

uint64_t sf_rng_below(sf_rng *r, uint64_t n)
{
  if (n <= 1) return 0;
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t v;
  do v = sf_rng_next(r);
  while (v >= limit);
  return v % n;
}

void sf_rng_fill_uniform(float *x, size_t n, float lo, float hi, sf_rng *r)
{
  for (size_t i = 0; i < n; i++) x[i] = (float)sf_rng_uniform_range(r, lo, hi);
}
