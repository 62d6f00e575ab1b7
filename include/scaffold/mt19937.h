/* MT19937 with the exact seedings and draw algorithms of CPython's `random` and NumPy's legacy
 * `RandomState`, so that upstream's instance selection, train/val split and class colours are
 * bit-identical (spec §4.2, §11.13 option (a)). Pure C, no StarPU.
 *
 *   CPython: random.seed(int) = init_by_array(32-bit words of |seed|); getrandbits, _randbelow
 *            (getrandbits(bit_length) rejection), sample(range(n), k) (pool or set algorithm).
 *   NumPy:   np.random.seed(int) = init_genrand(seed); random_interval (masked rejection),
 *            shuffle (Fisher-Yates from the top, rows of a 2-D array), rand (53-bit doubles). */
#ifndef SF_MT19937_H
#define SF_MT19937_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t mt[624];
  int mti;
} sf_mt19937;

/* NumPy legacy seeding: np.random.seed(s), s in [0, 2^32). */
void sf_mt_seed_numpy(sf_mt19937 *m, uint32_t s);
/* CPython seeding: random.seed(s) for an int s (the sign is dropped, as CPython does). */
void sf_mt_seed_python(sf_mt19937 *m, int64_t s);
/* The raw generators. */
void sf_mt_init_genrand(sf_mt19937 *m, uint32_t s);
void sf_mt_init_by_array(sf_mt19937 *m, const uint32_t *key, size_t len);
uint32_t sf_mt_next32(sf_mt19937 *m);

/* ---- CPython random ---- */
/* random.getrandbits(k) for 1 <= k <= 64. */
uint64_t sf_py_getrandbits(sf_mt19937 *m, int k);
/* random._randbelow(n) for n >= 1 (getrandbits(n.bit_length()) with rejection). */
uint64_t sf_py_randbelow(sf_mt19937 *m, uint64_t n);
/* random.random(): 53-bit double from two draws. */
double sf_py_random(sf_mt19937 *m);
/* random.sample(range(n), k) -> out[0..k). Returns 0, or -1 if k > n. */
int sf_py_sample_range(sf_mt19937 *m, int64_t n, int64_t k, int64_t *out);

/* ---- NumPy legacy RandomState ---- */
/* random_interval(max): uniform in [0, max], masked rejection on 32- (or 64-) bit draws. */
uint64_t sf_np_random_interval(sf_mt19937 *m, uint64_t max);
/* np.random.shuffle on an array of n rows of row_bytes bytes each (a 1-D array has one element
 * per row; a 2-D array has its rows permuted). */
void sf_np_shuffle_rows(sf_mt19937 *m, void *base, size_t n, size_t row_bytes);
/* np.random.rand(): (a>>5 * 2^26 + b>>6) / 2^53. */
double sf_np_rand(sf_mt19937 *m);

#endif
