/* A hand-made dataset directory for the loader tests (test_dataset_weights.c, test_dataset_block.c):
 * the configuration problem_scale 4 (G = 16), 3 categories, 12 instances, val_split 5, which
 * sf_dataset_open takes as 12 training volumes and no validation; the four split directories; and
 * the files of training volume `id` written from caller arrays. */
#ifndef SF_TEST_DATASET_FIXTURE_H
#define SF_TEST_DATASET_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "scaffold/config.h"
#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "testutil.h"

#define DS_FIXTURE_G 16

static inline void ds_fixture_init(sf_config *c, const char *dir)
{
  sf_config_init(c);
  sf_config_apply_override(c, "problem_scale=4");
  sf_config_apply_override(c, "n_categories=3");
  sf_config_apply_override(c, "n_instances_used_per_fractal=12");
  sf_config_apply_override(c, "val_split=5"); /* int(12 * 5 / 100) = 0 validation volumes */
  sf_config_finalize(c);
  const char *subs[] = {"volumes/training", "volumes/validation", "masks/training", "masks/validation"};
  for (int i = 0; i < 4; i++) {
    char *d = sf_path_join(dir, subs[i]);
    sf_mkdir_p(d);
    free(d);
  }
}

/* Training volume id: vol float32 (3, G, G, G) (NULL: leave it), mask uint16 (G, G, G) (NULL: leave it). */
static inline void ds_fixture_write(const char *dir, int id, const float *vol, const uint16_t *mask)
{
  const size_t shape[4] = {3, DS_FIXTURE_G, DS_FIXTURE_G, DS_FIXTURE_G};
  char path[4096], err[1024];
  if (mask) {
    snprintf(path, sizeof path, "%s/masks/training/%d_shard000000_mask.npy", dir, id);
    SF_CHECK(sf_npy_write(path, SF_NPY_U16, 3, shape + 1, mask, err, sizeof err) == 0, "%s", err);
  }
  if (vol) {
    snprintf(path, sizeof path, "%s/volumes/training/%d_shard000000.npy", dir, id);
    SF_CHECK(sf_npy_write(path, SF_NPY_F32, 4, shape, vol, err, sizeof err) == 0, "%s", err);
  }
}

#endif
