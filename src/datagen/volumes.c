/* Volume generation (spec §4.4, §4.5): one StarPU task per volume reads its n_fracts_per_vol
 * instance point clouds, voxelizes them (voxelize.c), overlays them in row order (later fractals
 * overwrite earlier ones) and writes the float32 (3, G, G, G) volume and uint16 (G, G, G) mask
 * .npy files atomically. Each volume depends only on the plan and its instance files, so the bytes
 * written are the same whatever the worker count, scheduler or execution order. The tasks carry
 * no data handles (task_farm.h): their inputs and outputs are files, written without an fsync
 * each; the waiting thread flushes them while the tasks run and once at the end (flush.h), before
 * the caller publishes anything. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset_internal.h"
#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "scaffold/signals.h"

#include "flush.h"
#include "task_farm.h"

#define SF_HEARTBEAT_SECONDS 300.0 /* upstream's STAGING_HEARTBEAT_INTERVAL_SECONDS */

char *sf_dataset_file(const char *dir, int is_val, long vol, int mask)
{
  size_t n = strlen(dir) + 96;
  char *p = sf_malloc(n, "dataset path");
  snprintf(p, n, "%s/%s/%s/%ld%s%s.npy", dir, mask ? "masks" : "volumes", is_val ? "validation" : "training", vol,
           SF_SHARD_SUFFIX, mask ? "_mask" : "");
  return p;
}

int sf_dataset_grid(const sf_config *c) { return 1 << c->problem_scale; }

void sf_volume_render(float *vol, uint16_t *mask, int grid, int nfr, const int *cats, const uint64_t *const *vox,
                      const size_t *nvox, const double *colours)
{
  const size_t N = (size_t)grid * grid * grid;
  for (int f = 0; f < nfr; f++) {
    const float r = (float)colours[3 * cats[f]], g = (float)colours[3 * cats[f] + 1],
                b = (float)colours[3 * cats[f] + 2];
    const uint16_t label = (uint16_t)(cats[f] + 1);
    for (size_t k = 0; k < nvox[f]; k++) {
      size_t v = vox[f][k];
      vol[v] = r;         /* channel 0 */
      vol[N + v] = g;     /* channel 1 */
      vol[2 * N + v] = b; /* channel 2 */
      mask[v] = label;
    }
  }
}

/* Reads an instance cloud as float32 (N, 3); legacy float64 files are downcast (as upstream). */
static float *read_cloud(const char *path, size_t *n, char *err, size_t errlen)
{
  sf_npy a;
  if (!sf_file_exists(path)) {
    snprintf(err, errlen, "fractal instance %s does not exist; run `scaffold generate_fractals` with the same configuration first",
             path);
    return NULL;
  }
  if (sf_npy_read(path, &a, err, errlen) != 0) return NULL;
  if (a.ndim != 2 || a.shape[1] != 3 || a.shape[0] == 0 || (a.dtype != SF_NPY_F32 && a.dtype != SF_NPY_F64)) {
    snprintf(err, errlen, "fractal instance %s: expected a float32 (N, 3) array with N >= 1, got ndim %d shape[0] %zu",
             path, a.ndim, a.shape[0]);
    free(a.data);
    return NULL;
  }
  *n = a.shape[0];
  if (a.dtype == SF_NPY_F32) return a.data;
  float *f = sf_malloc(a.count * sizeof *f, "instance cloud");
  for (size_t i = 0; i < a.count; i++) f[i] = (float)((double *)a.data)[i];
  free(a.data);
  return f;
}

/* The task body; flags: SF_NPY_NO_FSYNC when the caller flushes the directory afterwards. */
static int generate_one(const sf_config *c, const sf_volume_plan *p, const char *dir, int vol, unsigned flags,
                        char *err, size_t errlen)
{
  const int G = sf_dataset_grid(c), nfr = p->n_fracts_per_vol;
  sf_dataset_layout lay;
  if (sf_dataset_layout_of((int)c->problem_scale, &lay) != 0) /* refused by sf_dataset_check_config */
    SF_ABORT("problem_scale %ld outside the dataset layout", c->problem_scale);
  const size_t N = (size_t)lay.voxels;
  const int64_t *row = p->contents + (size_t)vol * (size_t)p->row_len;
  int rc = -1;
  int *cats = sf_calloc((size_t)nfr, sizeof *cats, "cats");
  uint64_t **vox = sf_calloc((size_t)nfr, sizeof *vox, "voxels");
  size_t *nvox = sf_calloc((size_t)nfr, sizeof *nvox, "voxel counts");
  float *volume = NULL;
  uint16_t *mask = NULL;
  for (int f = 0; f < nfr; f++) {
    cats[f] = (int)row[1 + 2 * f];
    char *path = sf_fractal_instance_path(c, cats[f], (int)row[2 + 2 * f]);
    size_t n = 0;
    float *pts = read_cloud(path, &n, err, errlen);
    if (!pts) {
      free(path);
      goto out;
    }
    vox[f] = sf_malloc(n * sizeof *vox[f], "voxel indices");
    int bad = sf_voxelize(pts, n, G, vox[f], &nvox[f]);
    free(pts);
    if (bad) {
      snprintf(err, errlen, "fractal instance %s has non-finite coordinates (NaN or inf); refusing to voxelize it "
               "(delete it and rerun `scaffold generate_fractals`)", path);
      free(path);
      goto out;
    }
    free(path);
  }
  volume = sf_calloc(3 * N, sizeof *volume, "volume");
  mask = sf_calloc(N, sizeof *mask, "mask");
  sf_volume_render(volume, mask, G, nfr, cats, (const uint64_t *const *)vox, nvox, p->colours);
  char *vpath = sf_dataset_file(dir, p->is_val[vol], vol, 0), *mpath = sf_dataset_file(dir, p->is_val[vol], vol, 1);
  size_t vshape[4] = {3, (size_t)G, (size_t)G, (size_t)G};
  rc = sf_npy_write_flags(vpath, SF_NPY_F32, 4, vshape, volume, flags, err, errlen);
  if (rc == 0) rc = sf_npy_write_flags(mpath, SF_NPY_U16, 3, vshape + 1, mask, flags, err, errlen);
  free(vpath);
  free(mpath);
out:
  for (int f = 0; f < nfr; f++) free(vox[f]);
  free(vox);
  free(nvox);
  free(cats);
  free(volume);
  free(mask);
  return rc;
}

int sf_volume_generate_one(const sf_config *c, const sf_volume_plan *p, const char *dir, int vol, char *err,
                           size_t errlen)
{
  return generate_one(c, p, dir, vol, 0, err, errlen);
}

/* ---- the task graph -------------------------------------------------------------------------- */

typedef struct {
  const sf_config *c;
  const sf_volume_plan *p;
  const char *dir;
  char **err;          /* per volume: malloc'ed message of a failed task */
  pthread_mutex_t lock;
  int beat;            /* refresh <dir>/.heartbeat (staging directories only) */
  double last_beat;
  long done;
  long skipped;        /* tasks abandoned on SIGINT/SIGTERM before they started */
  atomic_long ended;   /* tasks over (done, failed or skipped), for sf_datagen_wait_flushing */
  sf_progress prog;
} volgen;

typedef struct {
  volgen *g;
  int vol;
} volume_args;

static void heartbeat(volgen *g)
{
  /* Touch <dir>/.heartbeat so a concurrent job's stale-staging cleanup sees this one is alive. */
  char *hb = sf_path_join(g->dir, ".heartbeat");
  int fd = open(hb, O_WRONLY | O_CREAT, 0644);
  if (fd >= 0) {
    futimens(fd, NULL);
    close(fd);
  }
  free(hb);
}

static void volume_task_run(void *arg)
{
  volume_args *a = arg;
  volgen *g = a->g;
  if (sf_stop_requested()) { /* abandon the volumes not started yet; the running ones finish */
    pthread_mutex_lock(&g->lock);
    g->skipped++;
    pthread_mutex_unlock(&g->lock);
    atomic_fetch_add(&g->ended, 1);
    return;
  }
  char err[1024];
  int rc = generate_one(g->c, g->p, g->dir, a->vol, SF_NPY_NO_FSYNC, err, sizeof err);
  pthread_mutex_lock(&g->lock);
  if (rc != 0) g->err[a->vol] = sf_strdup(err);
  g->done++;
  double now = sf_now();
  if (g->beat && now - g->last_beat >= SF_HEARTBEAT_SECONDS) {
    g->last_beat = now;
    heartbeat(g);
  }
  pthread_mutex_unlock(&g->lock);
  atomic_fetch_add(&g->ended, 1);
}

static sf_farm_kind volume_kind = {.name = "sf_volume_generate", .run = volume_task_run};

int sf_volumes_generate(const sf_config *c, const sf_volume_plan *p, const char *dir, const int *vols, int n,
                        char *err, size_t errlen)
{
  if (n <= 0) return 0;
  volgen g = {.c = c, .p = p, .dir = dir};
  atomic_init(&g.ended, 0);
  g.err = sf_calloc((size_t)p->num_volumes, sizeof *g.err, "task errors");
  pthread_mutex_init(&g.lock, NULL);
  const char *leaf = strrchr(dir, '/');
  g.beat = strncmp(leaf ? leaf + 1 : dir, ".tmp_", 5) == 0;
  g.last_beat = sf_now();
  if (g.beat) heartbeat(&g);
  sf_progress_begin(&g.prog, "volumes", n);
  volume_args *args = sf_malloc((size_t)n * sizeof *args, "task args");
  sf_task_farm *farm = sf_farm_begin(&volume_kind);
  int rc = 0;
  for (int i = 0; i < n; i++) {
    args[i].g = &g;
    args[i].vol = vols[i];
    int r = sf_farm_submit(farm, &args[i]);
    if (r != 0) {
      snprintf(err, errlen, "submitting the task of volume %d failed: %s (are there CPU workers? ncpu must be >= 1)",
               vols[i], strerror(-r));
      rc = -1;
      break;
    }
  }
  /* flushes the volumes written so far while the rest run, then all of them (flush.h): without an
   * fsync per file the disk writes overlap with the tasks and the journal commits are few */
  if (sf_datagen_wait_flushing(dir, &g.ended, sf_farm_count(farm), &g.prog) != 0 && rc == 0) {
    snprintf(err, errlen, "cannot flush the volumes in %s to disk (syncfs): %s", dir, strerror(errno));
    rc = -1;
  }
  if (sf_farm_wait(farm) != 0 && rc == 0) {
    snprintf(err, errlen, "waiting for the volume tasks failed");
    rc = -1;
  }
  free(args);
  sf_progress_end(&g.prog, g.done);
  int failed = 0;
  for (int v = 0; v < p->num_volumes; v++) {
    if (!g.err[v]) continue;
    if (failed++ == 0 && rc == 0) snprintf(err, errlen, "volume %d: %s", v, g.err[v]);
    free(g.err[v]);
  }
  if (failed > 1 && rc == 0) {
    size_t l = strlen(err);
    snprintf(err + l, errlen > l ? errlen - l : 0, " (and %d more volumes failed)", failed - 1);
  }
  if (g.skipped && rc == 0 && !failed) {
    snprintf(err, errlen, "interrupted by %s: %ld of %d volumes written, %ld not started",
             sf_signal_name(sf_stop_requested()), g.done, n, g.skipped);
    rc = -1;
  }
  free(g.err);
  pthread_mutex_destroy(&g.lock);
  return rc != 0 || failed ? -1 : 0;
}
