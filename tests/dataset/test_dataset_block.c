/* Shard-local reading (src/datagen/dataset_block.c): a box of a sample read by offset equals the
 * same box of the whole-file read, for a depth slab (one run per channel), whole-row boxes (a run
 * per plane), general boxes (a run per row) and an empty box; the bytes read are exactly the two
 * headers plus the box's voxels (3 x 4 + 2 bytes each), never more; a NaN and an out-of-range
 * label outside the box are not seen by the box's read (so nothing outside it was read) but fail
 * the whole read naming the file; bad headers (dtype, shape, truncation, not a .npy) fail naming
 * the file without reading data; class counts over plane ranges add up to the whole masks' counts,
 * and the weights equal sf_dataset_class_weights' bit for bit. G = 16, 12 training samples. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/config.h"
#include "scaffold/dataset.h"
#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "dataset_fixture.h"
#include "testutil.h"

#define G DS_FIXTURE_G
#define N (G * G * G)

/* The .npy header length of a file, from its bytes (10 + the little-endian length at 8..9). */
static uint64_t header_len(const char *path)
{
  unsigned char pre[10] = {0};
  FILE *f = fopen(path, "rb");
  if (!f || fread(pre, 1, 10, f) != 10) SF_CHECK(0, "cannot read the header of %s", path);
  if (f) fclose(f);
  return 10 + (uint64_t)pre[8] + ((uint64_t)pre[9] << 8);
}

/* Box b of the whole sample (img (G,G,G,3), lab (G,G,G)) against a box read; returns mismatches. */
static int compare_box(const char *what, const sf_box *b, const float *img, const uint16_t *lab, const float *bimg,
                       const uint16_t *blab)
{
  int bad = 0;
  size_t v = 0;
  for (int d = b->d0; d < b->d1; d++)
    for (int h = b->h0; h < b->h1; h++)
      for (int w = b->w0; w < b->w1; w++, v++) {
        size_t g = ((size_t)d * G + h) * G + w;
        for (int c = 0; c < 3; c++)
          if (bimg && bimg[3 * v + c] != img[3 * g + c]) {
            if (bad++ < 3)
              SF_CHECK(0, "%s: voxel (%d, %d, %d) channel %d is %.9g, the whole read has %.9g", what, d, h, w, c,
                       (double)bimg[3 * v + c], (double)img[3 * g + c]);
          }
        if (blab && blab[v] != lab[g] && bad++ < 3)
          SF_CHECK(0, "%s: voxel (%d, %d, %d) label %u, the whole read has %u", what, d, h, w, blab[v], lab[g]);
      }
  return bad;
}

int main(void)
{
  char *tmp = sf_test_tmpdir("dsb"), err[1024];
  sf_config c;
  ds_fixture_init(&c, tmp);
  uint16_t *m = calloc(N, sizeof *m);
  float *vol = calloc(3 * (size_t)N, sizeof *vol);
  size_t vshape[4] = {3, G, G, G};
  for (int id = 0; id < 12; id++) {
    for (size_t v = 0; v < N; v++) m[v] = (uint16_t)((v * 7 + (size_t)id * 13 + v / 97) % 4);
    for (size_t k = 0; k < 3 * (size_t)N; k++) vol[k] = (float)(k % 1009) * 1e-3f + (float)id;
    ds_fixture_write(tmp, id, vol, m);
  }
  sf_dataset d;
  int rc = sf_dataset_open(&c, tmp, &d, err, sizeof err);
  SF_CHECK(rc == 0, "open: %s", err);
  if (rc != 0) return sf_test_end();

  float *img = malloc(3 * (size_t)N * sizeof *img), *bimg = malloc(3 * (size_t)N * sizeof *bimg);
  uint16_t *lab = malloc((size_t)N * sizeof *lab), *blab = malloc((size_t)N * sizeof *blab);
  const int sample = 4;
  char *vpath = sf_dataset_volume_path(&d, SF_SPLIT_TRAIN, sample), *mpath = sf_dataset_mask_path(&d, SF_SPLIT_TRAIN, sample);
  const uint64_t vh = header_len(vpath), mh = header_len(mpath);
  SF_CHECK(sf_dataset_load(&d, SF_SPLIT_TRAIN, sample, img, lab, err, sizeof err) == 0, "whole read: %s", err);

  /* boxes: the whole grid, the two depth slabs of 2 shards, a 4-plane slab, whole rows, general, empty */
  const sf_box boxes[] = {sf_box_whole(G), sf_box_planes(G, 0, 8), sf_box_planes(G, 8, 16), sf_box_planes(G, 5, 9),
                          {3, 7, 2, 9, 0, G}, {1, 5, 2, 7, 3, 11}, {0, G, 0, G, 15, 16}, {6, 6, 0, G, 0, G}};
  for (size_t i = 0; i < sizeof boxes / sizeof boxes[0]; i++) {
    const sf_box *b = &boxes[i];
    char what[128];
    snprintf(what, sizeof what, "box [%d,%d)x[%d,%d)x[%d,%d)", b->d0, b->d1, b->h0, b->h1, b->w0, b->w1);
    const uint64_t nv = sf_box_voxels(b);
    memset(bimg, 0xff, 3 * (size_t)N * sizeof *bimg);
    memset(blab, 0xff, (size_t)N * sizeof *blab);
    uint64_t bytes = 7; /* added to, not overwritten */
    rc = sf_dataset_load_box(&d, SF_SPLIT_TRAIN, sample, b, bimg, blab, &bytes, err, sizeof err);
    SF_CHECK(rc == 0, "%s: %s", what, err);
    if (rc == 0) compare_box(what, b, img, lab, bimg, blab);
    uint64_t want = 7 + vh + mh + nv * (3 * 4 + 2);
    SF_CHECK(bytes == want, "%s: read %llu bytes, expected the headers %llu + %llu and %llu voxels x 14 = %llu (off by "
             "%lld)", what, (unsigned long long)(bytes - 7), (unsigned long long)vh, (unsigned long long)mh,
             (unsigned long long)nv, (unsigned long long)(want - 7), (long long)(bytes - want));
    /* nothing past the box is written */
    SF_CHECK(nv == (uint64_t)N || blab[nv] == 0xffff, "%s: the labels buffer was written past the box", what);
    /* one file at a time */
    bytes = 0;
    SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, sample, b, NULL, blab, &bytes, err, sizeof err) == 0, "%s: %s",
             what, err);
    SF_CHECK(bytes == mh + nv * 2, "%s, labels only: read %llu bytes, expected %llu", what, (unsigned long long)bytes,
             (unsigned long long)(mh + nv * 2));
    bytes = 0;
    SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, sample, b, bimg, NULL, &bytes, err, sizeof err) == 0, "%s: %s",
             what, err);
    SF_CHECK(bytes == vh + nv * 12, "%s, image only: read %llu bytes, expected %llu", what, (unsigned long long)bytes,
             (unsigned long long)(vh + nv * 12));
  }
  const sf_box outside = {0, G + 1, 0, G, 0, G};
  err[0] = '\0';
  SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, sample, &outside, bimg, blab, NULL, err, sizeof err) != 0 &&
           strstr(err, "not inside"), "a box past the grid must be refused (got '%s')", err);

  /* corrupt voxels outside shard 1's slab [8, 16): its read never sees them, the whole read does */
  {
    sf_npy a;
    SF_CHECK(sf_npy_read(vpath, &a, err, sizeof err) == 0, "%s", err);
    ((float *)a.data)[1 * (size_t)N + 3 * G * G + 5] = NAN; /* channel 1, plane 3 */
    SF_CHECK(sf_npy_write(vpath, SF_NPY_F32, 4, vshape, a.data, err, sizeof err) == 0, "%s", err);
    free(a.data);
    SF_CHECK(sf_npy_read(mpath, &a, err, sizeof err) == 0, "%s", err);
    ((uint16_t *)a.data)[7 * G * G + 2] = 9; /* plane 7 */
    SF_CHECK(sf_npy_write(mpath, SF_NPY_U16, 3, vshape + 1, a.data, err, sizeof err) == 0, "%s", err);
    free(a.data);
    sf_box hi = sf_box_planes(G, 8, 16);
    SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, sample, &hi, bimg, blab, NULL, err, sizeof err) == 0,
             "planes [8, 16) must not see the corrupt planes 3 and 7: %s", err);
    err[0] = '\0';
    SF_CHECK(sf_dataset_load(&d, SF_SPLIT_TRAIN, sample, img, NULL, err, sizeof err) != 0 && strstr(err, vpath) &&
             strstr(err, "not finite"), "a NaN must fail the whole read naming %s (got '%s')", vpath, err);
    err[0] = '\0';
    SF_CHECK(sf_dataset_load(&d, SF_SPLIT_TRAIN, sample, NULL, lab, err, sizeof err) != 0 && strstr(err, mpath) &&
             strstr(err, "label 9"), "a label of 9 must fail the whole read naming %s (got '%s')", mpath, err);
    sf_box lo = sf_box_planes(G, 0, 8);
    err[0] = '\0';
    SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, sample, &lo, bimg, NULL, NULL, err, sizeof err) != 0 &&
             strstr(err, "voxel 773 "), "the NaN at plane 3 must fail planes [0, 8) at voxel 773 (got '%s')", err);
  }

  /* bad headers: named, and refused before any data is read */
  {
    char *bpath = sf_dataset_volume_path(&d, SF_SPLIT_TRAIN, 5), *bmask = sf_dataset_mask_path(&d, SF_SPLIT_TRAIN, 5);
    sf_box slab = sf_box_planes(G, 8, 16);
    double *dv = calloc(3 * (size_t)N, sizeof *dv);
    SF_CHECK(sf_npy_write(bpath, SF_NPY_F64, 4, vshape, dv, err, sizeof err) == 0, "%s", err);
    uint64_t bytes = 0;
    err[0] = '\0';
    SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, 5, &slab, bimg, NULL, &bytes, err, sizeof err) != 0 &&
             strstr(err, bpath) && strstr(err, "expected float32"), "a float64 volume must fail naming %s (got '%s')",
             bpath, err);
    SF_CHECK(bytes == 0, "a refused file counts no bytes (got %llu)", (unsigned long long)bytes);
    size_t small[3] = {G, G, G / 2};
    SF_CHECK(sf_npy_write(bmask, SF_NPY_U16, 3, small, m, err, sizeof err) == 0, "%s", err);
    err[0] = '\0';
    SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, 5, &slab, NULL, blab, NULL, err, sizeof err) != 0 &&
             strstr(err, bmask) && strstr(err, "expected uint16"), "a (16,16,8) mask must fail naming %s (got '%s')",
             bmask, err);
    /* truncated: a valid header whose data is short */
    SF_CHECK(sf_npy_write(bpath, SF_NPY_F32, 4, vshape, vol, err, sizeof err) == 0, "%s", err);
    SF_CHECK(truncate(bpath, (off_t)(vh + 100)) == 0, "truncate %s", bpath);
    err[0] = '\0';
    SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, 5, &slab, bimg, NULL, NULL, err, sizeof err) != 0 &&
             strstr(err, bpath) && strstr(err, "truncated"), "a truncated volume must fail naming %s (got '%s')", bpath,
             err);
    FILE *f = fopen(bpath, "wb");
    if (f) fputs("this is not a numpy file at all", f), fclose(f);
    err[0] = '\0';
    SF_CHECK(sf_dataset_load_box(&d, SF_SPLIT_TRAIN, 5, &slab, bimg, NULL, NULL, err, sizeof err) != 0 &&
             strstr(err, bpath) && strstr(err, "bad magic"), "a non-.npy volume must fail naming %s (got '%s')", bpath,
             err);
    free(dv), free(bpath), free(bmask);
  }

  /* class counts over plane ranges add up to the whole masks' (as N ranks would) */
  {
    /* restore the masks touched above */
    for (int id = 0; id < 12; id++) {
      for (size_t v = 0; v < N; v++) m[v] = (uint16_t)((v * 7 + (size_t)id * 13 + v / 97) % 4);
      ds_fixture_write(tmp, id, NULL, m);
    }
    uint64_t whole[4], part[4], sum[4] = {0}, bytes = 0;
    SF_CHECK(sf_dataset_class_counts(&d, 1.0, 0, G, whole, &bytes, err, sizeof err) == 0, "counts: %s", err);
    SF_CHECK(bytes == 12 * (mh + (uint64_t)N * 2), "class counts of 12 whole masks read %llu bytes, expected %llu",
             (unsigned long long)bytes, (unsigned long long)(12 * (mh + (uint64_t)N * 2)));
    const int cuts[] = {0, 5, 11, 16};
    for (int r = 0; r < 3; r++) {
      bytes = 0;
      SF_CHECK(sf_dataset_class_counts(&d, 1.0, cuts[r], cuts[r + 1], part, &bytes, err, sizeof err) == 0, "%s", err);
      uint64_t want = 12 * (mh + (uint64_t)(cuts[r + 1] - cuts[r]) * G * G * 2);
      SF_CHECK(bytes == want, "class counts of planes [%d, %d): read %llu bytes, expected %llu", cuts[r], cuts[r + 1],
               (unsigned long long)bytes, (unsigned long long)want);
      for (int k = 0; k < 4; k++) sum[k] += part[k];
    }
    for (int k = 0; k < 4; k++)
      SF_CHECK(sum[k] == whole[k], "class %d: %llu voxels over 3 plane ranges, %llu over whole masks", k,
               (unsigned long long)sum[k], (unsigned long long)whole[k]);
    SF_CHECK(whole[0] + whole[1] + whole[2] + whole[3] == 12ull * N, "counts do not add up to 12 masks");
    float w[4], wsum[4];
    sf_ce_class_weights_from_counts(sum, 4, wsum);
    SF_CHECK(sf_dataset_class_weights(&d, 1.0, w, NULL, err, sizeof err) == 0, "%s", err);
    SF_CHECK(!memcmp(w, wsum, sizeof w), "weights from plane ranges %.9g %.9g differ from the whole masks' %.9g %.9g",
             (double)wsum[0], (double)wsum[1], (double)w[0], (double)w[1]);
  }

  free(vpath), free(mpath), free(img), free(bimg), free(lab), free(blab);
  sf_dataset_free(&d);
  free(m), free(vol);
  sf_config_free(&c);
  sf_rm_rf(tmp);
  free(tmp);
  return sf_test_end();
}
