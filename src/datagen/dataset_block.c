/* Shard-local sample reading (scaffold/dataset.h sf_dataset_load_box, sf_dataset_class_weights):
 * a box [d0,d1) x [h0,h1) x [w0,w1) of a sample is read from its two .npy files by offset, never
 * the whole file. Each file's header is read and validated first (sf_npy_open: dtype, shape, file
 * size, with messages naming the file), then only the box's runs of voxels with pread: one run per
 * (plane, row) in general, one per plane when the box spans whole rows, and one per channel when it
 * spans whole planes (a depth slab: what a spatial shard owns, docs/scaling.md). The volume's
 * channels-first runs go through a bounded staging buffer into NDHWC; mask runs land in place.
 * Finiteness and the label range are checked on what was read. The bytes read (headers + runs)
 * are added to the caller's counter, so a test can check that a rank read only its block. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/npy.h"

/* The staging buffer of the volume's channels-first runs, in floats (4 MiB). */
#define SF_BLOCK_STAGE_FLOATS ((size_t)1 << 20)
/* Labels per chunk of the class-count pass (8 MiB of uint16). */
#define SF_BLOCK_COUNT_VOXELS ((size_t)1 << 22)

sf_box sf_box_whole(int grid) { return (sf_box){0, grid, 0, grid, 0, grid}; }

sf_box sf_box_planes(int grid, int d0, int d1) { return (sf_box){d0, d1, 0, grid, 0, grid}; }

size_t sf_box_voxels(const sf_box *b)
{
  return (size_t)(b->d1 - b->d0) * (size_t)(b->h1 - b->h0) * (size_t)(b->w1 - b->w0);
}

/* The runs of a box in a C-order (G, G, G) array: run r holds box voxels [r*len, (r+1)*len), which
 * are file elements [run_first(r), run_first(r) + len). */
typedef struct {
  size_t G, len, n, bh;
  int per; /* 0: one run, 1: a run per plane, 2: a run per (plane, row) */
  const sf_box *b;
} box_runs;

static box_runs runs_of(const sf_box *b, int grid)
{
  box_runs r = {.G = (size_t)grid, .b = b, .bh = (size_t)(b->h1 - b->h0)};
  size_t bd = (size_t)(b->d1 - b->d0), bw = (size_t)(b->w1 - b->w0);
  if (bw == r.G && r.bh == r.G) r.per = 0, r.len = bd * r.G * r.G, r.n = 1; /* whole planes: one run */
  else if (bw == r.G) r.per = 1, r.len = r.bh * r.G, r.n = bd;               /* whole rows: a run per plane */
  else r.per = 2, r.len = bw, r.n = bd * r.bh;                               /* a run per (plane, row) */
  if (!r.len) r.n = 0;
  return r;
}

static size_t run_first(const box_runs *r, size_t k)
{
  const sf_box *b = r->b;
  const size_t G = r->G, d = (size_t)b->d0, h = (size_t)b->h0;
  if (r->per == 0) return d * G * G;
  if (r->per == 1) return (d + k) * G * G + h * G;
  return ((d + k / r->bh) * G + h + k % r->bh) * G + (size_t)b->w0;
}

static int box_check(const sf_box *b, int G, char *err, size_t errlen)
{
  if (b->d0 < 0 || b->d0 > b->d1 || b->d1 > G || b->h0 < 0 || b->h0 > b->h1 || b->h1 > G || b->w0 < 0 ||
      b->w0 > b->w1 || b->w1 > G) {
    snprintf(err, errlen, "box [%d, %d) x [%d, %d) x [%d, %d) is not inside the %d^3 grid", b->d0, b->d1, b->h0, b->h1,
             b->w0, b->w1, G);
    return -1;
  }
  return 0;
}

static int open_volume(const char *path, size_t G, sf_npy_file *f, char *err, size_t errlen)
{
  if (sf_npy_open(path, f, err, errlen) != 0) return -1;
  if (f->dtype != SF_NPY_F32 || f->ndim != 4 || f->shape[0] != 3 || f->shape[1] != G || f->shape[2] != G ||
      f->shape[3] != G) {
    snprintf(err, errlen, "%s: expected float32 (3, %zu, %zu, %zu), got ndim %d shape (%zu, %zu, ...)", path, G, G, G,
             f->ndim, f->shape[0], f->shape[1]);
    sf_npy_close(f);
    return -1;
  }
  return 0;
}

static int open_mask(const char *path, size_t G, sf_npy_file *f, char *err, size_t errlen)
{
  if (sf_npy_open(path, f, err, errlen) != 0) return -1;
  if (f->dtype != SF_NPY_U16 || f->ndim != 3 || f->shape[0] != G || f->shape[1] != G || f->shape[2] != G) {
    snprintf(err, errlen, "%s: expected uint16 (%zu, %zu, %zu), got ndim %d", path, G, G, G, f->ndim);
    sf_npy_close(f);
    return -1;
  }
  return 0;
}

/* The box's voxels of the three channels, as NDHWC, through a staging buffer of at most
 * SF_BLOCK_STAGE_FLOATS; a non-finite value (a corrupted file with a valid header: generated
 * volumes hold colours in [0, 1)) is reported, naming the file, instead of a diverged loss later. */
static int read_volume_box(sf_npy_file *f, const sf_box *b, float *image, char *err, size_t errlen)
{
  box_runs r = runs_of(b, (int)f->shape[1]);
  const size_t N = r.G * r.G * r.G, cap = r.len < SF_BLOCK_STAGE_FLOATS ? r.len : SF_BLOCK_STAGE_FLOATS;
  float *stage = sf_malloc((cap ? cap : 1) * sizeof *stage, "volume read buffer");
  int rc = 0;
  for (size_t c = 0; c < 3 && rc == 0; c++)
    for (size_t k = 0; k < r.n && rc == 0; k++)
      for (size_t j0 = 0; j0 < r.len && rc == 0; j0 += cap) {
        size_t n = r.len - j0 < cap ? r.len - j0 : cap, first = run_first(&r, k) + j0;
        if ((rc = sf_npy_pread(f, c * N + first, n, stage, err, errlen)) != 0) break;
        float *dst = image + 3 * (k * r.len + j0) + c;
        for (size_t j = 0; j < n; j++) {
          if (!isfinite(stage[j])) {
            snprintf(err, errlen, "%s: channel %zu, voxel %zu is %g (not finite): the file is corrupt; delete it (and "
                     "its mask) and rerun: a reused dataset regenerates missing volumes", f->path, c, first + j,
                     (double)stage[j]);
            rc = -1;
            break;
          }
          dst[3 * j] = stage[j];
        }
      }
  free(stage);
  return rc;
}

/* The box's labels, in place; a label outside 0..n_classes-1 is reported, naming the file. */
static int read_mask_box(sf_npy_file *f, const sf_box *b, int n_classes, uint16_t *labels, char *err, size_t errlen)
{
  box_runs r = runs_of(b, (int)f->shape[0]);
  for (size_t k = 0; k < r.n; k++) {
    size_t first = run_first(&r, k);
    uint16_t *m = labels + k * r.len;
    if (sf_npy_pread(f, first, r.len, m, err, errlen) != 0) return -1;
    for (size_t j = 0; j < r.len; j++)
      if (m[j] >= n_classes) {
        snprintf(err, errlen, "%s: voxel %zu has label %u, outside 0..%d: the file is corrupt; delete it (and its "
                 "volume) and rerun: a reused dataset regenerates missing volumes", f->path, first + j, m[j],
                 n_classes - 1);
        return -1;
      }
  }
  return 0;
}

static int check_sample(const sf_dataset *d, sf_split s, int i, char *err, size_t errlen)
{
  int n = s == SF_SPLIT_VAL ? d->n_val : d->n_train;
  if (i >= 0 && i < n) return 0;
  snprintf(err, errlen, "sample %d is out of range for the %s split (%d samples)", i,
           s == SF_SPLIT_VAL ? "validation" : "training", n);
  return -1;
}

int sf_dataset_load_box(const sf_dataset *d, sf_split s, int i, const sf_box *box, float *image_ndhwc,
                        uint16_t *labels, uint64_t *bytes_read, char *err, size_t errlen)
{
  if (check_sample(d, s, i, err, errlen) || box_check(box, d->grid, err, errlen)) return -1;
  const size_t G = (size_t)d->grid;
  sf_npy_file f;
  int rc = 0;
  if (image_ndhwc) {
    char *path = sf_dataset_volume_path(d, s, i);
    rc = open_volume(path, G, &f, err, errlen);
    if (rc == 0) {
      rc = read_volume_box(&f, box, image_ndhwc, err, errlen);
      if (bytes_read) *bytes_read += f.bytes_read;
      sf_npy_close(&f);
    }
    free(path);
  }
  if (labels && rc == 0) {
    char *path = sf_dataset_mask_path(d, s, i);
    rc = open_mask(path, G, &f, err, errlen);
    if (rc == 0) {
      rc = read_mask_box(&f, box, d->n_classes, labels, err, errlen);
      if (bytes_read) *bytes_read += f.bytes_read;
      sf_npy_close(&f);
    }
    free(path);
  }
  return rc;
}

int sf_dataset_load(const sf_dataset *d, sf_split s, int i, float *image_ndhwc, uint16_t *labels, char *err,
                    size_t errlen)
{
  sf_box whole = sf_box_whole(d->grid);
  return sf_dataset_load_box(d, s, i, &whole, image_ndhwc, labels, NULL, err, errlen);
}

int sf_dataset_class_counts(const sf_dataset *d, double frac, int plane_lo, int plane_hi, uint64_t *counts,
                            uint64_t *bytes_read, char *err, size_t errlen)
{
  const size_t G = (size_t)d->grid;
  sf_box all = sf_box_planes(d->grid, plane_lo, plane_hi);
  if (box_check(&all, d->grid, err, errlen)) return -1;
  memset(counts, 0, (size_t)d->n_classes * sizeof *counts);
  size_t chunk = SF_BLOCK_COUNT_VOXELS / (G * G); /* planes per read */
  if (chunk < 1) chunk = 1;
  if (chunk > (size_t)(plane_hi - plane_lo)) chunk = (size_t)(plane_hi - plane_lo);
  int *idx = sf_malloc((size_t)(d->n_train > 0 ? d->n_train : 1) * sizeof *idx, "sample indices");
  uint16_t *m = sf_malloc((chunk ? chunk : 1) * G * G * sizeof *m, "mask planes");
  int n = sf_ce_weight_sample_indices(d->n_train, frac, idx), rc = 0;
  for (int k = 0; k < n && rc == 0 && chunk; k++) {
    char *path = sf_dataset_mask_path(d, SF_SPLIT_TRAIN, idx[k]);
    sf_npy_file f;
    rc = open_mask(path, G, &f, err, errlen);
    for (int p = plane_lo; rc == 0 && p < plane_hi; p += (int)chunk) {
      int p1 = p + (int)chunk < plane_hi ? p + (int)chunk : plane_hi;
      sf_box b = sf_box_planes(d->grid, p, p1);
      rc = read_mask_box(&f, &b, d->n_classes, m, err, errlen);
      for (size_t v = 0, nv = sf_box_voxels(&b); rc == 0 && v < nv; v++) counts[m[v]]++;
    }
    if (f.fd >= 0) {
      if (bytes_read) *bytes_read += f.bytes_read;
      sf_npy_close(&f);
    }
    free(path);
  }
  free(idx);
  free(m);
  return rc;
}

int sf_dataset_class_weights(const sf_dataset *d, double frac, float *w, uint64_t *bytes_read, char *err,
                             size_t errlen)
{
  const int K = d->n_classes, R = sf_dist_size(), r = sf_dist_rank();
  uint64_t *counts = sf_calloc((size_t)K, sizeof *counts, "class counts");
  int lo = (int)((int64_t)r * d->grid / R), hi = (int)((int64_t)(r + 1) * d->grid / R);
  int rc = sf_dataset_class_counts(d, frac, lo, hi, counts, bytes_read, err, errlen);
  if (sf_dist_active()) {
    /* each count as two 32-bit halves, so the double sums over ranks stay exact */
    double *v = sf_calloc(2 * (size_t)K + 1, sizeof *v, "class count sums");
    for (int k = 0; rc == 0 && k < K; k++) v[2 * k] = (double)(counts[k] >> 32), v[2 * k + 1] = (double)(uint32_t)counts[k];
    v[2 * K] = rc != 0;
    sf_dist_allreduce_sum(v, 2 * K + 1);
    for (int k = 0; k < K; k++) counts[k] = ((uint64_t)v[2 * k] << 32) + (uint64_t)v[2 * k + 1];
    if (rc == 0 && v[2 * K] > 0) {
      snprintf(err, errlen, "another rank could not read its planes of the sampled training masks (see its message)");
      rc = -1;
    }
    free(v);
  }
  if (rc == 0) sf_ce_class_weights_from_counts(counts, K, w);
  free(counts);
  return rc;
}
