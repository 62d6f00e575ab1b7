/* CE class weights (spec §6.2) from a hand-made mask set: 12 training masks (G = 16) where mask
 * "<id>" holds id+1 voxels of class (id % 3) + 1. sf_dataset_open lists the ids string-sorted
 * ("0", "1", "10", "11", "2", ..., "9"); with ce_weight_sample_fraction 0.25 the sampled indices
 * are linspace(0, 11, 3).long() = 0, 5, 11, i.e. ids "0", "3" and "9": 1 + 4 + 10 = 15 foreground
 * voxels of 3 * 4096, so w0 = 12288/12273 and every foreground weight is 12288/15. The directory and
 * configuration are dataset_fixture.h's. */
#include <stdlib.h>
#include <string.h>

#include "scaffold/config.h"
#include "scaffold/dataset.h"
#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "dataset_fixture.h"
#include "testutil.h"

int main(void)
{
  char *tmp = sf_test_tmpdir("dsw"), err[1024];
  sf_config c;
  ds_fixture_init(&c, tmp);
  const size_t G = DS_FIXTURE_G, N = G * G * G;
  uint16_t *m = calloc(N, sizeof *m);
  float *vol = calloc(3 * N, sizeof *vol);
  size_t vshape[4] = {3, G, G, G};
  for (int id = 0; id < 12; id++) {
    memset(m, 0, N * sizeof *m);
    for (int k = 0; k <= id; k++) m[k * 37] = (uint16_t)(id % 3 + 1);
    ds_fixture_write(tmp, id, vol, m);
  }
  sf_dataset d;
  int rc = sf_dataset_open(&c, tmp, &d, err, sizeof err);
  SF_CHECK(rc == 0, "open: %s", err);
  if (rc == 0) {
    const char *order[12] = {"0", "1", "10", "11", "2", "3", "4", "5", "6", "7", "8", "9"};
    SF_CHECK(d.n_train == 12 && d.n_val == 0, "counts %d / %d, want 12 / 0", d.n_train, d.n_val);
    for (int i = 0; i < 12 && i < d.n_train; i++)
      SF_CHECK(!strcmp(d.train_ids[i], order[i]), "train id #%d is '%s', want '%s' (string order)", i, d.train_ids[i],
               order[i]);
    float w[4];
    SF_CHECK(sf_dataset_class_weights(&d, 0.25, w, NULL, err, sizeof err) == 0, "class weights: %s", err);
    float w0 = (float)(12288.0 / 12273.0), wf = (float)(12288.0 / 15.0);
    SF_CHECK(w[0] == w0, "w0 = %.9g, want %.9g", w[0], w0);
    for (int k = 1; k < 4; k++) SF_CHECK(w[k] == wf, "w[%d] = %.9g, want %.9g", k, w[k], wf);
    /* fraction 1: every mask, 78 foreground voxels */
    SF_CHECK(sf_dataset_class_weights(&d, 1.0, w, NULL, err, sizeof err) == 0, "class weights: %s", err);
    SF_CHECK(w[1] == (float)(12.0 * 4096 / 78.0), "all masks: w[1] = %.9g, want %.9g", w[1], (float)(12.0 * 4096 / 78.0));
    /* a mask with a label outside 0..n_categories is reported, naming the file */
    m[5] = 9;
    char path[4096];
    snprintf(path, sizeof path, "%s/masks/training/0_shard000000_mask.npy", tmp);
    sf_npy_write(path, SF_NPY_U16, 3, vshape + 1, m, err, sizeof err);
    err[0] = '\0';
    SF_CHECK(sf_dataset_class_weights(&d, 0.25, w, NULL, err, sizeof err) != 0 && strstr(err, path),
             "a label of 9 must fail naming %s (got '%s')", path, err);
    sf_dataset_free(&d);
  }
  free(m), free(vol);
  sf_config_free(&c);
  sf_rm_rf(tmp);
  free(tmp);
  return sf_test_end();
}
