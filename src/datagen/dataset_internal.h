/* Internals shared by the dataset files (volumes.c: the StarPU generation task graph;
 * dataset_files.c: config_id and side files; dataset_cache.c: reuse/staging; dataset_loader.c: listing and loading). Not public. */
#ifndef SF_DATASET_INTERNAL_H
#define SF_DATASET_INTERNAL_H

#include "scaffold/config.h"
#include "scaffold/dataset.h"

#define SF_SHARD_SUFFIX "_shard000000" /* default [1,1,1] layout: one shard per volume */

/* <dir>/{volumes|masks}/{training|validation}/<vol>_shard000000[_mask].npy, malloc'ed. */
char *sf_dataset_file(const char *dir, int is_val, long vol, int mask);
/* Grid edge G = 2^problem_scale. */
int sf_dataset_grid(const sf_config *c);

/* Generates volumes vols[0..n) of plan p into dir (whose volumes/ and masks/ split directories
 * exist) as one StarPU task per volume, and waits for them. StarPU must be initialised.
 * Returns 0, or -1 with the first failure (naming the file) in err and how many failed; after
 * SIGINT/SIGTERM (scaffold/signals.h) the volumes not started are abandoned and it returns -1. */
int sf_volumes_generate(const sf_config *c, const sf_volume_plan *p, const char *dir, const int *vols, int n,
                        char *err, size_t errlen);
/* Generates one volume synchronously in the calling thread (the task body). */
int sf_volume_generate_one(const sf_config *c, const sf_volume_plan *p, const char *dir, int vol, char *err,
                           size_t errlen);

/* dataset_files.c: side files and metadata. */
char *sf_ds_contents_csv(const sf_volume_plan *p, size_t *len); /* volumes_contents.csv text */
int sf_ds_write_side_files(const sf_config *c, const sf_volume_plan *p, const char *dir, const char *config_id,
                           char *err, size_t errlen);
int sf_ds_write_meta(const sf_config *c, const char *dir, const char *config_id, const char *commit, char *err,
                     size_t errlen);
char *sf_ds_meta_value(const char *text, const char *key); /* top-level "key: value", malloc'ed */
void sf_ds_code_commit(char *buf, size_t len);               /* the build's git commit (short hash) or no-commit-id */

#endif
