/* The volume/mask dataset that `scaffold benchmark` trains on (spec §4, §6.2): the volume plan
 * (instance selection, shuffle, train/val split, class colours - bit-identical to upstream through
 * scaffold/mt19937.h), the v5 voxelizer, generation as a StarPU task graph (one task per volume),
 * the on-disk cache, and the loader API used by training.
 *
 * On disk (upstream's layout, default [1,1,1] shards), under <dataset_dir>/<config_id>/<ts>__<commit>/:
 *   volumes/{training|validation}/<vol>_shard000000.npy       float32 (3, G, G, G), channels first
 *   masks/{training|validation}/<vol>_shard000000_mask.npy    uint16 (G, G, G): 0 bg, class c -> c+1
 *   volumes_contents.csv     rows "vol,cat1,inst1,cat2,inst2,..." (as upstream's np.savetxt)
 *   manifest.json            per volume: split, categories, instances (ours)
 *   train_unique_mask_vals.json, val_unique_mask_vals.json   {"mask_values": [...]} (JSON, where
 *                            upstream writes pickles named without the extension)
 *   meta.yaml                config_id, dataset_format_version 5, config_subset, include_keys,
 *                            code_commit, created_at - written last, before the rename.
 * Axis convention: voxel (i0, i1, i2) from point (x, y, z) is (D, H, W). The loader hands training
 * NDHWC float32 (G, G, G, 3) images and uint16 (G, G, G) labels, or a box of them: a spatial shard
 * reads only its depth planes of each file, by offset (sf_dataset_load_box). */
#ifndef SF_DATASET_H
#define SF_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "scaffold/config.h"

#define SF_DATASET_FORMAT_VERSION 5

/* ---- the volume plan (pure, no files) ---------------------------------------------------------- */
typedef struct {
  long seed;
  int n_categories;
  int n_inst;           /* n_instances_used_per_fractal rounded down to a multiple of n_fracts_per_vol */
  int n_fracts_per_vol;
  int num_volumes;      /* n_categories * n_inst / n_fracts_per_vol */
  int row_len;          /* 1 + 2 * n_fracts_per_vol */
  int64_t *contents;    /* num_volumes x row_len: [vol_idx, cat1, inst1, cat2, inst2, ...] */
  int n_val, n_train;
  int *val_ids;         /* ascending volume indices */
  int *train_ids;       /* ascending volume indices */
  unsigned char *is_val;/* per volume index */
  double *colours;      /* n_categories x 3: np.random.seed(seed); np.random.rand(n_categories, 3) */
} sf_volume_plan;

/* Builds the plan exactly as upstream's volumegen.main (spec §4.1, §4.2). `rounded` (may be NULL)
 * is set to 1 when n_instances_used_per_fractal had to be rounded down (the caller warns).
 * Returns 0, or -1 with a message in err naming the offending parameter. */
int sf_volume_plan_make(sf_volume_plan *p, long seed, long n_categories, long n_instances_used_per_fractal,
                        long n_fracts_per_vol, double val_split, int *rounded, char *err, size_t errlen);
void sf_volume_plan_free(sf_volume_plan *p);
/* The training and validation volume counts sf_volume_plan_make would give, with the same checks,
 * without drawing or allocating anything. Returns 0, or -1 with its message in err. */
int sf_volume_plan_sizes(long seed, long n_categories, long n_instances_used_per_fractal, long n_fracts_per_vol,
                         double val_split, int *n_train, int *n_val, char *err, size_t errlen);
/* Number of distinct categories in volume v. */
int sf_volume_plan_distinct(const sf_volume_plan *p, int v);

/* ---- voxelization and rendering (pure) ---------------------------------------------------------- */
/* Voxelizes a float32 (n, 3) cloud on a grid^3 grid (spec §4.3, v5 isotropic, float32 arithmetic).
 * lin (capacity n) receives the sorted, deduplicated linear indices (d*G + h)*G + w; *n_out their
 * count. Returns 0, or -1 if any coordinate is NaN or infinite (nothing is written then). */
int sf_voxelize(const float *pts, size_t n, int grid, uint64_t *lin, size_t *n_out);

/* Renders one volume onto vol/mask (pass zeroed buffers: background is (0,0,0) and label 0): for
 * each fractal in row order, every occupied voxel's channels become colours[cat] (as float32) and
 * its mask cat + 1; later fractals overwrite earlier ones.
 * vol: float32 (3, G, G, G) channels-first; mask: uint16 (G, G, G). */
void sf_volume_render(float *vol, uint16_t *mask, int grid, int nfr, const int *cats,
                      const uint64_t *const *vox, const size_t *nvox, const double *colours);

/* ---- CE class weights (spec §6.2, pure) -------------------------------------------------------- */
/* Sample count min(max(ceil(n_train*frac), 1), n_train) and the indices torch.linspace(0, n_train-1,
 * count).long() gives (float32 linspace replicated), or 0..n_train-1 when count == n_train.
 * idx needs room for n_train entries. Returns the count (0 when n_train <= 0). */
int sf_ce_weight_sample_indices(int n_train, double frac, int *idx);
/* w[0] = T/bg, w[1..K-1] = T/fg with bg = counts[0], fg = sum counts[1..], T = bg + fg;
 * all 1 if bg or fg is 0. */
void sf_ce_class_weights_from_counts(const uint64_t *counts, int n_classes, float *w);

/* ---- the dataset on disk ------------------------------------------------------------------------ */
typedef enum { SF_SPLIT_TRAIN = 0, SF_SPLIT_VAL = 1 } sf_split;

typedef struct {
  char *dir;            /* the dataset directory in use */
  char config_id[13];
  int grid;             /* G = 2^problem_scale */
  int n_categories;
  int n_classes;        /* n_categories + 1 */
  int n_train, n_val;
  char **train_ids;     /* file stems "0", "1", "10", ... string-sorted (upstream's id order) */
  char **val_ids;
  double *colours;      /* n_categories x 3 */
  int generated;        /* 1: generated by this call; 0: reused */
  int repaired;         /* files regenerated in a reused dataset */
} sf_dataset;

/* The keyed parameter subset as compact, key-sorted JSON (upstream `_hash_volume_config` input,
 * shard layout sorted by dim) and its config_id (first 12 hex digits of its SHA-256). */
char *sf_dataset_config_json(const sf_config *c, int canonical_shards); /* malloc'ed */
void sf_dataset_config_id(const sf_config *c, char out[13]);

/* The largest problem_scale the dataset layout holds: 2^20-voxel edges, 2^60 voxels, every size,
 * offset and voxel index in 64 bits (sf_dataset_layout_of). Whether a machine can hold a scale is
 * the memory plan's business (scaffold/memory_plan.h): upstream's official problem is scale 11
 * (2048^3, a 96 GiB float32 volume file). */
#define SF_DATASET_MAX_PROBLEM_SCALE 20

/* ---- the files of one volume, in 64-bit arithmetic (pure, no files; src/datagen/dataset_layout.c) ----
 * The volume file is a float32 (3, G, G, G) .npy, channel-first; the mask a uint16 (G, G, G) .npy.
 * A spatial shard q of T (spatial_ranks) holds the depth planes [plane_lo, plane_hi) = [q*G/T,
 * (q+1)*G/T) of every channel (the graph's level-0 slab split for power-of-two T). */
typedef struct {
  int grid;                   /* G = 2^problem_scale */
  uint64_t voxels;            /* G^3 */
  uint64_t plane_voxels;      /* G^2 */
  uint64_t volume_header, mask_header;         /* .npy header bytes: where the data starts */
  uint64_t volume_data, mask_data;             /* 3 G^3 x 4 and G^3 x 2 bytes */
  uint64_t volume_file, mask_file;             /* header + data */
} sf_dataset_layout;

/* The layout of problem_scale 1..SF_DATASET_MAX_PROBLEM_SCALE. Returns 0, or -1 out of range. */
int sf_dataset_layout_of(int problem_scale, sf_dataset_layout *l);
/* Shard q of T: its planes [*lo, *hi) and the file offset of its first voxel in channel ch of the
 * volume file (mask file: ch = -1). Requires 1 <= T <= G, 0 <= q < T. */
void sf_dataset_shard(const sf_dataset_layout *l, int T, int q, int ch, uint64_t *lo, uint64_t *hi,
                      uint64_t *offset);

/* What sf_dataset_prepare can build, checked without touching a file (so `scaffold benchmark` can
 * refuse before any work): scale 1, problem_scale 1..SF_DATASET_MAX_PROBLEM_SCALE, the unsharded
 * dc_num_shards [1, 1, 1] layout, a seed NumPy accepts and a volume count that fits. Returns 0, or
 * -1 with the key at fault in *key and what was expected in err. */
int sf_dataset_check_config(const sf_config *c, const char **key, char *err, size_t errlen);

/* Finds the newest reusable dataset for c under <dataset_dir>/<config_id>/, or generates one with
 * the StarPU task graph (one task per volume; StarPU must be initialised; the fractal instances
 * must exist), then fills *out. Missing or truncated volume/mask files in a reused dataset are
 * regenerated. Prints what it does and any error (naming the file or directory) to stderr.
 * Returns 0; SF_EXIT_USAGE (2) if the fractal instances are missing (run generate_fractals) or the
 * parameters are invalid (scale != 1, dc_num_shards != [1,1,1], problem_scale > 20, ...);
 * SF_EXIT_FAILURE (1) on I/O or other runtime failures (e.g. a non-finite instance file: the
 * staging directory is removed and the file is named); SF_EXIT_INTERRUPTED (130) after SIGINT/SIGTERM
 * (scaffold/signals.h: the volumes in flight finish, a fresh dataset's staging directory is removed,
 * nothing is published). Honours dataset_reuse_enforce_commit_id (commit = the short hash of the
 * git commit this binary was built from, embedded at build time; "no-commit-id" outside a checkout). */
int sf_dataset_prepare(const sf_config *c, sf_dataset *out);

/* Opens an existing dataset directory for c without generating anything (no StarPU): lists the
 * sample ids and checks they are exactly this configuration's split (each file is validated when
 * loaded). Returns 0, or -1 with a message in err. */
int sf_dataset_open(const sf_config *c, const char *dir, sf_dataset *out, char *err, size_t errlen);

/* Paths of sample i (string-sorted order) of a split; malloc'ed. */
char *sf_dataset_volume_path(const sf_dataset *d, sf_split s, int i);
char *sf_dataset_mask_path(const sf_dataset *d, sf_split s, int i);

/* ---- reading samples (src/datagen/dataset_block.c) ----
 * A box of a sample's G^3 grid: depth planes [d0, d1), rows [h0, h1), columns [w0, w1). A spatial
 * shard reads the box of its depth slabs (sf_box_planes) and nothing else: the loader validates
 * each file's header (dtype, shape, size) without reading the data, then reads only the box's
 * runs of voxels by offset (pread): one run per channel for a slab of whole planes, one per plane
 * for whole rows, one per (plane, row) otherwise. No whole volume is read or held. */
typedef struct {
  int d0, d1, h0, h1, w0, w1;
} sf_box;
sf_box sf_box_whole(int grid);                   /* [0, G)^3 */
sf_box sf_box_planes(int grid, int d0, int d1);  /* planes [d0, d1), whole rows and columns */
size_t sf_box_voxels(const sf_box *b);

/* Loads box b of sample i of a split into caller buffers: image NDHWC float32 (d1-d0, h1-h0,
 * w1-w0, 3) (may be NULL), labels uint16 (d1-d0, h1-h0, w1-w0) (may be NULL). Checks that the
 * voxels read are finite and the labels in 0..n_classes-1. Adds the bytes read from the files
 * (each file's header, then the box's runs; nothing else is read) to *bytes_read (may be NULL).
 * Thread-safe (usable from StarPU tasks). Returns 0, or -1 with a message naming the file in err. */
int sf_dataset_load_box(const sf_dataset *d, sf_split s, int i, const sf_box *b, float *image_ndhwc,
                        uint16_t *labels, uint64_t *bytes_read, char *err, size_t errlen);
/* sf_dataset_load_box of the whole grid: image (G, G, G, 3), labels (G, G, G). */
int sf_dataset_load(const sf_dataset *d, sf_split s, int i, float *image_ndhwc, uint16_t *labels,
                    char *err, size_t errlen);

/* Voxel counts per class (n_classes entries) over the planes [plane_lo, plane_hi) of the training
 * masks picked by sf_ce_weight_sample_indices(n_train, frac), read a few planes at a time (at most
 * 2^22 voxels); the bytes read are added to *bytes_read (may be NULL). Returns 0, or -1 with a
 * message naming the file in err. */
int sf_dataset_class_counts(const sf_dataset *d, double frac, int plane_lo, int plane_hi, uint64_t *counts,
                            uint64_t *bytes_read, char *err, size_t errlen);
/* CE class weights (n_classes floats) from those masks' voxel counts. Collective in a distributed
 * run (every rank must call it): rank r of N counts the planes [r G / N, (r+1) G / N) of each mask
 * and the counts are summed over the ranks exactly, so no rank reads a whole mask and the weights
 * equal a single process's bit for bit. *bytes_read (may be NULL) gets this rank's bytes. Returns 0,
 * or -1 with a message in err (on every rank when one fails). */
int sf_dataset_class_weights(const sf_dataset *d, double frac, float *w, uint64_t *bytes_read, char *err,
                             size_t errlen);

void sf_dataset_free(sf_dataset *d);

#endif
