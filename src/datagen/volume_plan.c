/* The volume plan (spec §4.1, §4.2): which (category, instance) pairs make up each volume, the
 * train/val split and the per-category colours, with upstream's exact RNG calls (volumegen.main):
 *   random.seed(seed); np.random.seed(seed)
 *   per category: random.sample(range(145), min(145, remaining)) until n_inst instances
 *   np.random.shuffle(pairs); reshape to rows of n_fracts_per_vol pairs
 *   random.seed(seed); val = random.sample(range(num_volumes), int(num_volumes*val_split/100))
 *   np.random.seed(seed); colours = np.random.rand(n_categories, 3)
 * Pure: no files, no StarPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/dataset.h"
#include "scaffold/mt19937.h"

#define SF_INSTANCES_PER_CLASS SF_N_INSTANCES /* upstream's hard-wired range(145) */

/* The checks and sizes shared by sf_volume_plan_make and sf_volume_plan_sizes. */
static int plan_sizes(long seed, long n_categories, long n_instances_used_per_fractal, long n_fracts_per_vol,
                      double val_split, long *n_inst_out, int *rounded, int *n_train, int *n_val, char *err,
                      size_t errlen)
{
  if (rounded) *rounded = 0;
  if (seed < 0 || seed > 0xffffffffL) {
    snprintf(err, errlen, "seed %ld is outside [0, 2^32-1] (NumPy's np.random.seed accepts no other)", seed);
    return -1;
  }
  if (n_categories < 1 || n_fracts_per_vol < 1 || n_instances_used_per_fractal < 1) {
    snprintf(err, errlen, "n_categories (%ld), n_fracts_per_vol (%ld) and n_instances_used_per_fractal (%ld) must be >= 1",
             n_categories, n_fracts_per_vol, n_instances_used_per_fractal);
    return -1;
  }
  if (!(val_split >= 0.0 && val_split < 100.0)) {
    snprintf(err, errlen, "val_split %g is outside [0, 100)", val_split);
    return -1;
  }
  long n_inst = n_instances_used_per_fractal;
  if (n_inst % n_fracts_per_vol != 0) {
    n_inst = n_inst / n_fracts_per_vol * n_fracts_per_vol;
    if (rounded) *rounded = 1;
  }
  if (n_inst == 0) {
    snprintf(err, errlen, "n_instances_used_per_fractal %ld rounds down to 0 volumes per class with n_fracts_per_vol %ld",
             n_instances_used_per_fractal, n_fracts_per_vol);
    return -1;
  }
  if (n_categories * n_inst > 100000000L) {
    snprintf(err, errlen, "n_categories*n_instances_used_per_fractal = %ld is too large", n_categories * n_inst);
    return -1;
  }
  int num_volumes = (int)(n_categories * n_inst / n_fracts_per_vol);
  *n_inst_out = n_inst;
  *n_val = (int)((double)num_volumes * val_split / 100.0);
  *n_train = num_volumes - *n_val;
  return 0;
}

int sf_volume_plan_sizes(long seed, long n_categories, long n_instances_used_per_fractal, long n_fracts_per_vol,
                         double val_split, int *n_train, int *n_val, char *err, size_t errlen)
{
  long n_inst;
  return plan_sizes(seed, n_categories, n_instances_used_per_fractal, n_fracts_per_vol, val_split, &n_inst, NULL,
                    n_train, n_val, err, errlen);
}

int sf_volume_plan_make(sf_volume_plan *p, long seed, long n_categories, long n_instances_used_per_fractal,
                        long n_fracts_per_vol, double val_split, int *rounded, char *err, size_t errlen)
{
  memset(p, 0, sizeof *p);
  long n_inst;
  int n_train, n_val;
  if (plan_sizes(seed, n_categories, n_instances_used_per_fractal, n_fracts_per_vol, val_split, &n_inst, rounded,
                 &n_train, &n_val, err, errlen) != 0)
    return -1;
  p->seed = seed;
  p->n_categories = (int)n_categories;
  p->n_inst = (int)n_inst;
  p->n_fracts_per_vol = (int)n_fracts_per_vol;
  size_t npairs = (size_t)(n_categories * n_inst);
  p->num_volumes = (int)(npairs / (size_t)n_fracts_per_vol);
  p->row_len = 1 + 2 * (int)n_fracts_per_vol;

  sf_mt19937 py, np;
  sf_mt_seed_python(&py, seed);
  sf_mt_seed_numpy(&np, (uint32_t)seed);

  /* instances_list: (category, instance) rows, category-major */
  int64_t *pairs = sf_malloc(npairs * 2 * sizeof *pairs, "instance pairs");
  int64_t *draw = sf_malloc(SF_INSTANCES_PER_CLASS * sizeof *draw, "sample");
  size_t np_ = 0;
  for (long cat = 0; cat < n_categories; cat++) {
    long remaining = n_inst;
    while (remaining > 0) {
      long k = remaining < SF_INSTANCES_PER_CLASS ? remaining : SF_INSTANCES_PER_CLASS;
      sf_py_sample_range(&py, SF_INSTANCES_PER_CLASS, k, draw);
      for (long j = 0; j < k; j++) pairs[2 * np_] = cat, pairs[2 * np_ + 1] = draw[j], np_++;
      remaining -= k;
    }
  }
  free(draw);
  SF_ASSERT(np_ == npairs);
  sf_np_shuffle_rows(&np, pairs, npairs, 2 * sizeof *pairs);

  p->contents = sf_malloc((size_t)p->num_volumes * (size_t)p->row_len * sizeof *p->contents, "volumes_contents");
  for (int v = 0; v < p->num_volumes; v++) {
    int64_t *row = p->contents + (size_t)v * (size_t)p->row_len;
    row[0] = v;
    memcpy(row + 1, pairs + (size_t)v * 2 * (size_t)n_fracts_per_vol, 2 * (size_t)n_fracts_per_vol * sizeof *row);
  }
  free(pairs);

  /* split: random.seed(seed) again, int(num_volumes * val_split / 100) validation volumes */
  sf_mt_seed_python(&py, seed);
  p->n_val = n_val;
  p->n_train = n_train;
  int64_t *val = sf_malloc((size_t)(p->n_val ? p->n_val : 1) * sizeof *val, "val sample");
  sf_py_sample_range(&py, p->num_volumes, p->n_val, val);
  p->is_val = sf_calloc((size_t)p->num_volumes, 1, "is_val");
  for (int i = 0; i < p->n_val; i++) p->is_val[val[i]] = 1;
  free(val);
  p->val_ids = sf_malloc((size_t)(p->n_val ? p->n_val : 1) * sizeof(int), "val ids");
  p->train_ids = sf_malloc((size_t)(p->n_train ? p->n_train : 1) * sizeof(int), "train ids");
  for (int v = 0, a = 0, b = 0; v < p->num_volumes; v++) {
    if (p->is_val[v]) p->val_ids[a++] = v;
    else p->train_ids[b++] = v;
  }

  /* colours: np.random.seed(seed); np.random.rand(n_categories, 3) */
  sf_mt_seed_numpy(&np, (uint32_t)seed);
  p->colours = sf_malloc((size_t)n_categories * 3 * sizeof *p->colours, "colours");
  for (long i = 0; i < n_categories * 3; i++) p->colours[i] = sf_np_rand(&np);
  return 0;
}

void sf_volume_plan_free(sf_volume_plan *p)
{
  free(p->contents);
  free(p->val_ids);
  free(p->train_ids);
  free(p->is_val);
  free(p->colours);
  memset(p, 0, sizeof *p);
}

int sf_volume_plan_distinct(const sf_volume_plan *p, int v)
{
  const int64_t *row = p->contents + (size_t)v * (size_t)p->row_len;
  int n = 0;
  for (int i = 0; i < p->n_fracts_per_vol; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= row[1 + 2 * j] == row[1 + 2 * i];
    n += !seen;
  }
  return n;
}
