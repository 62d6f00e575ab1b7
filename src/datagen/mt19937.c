/* MT19937 (Matsumoto & Nishimura 2002 reference algorithm) with CPython's and NumPy's seedings
 * and the draw algorithms upstream's volume generator uses (see scaffold/mt19937.h). Each routine
 * names the CPython / NumPy function it reproduces; draw order and rejection rules match them
 * exactly, which is what makes volumes_contents, the split and the colours bit-identical. */
#include "scaffold/mt19937.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"

#define MT_N 624
#define MT_M 397

void sf_mt_init_genrand(sf_mt19937 *m, uint32_t s)
{
  m->mt[0] = s;
  for (int i = 1; i < MT_N; i++)
    m->mt[i] = 1812433253u * (m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) + (uint32_t)i;
  m->mti = MT_N;
}

void sf_mt_init_by_array(sf_mt19937 *m, const uint32_t *key, size_t len)
{
  sf_mt_init_genrand(m, 19650218u);
  size_t i = 1, j = 0, k = (MT_N > len ? MT_N : len);
  for (; k; k--) {
    m->mt[i] = (m->mt[i] ^ ((m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
    i++, j++;
    if (i >= MT_N) m->mt[0] = m->mt[MT_N - 1], i = 1;
    if (j >= len) j = 0;
  }
  for (k = MT_N - 1; k; k--) {
    m->mt[i] = (m->mt[i] ^ ((m->mt[i - 1] ^ (m->mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
    i++;
    if (i >= MT_N) m->mt[0] = m->mt[MT_N - 1], i = 1;
  }
  m->mt[0] = 0x80000000u; /* MSB is 1, assuring a non-zero initial array */
  m->mti = MT_N;
}

void sf_mt_seed_numpy(sf_mt19937 *m, uint32_t s) { sf_mt_init_genrand(m, s); }

void sf_mt_seed_python(sf_mt19937 *m, int64_t s)
{
  /* random_seed(): key = |s| split into 32-bit words, least significant first; 0 -> [0]. */
  uint64_t a = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
  uint32_t key[2] = {(uint32_t)a, (uint32_t)(a >> 32)};
  sf_mt_init_by_array(m, key, key[1] ? 2 : 1);
}

uint32_t sf_mt_next32(sf_mt19937 *m)
{
  static const uint32_t mag01[2] = {0x0u, 0x9908b0dfu};
  uint32_t y;
  if (m->mti >= MT_N) {
    int kk;
    for (kk = 0; kk < MT_N - MT_M; kk++) {
      y = (m->mt[kk] & 0x80000000u) | (m->mt[kk + 1] & 0x7fffffffu);
      m->mt[kk] = m->mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1u];
    }
    for (; kk < MT_N - 1; kk++) {
      y = (m->mt[kk] & 0x80000000u) | (m->mt[kk + 1] & 0x7fffffffu);
      m->mt[kk] = m->mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1u];
    }
    y = (m->mt[MT_N - 1] & 0x80000000u) | (m->mt[0] & 0x7fffffffu);
    m->mt[MT_N - 1] = m->mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1u];
    m->mti = 0;
  }
  y = m->mt[m->mti++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= (y >> 18);
  return y;
}

/* ---- CPython random ------------------------------------------------------------------------ */

uint64_t sf_py_getrandbits(sf_mt19937 *m, int k)
{
  SF_ASSERT(k >= 1 && k <= 64);
  if (k <= 32) return sf_mt_next32(m) >> (32 - k);
  /* Words are least significant first; the last (most significant) word drops its low bits. */
  uint64_t lo = sf_mt_next32(m);
  uint64_t hi = sf_mt_next32(m) >> (64 - k);
  return lo | (hi << 32);
}

uint64_t sf_py_randbelow(sf_mt19937 *m, uint64_t n)
{
  SF_ASSERT(n >= 1);
  int k = 64 - __builtin_clzll(n); /* n.bit_length() */
  uint64_t r = sf_py_getrandbits(m, k);
  while (r >= n) r = sf_py_getrandbits(m, k);
  return r;
}

double sf_py_random(sf_mt19937 *m)
{
  uint32_t a = sf_mt_next32(m) >> 5, b = sf_mt_next32(m) >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* Open-addressing set of int64 for the "set" branch of random.sample. */
typedef struct {
  int64_t *slot;
  size_t cap;
} i64set;

static int i64set_add(i64set *s, int64_t v) /* 1 if added, 0 if present */
{
  size_t h = (size_t)((uint64_t)v * 0x9e3779b97f4a7c15ULL) & (s->cap - 1);
  while (s->slot[h] != -1) {
    if (s->slot[h] == v) return 0;
    h = (h + 1) & (s->cap - 1);
  }
  s->slot[h] = v;
  return 1;
}

int sf_py_sample_range(sf_mt19937 *m, int64_t n, int64_t k, int64_t *out)
{
  if (k < 0 || k > n) return -1;
  int64_t setsize = 21; /* size of a small set minus size of an empty list */
  if (k > 5) setsize += (int64_t)1 << (2 * (int)ceil(log((double)(k * 3)) / log(4.0)));
  if (n <= setsize) {
    /* Pool algorithm: an n-length list is cheaper than a set. */
    int64_t *pool = sf_malloc((size_t)(n ? n : 1) * sizeof *pool, "random.sample pool");
    for (int64_t i = 0; i < n; i++) pool[i] = i;
    for (int64_t i = 0; i < k; i++) {
      int64_t j = (int64_t)sf_py_randbelow(m, (uint64_t)(n - i));
      out[i] = pool[j];
      pool[j] = pool[n - i - 1]; /* move non-selected item into vacancy */
    }
    free(pool);
  } else {
    i64set s = {NULL, 16};
    while (s.cap < (size_t)k * 2 + 2) s.cap <<= 1;
    s.slot = sf_malloc(s.cap * sizeof *s.slot, "random.sample set");
    memset(s.slot, 0xff, s.cap * sizeof *s.slot); /* -1 = empty */
    for (int64_t i = 0; i < k; i++) {
      int64_t j = (int64_t)sf_py_randbelow(m, (uint64_t)n);
      while (!i64set_add(&s, j)) j = (int64_t)sf_py_randbelow(m, (uint64_t)n);
      out[i] = j;
    }
    free(s.slot);
  }
  return 0;
}

/* ---- NumPy legacy RandomState -------------------------------------------------------------- */

uint64_t sf_np_random_interval(sf_mt19937 *m, uint64_t max)
{
  if (max == 0) return 0;
  uint64_t mask = max, value;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  if (max <= 0xffffffffULL) {
    while ((value = (sf_mt_next32(m) & mask)) > max) {}
  } else {
    /* next_uint64 of the legacy MT19937 bit generator: (hi << 32) | lo. */
    do {
      uint64_t hi = sf_mt_next32(m), lo = sf_mt_next32(m);
      value = ((hi << 32) | lo) & mask;
    } while (value > max);
  }
  return value;
}

void sf_np_shuffle_rows(sf_mt19937 *m, void *base, size_t n, size_t row_bytes)
{
  if (n < 2) return;
  unsigned char *b = base, *tmp = sf_malloc(row_bytes, "shuffle row");
  for (size_t i = n - 1; i >= 1; i--) {
    size_t j = (size_t)sf_np_random_interval(m, i);
    if (i == j) continue;
    memcpy(tmp, b + j * row_bytes, row_bytes);
    memcpy(b + j * row_bytes, b + i * row_bytes, row_bytes);
    memcpy(b + i * row_bytes, tmp, row_bytes);
  }
  free(tmp);
}

double sf_np_rand(sf_mt19937 *m)
{
  int32_t a = (int32_t)(sf_mt_next32(m) >> 5), b = (int32_t)(sf_mt_next32(m) >> 6);
  return (a * 67108864.0 + b) / 9007199254740992.0;
}
