/* The dataset cache (spec §4.6, upstream get_dataset.py), keyed by config_id (dataset_files.c):
 * datasets live in <dataset_dir>/<config_id>/<YYYYmmdd-HHMMSS>__<commit>/, are built in a unique
 * .tmp_<ts>_<pid>_<rand8> staging directory and renamed into place once meta.yaml (written last)
 * is there. The newest matching directory is reused; staging directories are never reused. All of
 * it runs under <dataset_dir>/<config_id>/.lock (flock): concurrent runs wait for the one building
 * and reuse its dataset; under the lock, staging directories of processes that no longer run are
 * removed at once, others once idle for 24 h. Missing or truncated volume/mask files of a reused dataset are
 * regenerated in place. sf_dataset_prepare is the entry point training calls. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dataset_internal.h"
#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "scaffold/signals.h"
#include "scaffold/trace.h"

#define STALE_STAGING_SECONDS (24.0 * 3600.0)
#define TMP_PREFIX ".tmp_"

/* ---- reuse, staging, cleanup ------------------------------------------------------------- */

static int cmp_desc(const void *a, const void *b) { return strcmp(*(char *const *)b, *(char *const *)a); }

static double newest_mtime(const char *dir)
{
  struct stat st;
  double newest = stat(dir, &st) == 0 ? (double)st.st_mtime : 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *p = sf_path_join(dir, e->d_name);
    if (stat(p, &st) == 0 && (double)st.st_mtime > newest) newest = (double)st.st_mtime;
    free(p);
  }
  if (d) closedir(d);
  return newest;
}

/* The pid in a staging name .tmp_<ts>_<pid>_<rand8>, or -1. */
static long staging_pid(const char *name)
{
  const char *u = strchr(name + strlen(TMP_PREFIX), '_');
  if (!u) return -1;
  char *end;
  long pid = strtol(u + 1, &end, 10);
  return *end == '_' && pid > 0 ? pid : -1;
}

/* Called with the cache lock held: every process of this version that is building a dataset here
 * holds it, so a staging directory whose process no longer runs (killed mid-generation) is an
 * orphan and goes at once; others (older versions did not lock) after 24 h idle. */
static void reclaim_stale_staging(const char *base)
{
  DIR *d = opendir(base);
  struct dirent *e;
  double now = (double)time(NULL);
  while (d && (e = readdir(d))) {
    if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0) continue;
    char *p = sf_path_join(base, e->d_name);
    if (sf_dir_exists(p)) {
      long pid = staging_pid(e->d_name);
      double age = now - newest_mtime(p);
      if (pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
        sf_info("dataset: removing %s, left by process %ld, which no longer runs", p, pid);
        sf_remove_tree(p);
      } else if (age >= STALE_STAGING_SECONDS) {
        sf_info("dataset: removing orphaned staging directory %s (untouched for %.1f hours)", p, age / 3600.0);
        sf_remove_tree(p);
      }
    }
    free(p);
  }
  if (d) closedir(d);
}

/* The newest reusable dataset directory under base, or NULL. */
static char *find_reusable(const char *base, const char *config_id, const char *commit, int require_commit,
                           const sf_volume_plan *p)
{
  DIR *d = opendir(base);
  if (!d) return NULL;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue; /* ".", "..", staging dirs (.tmp_*) */
    if (n == cap) names = realloc(names, (cap = cap * 2 + 8) * sizeof *names);
    names[n++] = sf_strdup(e->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_desc);
  char *found = NULL;
  size_t csv_len;
  char *csv = sf_ds_contents_csv(p, &csv_len);
  for (size_t i = 0; i < n && !found; i++) {
    char *dir = sf_path_join(base, names[i]);
    char *meta_path = sf_path_join(dir, "meta.yaml");
    char *meta = sf_dir_exists(dir) ? sf_read_file(meta_path, NULL) : NULL;
    if (meta) {
      char *id = sf_ds_meta_value(meta, "config_id"), *ver = sf_ds_meta_value(meta, "dataset_format_version"),
           *com = sf_ds_meta_value(meta, "code_commit");
      int ok = id && ver && !strcmp(id, config_id) && atoi(ver) == SF_DATASET_FORMAT_VERSION &&
               (!require_commit || (com && !strcmp(com, commit)));
      if (ok) {
        /* volumes_contents.csv, when present, must be this plan's (else the directory was built
         * by something else under the same id; skip it rather than train on it). */
        char *csv_path = sf_path_join(dir, "volumes_contents.csv");
        size_t have_len = 0;
        char *have = sf_read_file(csv_path, &have_len);
        if (have && (have_len != csv_len || memcmp(have, csv, csv_len) != 0)) {
          sf_warn("dataset: skipping %s: its volumes_contents.csv differs from the plan for config_id %s", dir,
                  config_id);
          ok = 0;
        }
        free(have);
        free(csv_path);
      }
      if (ok) found = sf_strdup(dir);
      free(id);
      free(ver);
      free(com);
      free(meta);
    }
    free(meta_path);
    free(dir);
  }
  free(csv);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return found;
}

/* Checks that every instance file the plan needs exists; names the directory/file otherwise. */
static int check_instances(const sf_config *c, const sf_volume_plan *p, char *err, size_t errlen)
{
  char *idir = sf_fractal_instance_dir(c);
  if (!sf_dir_exists(idir)) {
    snprintf(err, errlen, "fractal instances not found: directory %s does not exist; run `scaffold generate_fractals` "
             "with the same configuration (fract_base_dir, variance_threshold, seed, problem_scale) first", idir);
    free(idir);
    return -1;
  }
  unsigned char *need = sf_calloc((size_t)p->n_categories * SF_N_INSTANCES, 1, "instance set");
  for (int v = 0; v < p->num_volumes; v++)
    for (int f = 0; f < p->n_fracts_per_vol; f++) {
      const int64_t *row = p->contents + (size_t)v * p->row_len;
      need[row[1 + 2 * f] * SF_N_INSTANCES + row[2 + 2 * f]] = 1;
    }
  int missing = 0;
  char first[4096] = "";
  for (int cat = 0; cat < p->n_categories; cat++)
    for (int inst = 0; inst < SF_N_INSTANCES; inst++) {
      if (!need[cat * SF_N_INSTANCES + inst]) continue;
      char *path = sf_fractal_instance_path(c, cat, inst);
      if (!sf_npy_is_complete(path)) {
        if (!missing++) snprintf(first, sizeof first, "%s", path);
      }
      free(path);
    }
  free(need);
  if (missing)
    snprintf(err, errlen, "%d fractal instance file(s) under %s are missing or incomplete (first: %s); run "
             "`scaffold generate_fractals` with the same configuration first", missing, idir, first);
  free(idir);
  return missing ? -1 : 0;
}

static void staging_name(char *buf, size_t len, const char *ts)
{
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r = (uint32_t)(sf_now() * 1e9) ^ (uint32_t)getpid() * 2654435761u;
  snprintf(buf, len, TMP_PREFIX "%s_%ld_%08x", ts, (long)getpid(), r);
}

int sf_dataset_check_config(const sf_config *c, const char **key, char *err, size_t errlen)
{
  *key = NULL;
  if (c->scale != 1) {
    *key = "scale";
    snprintf(err, errlen, "scaled sub-volume rasterization is not supported; expected 1");
    return -1;
  }
  if (c->problem_scale < 1 || c->problem_scale > SF_DATASET_MAX_PROBLEM_SCALE) {
    *key = "problem_scale";
    snprintf(err, errlen, "the dataset layout holds volumes up to (2^%d)^3 voxels; expected 1..%d",
             SF_DATASET_MAX_PROBLEM_SCALE, SF_DATASET_MAX_PROBLEM_SCALE);
    return -1;
  }
  int n_train, n_val;
  char why[1024];
  if (sf_volume_plan_sizes(c->seed, c->n_categories, c->n_instances_used_per_fractal, c->n_fracts_per_vol,
                           c->val_split, &n_train, &n_val, why, sizeof why) != 0) {
    *key = strncmp(why, "seed", 4) == 0 ? "seed" : "n_instances_used_per_fractal";
    snprintf(err, errlen, "%s", why);
    return -1;
  }
  return 0;
}

/* The volume plan of c, its sizes checked first; 0, or an exit status with the reason printed. */
static int plan_volumes(const sf_config *c, sf_volume_plan *p)
{
  char err[8192];
  const char *bad_key;
  if (sf_dataset_check_config(c, &bad_key, err, sizeof err) != 0) {
    fprintf(stderr, "scaffold: error: config key '%s': %s\n", bad_key, err);
    return SF_EXIT_USAGE;
  }
  int rounded = 0;
  if (sf_volume_plan_make(p, c->seed, c->n_categories, c->n_instances_used_per_fractal, c->n_fracts_per_vol,
                          c->val_split, &rounded, err, sizeof err) != 0) {
    fprintf(stderr, "scaffold: error: dataset: %s\n", err);
    return SF_EXIT_USAGE;
  }
  if (rounded)
    sf_warn("n_instances_used_per_fractal (%ld) is not a multiple of n_fracts_per_vol=%ld. Rounding down to %d.",
            c->n_instances_used_per_fractal, c->n_fracts_per_vol, p->n_inst);
  return 0;
}

/* The volumes of dir whose volume or mask file is missing or truncated, into bad; their count. */
static int incomplete_volumes(const sf_volume_plan *p, const char *dir, int *bad)
{
  int nbad = 0;
  for (int v = 0; v < p->num_volumes; v++) {
    char *vp = sf_dataset_file(dir, p->is_val[v], v, 0), *mp = sf_dataset_file(dir, p->is_val[v], v, 1);
    if (!sf_npy_is_complete(vp) || !sf_npy_is_complete(mp)) bad[nbad++] = v;
    free(vp);
    free(mp);
  }
  return nbad;
}

static int side_files_missing(const char *dir)
{
  static const char *const side[] = {"volumes_contents.csv", "manifest.json", "train_unique_mask_vals.json",
                                     "val_unique_mask_vals.json"};
  int missing = 0;
  for (int i = 0; i < 4; i++) {
    char *sp = sf_path_join(dir, side[i]);
    missing |= !sf_file_exists(sp);
    free(sp);
  }
  return missing;
}

/* Reuse of dir: regenerates any missing or truncated volume/mask file and rewrites missing side
 * files. 0 (*repaired: the volumes regenerated), or an exit status with the reason printed. */
static int repair_dataset(const sf_config *c, const sf_volume_plan *p, const char *dir, const char *config_id,
                          int *repaired)
{
  char err[8192];
  int *bad = sf_malloc((size_t)p->num_volumes * sizeof *bad, "volume list");
  int nbad = incomplete_volumes(p, dir, bad), status = 0;
  if ((side_files_missing(dir) || nbad) && sf_ds_write_side_files(c, p, dir, config_id, err, sizeof err) != 0) {
    fprintf(stderr, "scaffold: error: dataset: %s\n", err);
    status = SF_EXIT_FAILURE;
  } else if (nbad) {
    sf_warn("dataset: %d volume(s) of %s are missing or incomplete; regenerating them", nbad, dir);
    if (check_instances(c, p, err, sizeof err) != 0) {
      fprintf(stderr, "scaffold: error: %s\n", err);
      status = SF_EXIT_USAGE;
    } else {
      sf_trace_phase_begin("dataset"); /* trace: 1 (scaffold/trace.h); no-op otherwise */
      int vrc = sf_volumes_generate(c, p, dir, bad, nbad, err, sizeof err);
      sf_trace_phase_end();
      sf_trace_collect();
      if (vrc != 0 && sf_stop_requested()) {
        fprintf(stderr, "scaffold: dataset repair in %s %s; the files written are whole, a rerun regenerates the "
                "rest\n", dir, err);
        status = SF_EXIT_INTERRUPTED;
      } else if (vrc != 0) {
        fprintf(stderr, "scaffold: error: dataset repair in %s failed: %s\n", dir, err);
        status = SF_EXIT_FAILURE;
      }
    }
  }
  free(bad);
  *repaired = nbad;
  return status;
}

/* Every file of a new dataset into staging: side files, volumes and masks (traced as the "dataset"
 * phase, *secs), then meta.yaml; a stop request before the end fails it. 0 or -1 with err. */
static int write_staging(const sf_config *c, const sf_volume_plan *p, const char *staging, const char *config_id,
                         const char *commit, double *secs, char *err, size_t errlen)
{
  int *all = sf_malloc((size_t)p->num_volumes * sizeof *all, "volume list");
  for (int v = 0; v < p->num_volumes; v++) all[v] = v;
  sf_trace_phase_begin("dataset"); /* trace: 1 (scaffold/trace.h); no-op otherwise */
  double t0 = sf_now();
  int rc = sf_ds_write_side_files(c, p, staging, config_id, err, errlen);
  if (rc == 0) rc = sf_volumes_generate(c, p, staging, all, p->num_volumes, err, errlen);
  free(all);
  *secs = sf_now() - t0;
  sf_trace_phase_end();
  sf_trace_collect();
  if (rc == 0) rc = sf_ds_write_meta(c, staging, config_id, commit, err, errlen);
  if (rc == 0 && sf_stop_requested()) {
    snprintf(err, errlen, "interrupted by %s before publishing", sf_signal_name(sf_stop_requested()));
    rc = -1;
  }
  return rc;
}

/* Publishes staging as base/<ts>__<commit> (a name taken in the same second gets a numeric suffix);
 * the published path (malloc'ed), or NULL with the reason printed and staging removed. */
static char *publish_staging(const char *staging, const char *base, const char *ts, const char *commit)
{
  char final[256];
  snprintf(final, sizeof final, "%s__%s", ts, commit);
  char *dir = sf_path_join(base, final);
  for (int k = 2; sf_file_exists(dir) || sf_dir_exists(dir); k++) {
    free(dir);
    snprintf(final, sizeof final, "%s__%s_%d", ts, commit, k);
    dir = sf_path_join(base, final);
  }
  if (rename(staging, dir) != 0) {
    fprintf(stderr, "scaffold: error: cannot rename %s to %s: %s\n", staging, dir, strerror(errno));
    sf_remove_tree(staging);
    free(dir);
    return NULL;
  }
  return dir;
}

/* A new dataset under base: generated in a staging directory, then published; *dir (malloc'ed) is
 * the published directory. 0, or an exit status with the reason printed. */
static int generate_dataset(const sf_config *c, const sf_volume_plan *p, const char *base, const char *config_id,
                            const char *commit, char **dir)
{
  char err[8192];
  if (check_instances(c, p, err, sizeof err) != 0) {
    fprintf(stderr, "scaffold: error: %s\n", err);
    return SF_EXIT_USAGE;
  }
  char ts[32], name[128];
  time_t now = time(NULL);
  struct tm tmv;
  localtime_r(&now, &tmv);
  strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tmv);
  staging_name(name, sizeof name, ts);
  char *staging = sf_path_join(base, name);
  int status = SF_EXIT_FAILURE;
  double secs = 0;
  sf_info("dataset: generating %d volumes (G = %d) in %s", p->num_volumes, sf_dataset_grid(c), staging);
  if (mkdir(staging, 0777) != 0) {
    fprintf(stderr, "scaffold: error: cannot create staging directory %s: %s\n", staging, strerror(errno));
  } else if (write_staging(c, p, staging, config_id, commit, &secs, err, sizeof err) != 0) {
    sf_remove_tree(staging);
    if (sf_stop_requested()) {
      fprintf(stderr, "scaffold: dataset generation %s; removed the staging directory %s (nothing was published: "
              "a rerun generates the dataset from the start, to the same bytes)\n", err, staging);
      status = SF_EXIT_INTERRUPTED;
    } else {
      fprintf(stderr, "scaffold: error: dataset generation failed: %s\n", err);
    }
  } else if ((*dir = publish_staging(staging, base, ts, commit)) != NULL) {
    sf_info("dataset: generated %d volumes in %.2f s (%.2f volumes/s) -> %s", p->num_volumes, secs,
            secs > 0 ? p->num_volumes / secs : 0.0, *dir);
    status = 0;
  }
  free(staging);
  return status;
}

int sf_dataset_prepare(const sf_config *c, sf_dataset *out)
{
  memset(out, 0, sizeof *out);
  sf_volume_plan p;
  int status = plan_volumes(c, &p);
  if (status != 0) return status;
  char config_id[13], commit[128], err[8192];
  sf_dataset_config_id(c, config_id);
  sf_ds_code_commit(commit, sizeof commit);
  char *base = sf_path_join(c->dataset_dir, config_id), *dir = NULL;
  int generated = 0, repaired = 0, lock = -1;
  status = SF_EXIT_FAILURE;
  if (sf_mkdir_p(base) != 0) {
    fprintf(stderr, "scaffold: error: cannot create dataset directory %s: %s\n", base, strerror(errno));
    goto done;
  }
  /* One process at a time builds or repairs a dataset of this config_id; the others wait, then
   * reuse what it published (a dataset of the same identity is never built twice side by side). */
  char *lpath = sf_path_join(base, ".lock"), what[4200];
  snprintf(what, sizeof what, "generating the dataset in %s", base);
  lock = sf_lock_acquire(lpath, what);
  if (lock < 0 && errno == EINTR && sf_stop_requested()) {
    fprintf(stderr, "scaffold: dataset: interrupted by %s while waiting for %s\n", sf_signal_name(sf_stop_requested()),
            lpath);
    status = SF_EXIT_INTERRUPTED;
  } else if (lock < 0) {
    fprintf(stderr, "scaffold: error: cannot lock %s: %s\n", lpath, strerror(errno));
  }
  free(lpath);
  if (lock < 0) goto done;
  reclaim_stale_staging(base);
  dir = find_reusable(base, config_id, commit, c->dataset_reuse_enforce_commit_id != 0, &p);
  if (dir) {
    sf_info("dataset: reusing %s", dir);
    status = repair_dataset(c, &p, dir, config_id, &repaired);
  } else {
    status = generate_dataset(c, &p, base, config_id, commit, &dir);
    generated = status == 0;
  }
  if (status != 0) goto done;
  status = SF_EXIT_FAILURE;
  if (sf_dataset_open(c, dir, out, err, sizeof err) != 0) {
    fprintf(stderr, "scaffold: error: %s\n", err);
    goto done;
  }
  out->generated = generated;
  out->repaired = repaired;
  status = 0;
done:
  sf_lock_release(lock);
  free(base);
  free(dir);
  sf_volume_plan_free(&p);
  return status;
}
