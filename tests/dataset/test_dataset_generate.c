/* Dataset generation end to end (StarPU; problem_scale 5, 3 classes, 12 volumes): fractal instances
 * made through scaffold/datagen.h, then sf_dataset_prepare. Checks every voxel of every volume
 * (mask in 0..n_categories, a class colour exactly where its label is, labels only from the
 * volume's own categories), the loader (NDHWC transpose, string-sorted ids, counts), side files,
 * class weights against a hand count, cache reuse (same and non-keyed change) vs regeneration
 * (keyed change), repair of truncated/missing files, staging directories never reused and stale
 * ones reclaimed, byte-identical files for 1 vs 2 workers and eager vs dmda, a clear error for
 * missing fractals (status 2) and for a NaN instance (status 1, file named, no staging left). */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/datagen.h"
#include "scaffold/dataset.h"
#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "scaffold/runtime.h"
#include "testutil.h"

static char *g_tmp;

static void make_config(sf_config *c, const char *dsdir, const char *fracdir, long ncpu, const char *sched,
                        const char *extra)
{
  char buf[4096];
  sf_config_init(c);
  snprintf(buf, sizeof buf, "dataset_dir=%s", dsdir);
  sf_config_apply_override(c, buf);
  snprintf(buf, sizeof buf, "fract_base_dir=%s", fracdir);
  sf_config_apply_override(c, buf);
  sf_config_apply_override(c, "problem_scale=5");
  sf_config_apply_override(c, "n_categories=3");
  sf_config_apply_override(c, "n_instances_used_per_fractal=13"); /* -> 12: 12 volumes */
  sf_config_apply_override(c, "val_split=25");                     /* 9 train / 3 val */
  snprintf(buf, sizeof buf, "ncpu=%ld", ncpu);
  sf_config_apply_override(c, buf);
  snprintf(buf, sizeof buf, "scheduler=%s", sched);
  sf_config_apply_override(c, buf);
  if (extra) sf_config_apply_override(c, extra);
  sf_config_finalize(c);
}

static char *tpath(const char *rel) { return sf_path_join(g_tmp, rel); }

/* Recursive list of regular files under dir (relative names), sorted. */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static void list_rec(const char *root, const char *rel, char ***v, int *n)
{
  char *d = rel[0] ? sf_path_join(root, rel) : sf_strdup(root);
  DIR *dp = opendir(d);
  struct dirent *e;
  while (dp && (e = readdir(dp))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char *r = rel[0] ? sf_path_join(rel, e->d_name) : sf_strdup(e->d_name);
    char *full = sf_path_join(root, r);
    if (sf_dir_exists(full)) list_rec(root, r, v, n), free(r);
    else {
      *v = realloc(*v, (size_t)(*n + 1) * sizeof **v);
      (*v)[(*n)++] = r;
    }
    free(full);
  }
  if (dp) closedir(dp);
  free(d);
}

/* Every file except meta.yaml and .heartbeat must exist in both and be byte-identical. */
static void compare_dirs(const char *a, const char *b, const char *what)
{
  char **la = NULL, **lb = NULL;
  int na = 0, nb = 0;
  list_rec(a, "", &la, &na);
  list_rec(b, "", &lb, &nb);
  qsort(la, (size_t)na, sizeof *la, cmp_str);
  qsort(lb, (size_t)nb, sizeof *lb, cmp_str);
  SF_CHECK(na == nb && na > 20, "%s: %d files vs %d files", what, na, nb);
  int diffs = 0, compared = 0;
  for (int i = 0; i < na && i < nb; i++) {
    if (strcmp(la[i], lb[i]) != 0) {
      if (diffs++ < 3) fprintf(stderr, "%s: file lists differ: %s vs %s\n", what, la[i], lb[i]);
      continue;
    }
    if (!strcmp(la[i], "meta.yaml") || !strcmp(la[i], ".heartbeat")) continue;
    char *pa = sf_path_join(a, la[i]), *pb = sf_path_join(b, lb[i]);
    size_t sa = 0, sb = 0;
    char *da = sf_read_file(pa, &sa), *db = sf_read_file(pb, &sb);
    if (!da || !db || sa != sb || memcmp(da, db, sa) != 0) {
      if (diffs++ < 3) fprintf(stderr, "%s: %s differs (%zu vs %zu bytes)\n", what, la[i], sa, sb);
    }
    compared++;
    free(da), free(db), free(pa), free(pb);
  }
  SF_CHECK(diffs == 0, "%s: %d differences over %d compared files", what, diffs, compared);
  for (int i = 0; i < na; i++) free(la[i]);
  for (int i = 0; i < nb; i++) free(lb[i]);
  free(la), free(lb);
}

static void check_contents(const sf_config *c, const sf_dataset *d)
{
  sf_volume_plan p;
  char err[1024];
  SF_CHECK(sf_volume_plan_make(&p, c->seed, c->n_categories, c->n_instances_used_per_fractal, c->n_fracts_per_vol,
                               c->val_split, NULL, err, sizeof err) == 0, "plan: %s", err);
  SF_CHECK(d->n_train == 9 && d->n_val == 3, "counts: %d train / %d val, want 9 / 3", d->n_train, d->n_val);
  SF_CHECK(d->grid == 32 && d->n_classes == 4, "grid %d classes %d, want 32 and 4", d->grid, d->n_classes);
  for (int i = 1; i < d->n_train; i++)
    SF_CHECK(strcmp(d->train_ids[i - 1], d->train_ids[i]) < 0, "training ids not string-sorted at %d: %s, %s", i,
             d->train_ids[i - 1], d->train_ids[i]);
  /* "10" and "11" exist among 12 volumes: string order puts "1" < "10" < "11" < "2" */
  const size_t G = 32, N = G * G * G;
  float *img = malloc(3 * N * sizeof *img);
  uint16_t *lab = malloc(N * sizeof *lab);
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < (s ? d->n_val : d->n_train); i++) {
      const char *id = s ? d->val_ids[i] : d->train_ids[i];
      int v = atoi(id);
      SF_CHECK(p.is_val[v] == s, "volume %d is in the wrong split", v);
      int rc = sf_dataset_load(d, s ? SF_SPLIT_VAL : SF_SPLIT_TRAIN, i, img, lab, err, sizeof err);
      SF_CHECK(rc == 0, "load %s: %s", id, err);
      if (rc) continue;
      /* raw file is channels-first; the loader's image must be its NDHWC transpose */
      char *vp = sf_dataset_volume_path(d, s ? SF_SPLIT_VAL : SF_SPLIT_TRAIN, i);
      sf_npy raw;
      SF_CHECK(sf_npy_read(vp, &raw, err, sizeof err) == 0, "read %s: %s", vp, err);
      SF_CHECK(raw.dtype == SF_NPY_F32 && raw.ndim == 4 && raw.shape[0] == 3 && raw.shape[1] == G,
               "%s: dtype %d ndim %d shape0 %zu, want float32 (3, 32, 32, 32)", vp, raw.dtype, raw.ndim, raw.shape[0]);
      const int64_t *row = p.contents + (size_t)v * p.row_len;
      int allowed[4] = {1, 0, 0, 0}, seen[4] = {0, 0, 0, 0};
      for (int f = 0; f < 3; f++) allowed[row[1 + 2 * f] + 1] = 1;
      int bad_range = 0, bad_col = 0, bad_label = 0, bad_tr = 0;
      for (size_t x = 0; x < N; x++) {
        int m = lab[x];
        if (m > 3) {
          bad_range++;
          continue;
        }
        seen[m] = 1;
        bad_label += !allowed[m];
        for (int ch = 0; ch < 3; ch++) {
          float want = m ? (float)d->colours[3 * (m - 1) + ch] : 0.0f;
          bad_col += img[3 * x + ch] != want;
          bad_tr += raw.data && img[3 * x + ch] != ((float *)raw.data)[ch * N + x];
        }
      }
      SF_CHECK(bad_range == 0, "volume %d: %d mask values outside 0..3", v, bad_range);
      SF_CHECK(bad_col == 0, "volume %d: %d channels differ from their label's class colour", v, bad_col);
      SF_CHECK(bad_label == 0, "volume %d: %d voxels carry a class not in the volume's row", v, bad_label);
      SF_CHECK(bad_tr == 0, "volume %d: %d NDHWC values differ from the (3,G,G,G) file", v, bad_tr);
      SF_CHECK(seen[row[1 + 2 * 2] + 1], "volume %d: the last fractal's class %lld is absent (nothing overwrites it)", v,
               (long long)row[5]);
      SF_CHECK(seen[0], "volume %d has no background", v);
      free(raw.data);
      free(vp);
    }
  /* side files */
  char *csvp = sf_path_join(d->dir, "volumes_contents.csv");
  char *csv = sf_read_file(csvp, NULL);
  SF_CHECK(csv != NULL, "missing %s", csvp);
  if (csv) {
    char want[256];
    snprintf(want, sizeof want, "0,%lld,%lld,%lld,%lld,%lld,%lld\n", (long long)p.contents[1], (long long)p.contents[2],
             (long long)p.contents[3], (long long)p.contents[4], (long long)p.contents[5], (long long)p.contents[6]);
    SF_CHECK(strncmp(csv, want, strlen(want)) == 0, "volumes_contents.csv starts '%.40s', want '%s'", csv, want);
  }
  free(csv), free(csvp);
  const char *side[] = {"manifest.json", "train_unique_mask_vals.json", "val_unique_mask_vals.json", "meta.yaml"};
  for (int k = 0; k < 4; k++) {
    char *sp = sf_path_join(d->dir, side[k]);
    SF_CHECK(sf_file_exists(sp), "missing %s", sp);
    free(sp);
  }
  char *metap = sf_path_join(d->dir, "meta.yaml");
  char *meta = sf_read_file(metap, NULL);
  char idline[64];
  snprintf(idline, sizeof idline, "config_id: %s\n", d->config_id);
  SF_CHECK(meta && strstr(meta, idline) && strstr(meta, "\ndataset_format_version: 5\n"),
           "meta.yaml lacks '%s' or the format version", idline);
  free(meta), free(metap);

  /* class weights: indices linspace(0, 8, ceil(0.9)=1) -> [0]; hand count over 3 masks with frac 0.3 */
  float w[4], want[4];
  int idx[9], n = sf_ce_weight_sample_indices(d->n_train, 0.3, idx);
  SF_CHECK(n == 3 && idx[0] == 0 && idx[1] == 4 && idx[2] == 8, "sample indices for 9 at 0.3: n %d (%d %d %d)", n,
           idx[0], idx[1], idx[2]);
  uint64_t counts[4] = {0, 0, 0, 0};
  for (int k = 0; k < n; k++) {
    sf_dataset_load(d, SF_SPLIT_TRAIN, idx[k], NULL, lab, err, sizeof err);
    for (size_t x = 0; x < N; x++) counts[lab[x]]++;
  }
  double T = (double)(counts[0] + counts[1] + counts[2] + counts[3]);
  want[0] = (float)(T / (double)counts[0]);
  for (int k = 1; k < 4; k++) want[k] = (float)(T / (double)(counts[1] + counts[2] + counts[3]));
  SF_CHECK(sf_dataset_class_weights(d, 0.3, w, NULL, err, sizeof err) == 0, "class weights: %s", err);
  for (int k = 0; k < 4; k++) SF_CHECK(w[k] == want[k], "w[%d] = %.9g, want %.9g", k, w[k], want[k]);
  SF_CHECK(want[0] > 1.0f && want[1] > 10.0f, "weights %g %g look implausible for sparse fractals", want[0], want[1]);
  free(img), free(lab);
  sf_volume_plan_free(&p);
}

/* Runs f with stderr redirected to a file; returns its status and the captured text (malloc'ed). */
static int prepare_captured(const sf_config *c, sf_dataset *d, char **text)
{
  char *cap = tpath("stderr.txt");
  fflush(stderr);
  int saved = dup(2), fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 2);
  close(fd);
  int rc = sf_dataset_prepare(c, d);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  *text = sf_read_file(cap, NULL);
  if (*text) fputs(*text, stderr);
  free(cap);
  return rc;
}

static int count_staging(const char *base)
{
  DIR *dp = opendir(base);
  struct dirent *e;
  int n = 0;
  while (dp && (e = readdir(dp))) n += strncmp(e->d_name, ".tmp_", 5) == 0;
  if (dp) closedir(dp);
  return n;
}

static void age_tree(const char *dir, double seconds)
{
  struct timeval tv[2];
  gettimeofday(&tv[0], NULL);
  tv[0].tv_sec -= (time_t)seconds;
  tv[1] = tv[0];
  char **l = NULL;
  int n = 0;
  list_rec(dir, "", &l, &n);
  for (int i = 0; i < n; i++) {
    char *p = sf_path_join(dir, l[i]);
    utimes(p, tv);
    free(p), free(l[i]);
  }
  free(l);
  const char *subs[] = {"volumes/training", "volumes/validation", "masks/training", "masks/validation", "volumes", "masks"};
  for (int i = 0; i < 6; i++) {
    char *p = sf_path_join(dir, subs[i]);
    utimes(p, tv);
    free(p);
  }
  utimes(dir, tv);
}

int main(void)
{
  g_tmp = sf_test_tmpdir("dsgen");
  char *starpu_home = tpath("starpu");
  sf_mkdir_p(starpu_home);
  setenv("STARPU_HOME", starpu_home, 1);
  char *frac = tpath("fractals"), *dsA = tpath("dsA"), *err_text = NULL;
  char err[1024];

  /* ---- 1 worker, eager: fractals, then the dataset ---- */
  sf_config c;
  make_config(&c, dsA, frac, 1, "eager", NULL);
  sf_runtime_init(&c);
  double t0 = sf_now();
  SF_CHECK(sf_generate_fractals(&c) == 0, "generate_fractals failed");
  printf("fractals: %.2f s\n", sf_now() - t0);
  sf_dataset A, B;
  t0 = sf_now();
  int rc = sf_dataset_prepare(&c, &A);
  printf("dataset (1 worker, eager): %.2f s\n", sf_now() - t0);
  SF_CHECK(rc == 0 && A.generated == 1, "first prepare: status %d generated %d", rc, A.generated);
  if (rc != 0) return sf_test_end();
  char cid[13];
  sf_dataset_config_id(&c, cid);
  SF_CHECK(!strcmp(cid, A.config_id), "config_id %s vs dataset's %s", cid, A.config_id);
  check_contents(&c, &A);

  /* reuse: same config, and a change in a non-keyed key */
  rc = sf_dataset_prepare(&c, &B);
  SF_CHECK(rc == 0 && B.generated == 0 && !strcmp(A.dir, B.dir), "same config: status %d generated %d dir %s vs %s", rc,
           B.generated, B.dir, A.dir);
  sf_dataset_free(&B);
  sf_config c2;
  make_config(&c2, dsA, frac, 1, "eager", "epochs=7");
  rc = sf_dataset_prepare(&c2, &B);
  SF_CHECK(rc == 0 && B.generated == 0 && !strcmp(A.dir, B.dir), "non-keyed change: status %d generated %d", rc,
           B.generated);
  sf_dataset_free(&B);
  sf_config_free(&c2);

  /* repair: truncate a training mask, delete a validation volume; both come back byte-identical */
  char *m0 = sf_dataset_mask_path(&A, SF_SPLIT_TRAIN, 0), *v0 = sf_dataset_volume_path(&A, SF_SPLIT_VAL, 0);
  size_t lm = 0, lv = 0;
  char *bm = sf_read_file(m0, &lm), *bv = sf_read_file(v0, &lv);
  SF_CHECK(truncate(m0, (off_t)(lm / 2)) == 0 && unlink(v0) == 0, "cannot damage %s / %s", m0, v0);
  rc = sf_dataset_prepare(&c, &B);
  SF_CHECK(rc == 0 && B.generated == 0 && B.repaired == 2, "repair: status %d generated %d repaired %d (want 0, 0, 2)",
           rc, B.generated, B.repaired);
  size_t lm2 = 0, lv2 = 0;
  char *bm2 = sf_read_file(m0, &lm2), *bv2 = sf_read_file(v0, &lv2);
  SF_CHECK(bm2 && lm2 == lm && !memcmp(bm, bm2, lm), "repaired mask differs (%zu vs %zu bytes)", lm2, lm);
  SF_CHECK(bv2 && lv2 == lv && !memcmp(bv, bv2, lv), "repaired volume differs (%zu vs %zu bytes)", lv2, lv);
  free(bm), free(bv), free(bm2), free(bv2), free(m0), free(v0);
  sf_dataset_free(&B);

  /* missing fractals: status 2 and a message naming the directory and generate_fractals */
  char *nofrac = tpath("nofractals");
  make_config(&c2, dsA, nofrac, 1, "eager", "seed=7");
  rc = prepare_captured(&c2, &B, &err_text);
  SF_CHECK(rc == 2, "missing fractals: status %d, want 2", rc);
  SF_CHECK(err_text && strstr(err_text, nofrac) && strstr(err_text, "generate_fractals"),
           "missing fractals: message should name %s and generate_fractals: %s", nofrac, err_text ? err_text : "");
  free(err_text), free(nofrac);
  sf_config_free(&c2);

  /* a NaN instance: status 1, the instance file named, no staging directory left behind */
  sf_volume_plan p;
  sf_volume_plan_make(&p, c.seed, c.n_categories, c.n_instances_used_per_fractal, c.n_fracts_per_vol, c.val_split,
                      NULL, err, sizeof err);
  char *inst = sf_fractal_instance_path(&c, (int)p.contents[1], (int)p.contents[2]);
  size_t li = 0;
  char *saved_inst = sf_read_file(inst, &li);
  sf_npy cloud;
  SF_CHECK(sf_npy_read(inst, &cloud, err, sizeof err) == 0, "read %s: %s", inst, err);
  ((float *)cloud.data)[4] = 0.0f / 0.0f;
  sf_npy_write(inst, SF_NPY_F32, 2, cloud.shape, cloud.data, err, sizeof err);
  free(cloud.data);
  char *dsN = tpath("dsNaN");
  make_config(&c2, dsN, frac, 1, "eager", NULL);
  rc = prepare_captured(&c2, &B, &err_text);
  SF_CHECK(rc == 1, "NaN instance: status %d, want 1", rc);
  SF_CHECK(err_text && strstr(err_text, inst) && strstr(err_text, "non-finite"), "NaN instance: message should name %s: %s",
           inst, err_text ? err_text : "");
  char *baseN = sf_path_join(dsN, A.config_id);
  SF_CHECK(count_staging(baseN) == 0, "a failed generation left %d staging directories in %s", count_staging(baseN), baseN);
  sf_write_file_atomic(inst, saved_inst, li);
  free(err_text), free(saved_inst), free(inst), free(dsN), free(baseN);
  sf_config_free(&c2);
  sf_volume_plan_free(&p);
  sf_runtime_shutdown();

  /* ---- determinism: 2 workers eager, 2 workers dmda ---- */
  const char *scheds[2] = {"eager", "dmda"};
  for (int k = 0; k < 2; k++) {
    char rel[32];
    snprintf(rel, sizeof rel, "ds_%s2", scheds[k]);
    char *ds = tpath(rel);
    make_config(&c2, ds, frac, 2, scheds[k], NULL);
    sf_runtime_init(&c2);
    SF_CHECK(sf_runtime_ncpu_workers() == 2, "%s: %d CPU workers, want 2", scheds[k], sf_runtime_ncpu_workers());
    t0 = sf_now();
    rc = sf_dataset_prepare(&c2, &B);
    printf("dataset (2 workers, %s): %.2f s\n", scheds[k], sf_now() - t0);
    SF_CHECK(rc == 0 && B.generated, "%s: status %d generated %d", scheds[k], rc, B.generated);
    char what[64];
    snprintf(what, sizeof what, "1 worker eager vs 2 workers %s", scheds[k]);
    if (rc == 0) compare_dirs(A.dir, B.dir, what);
    sf_dataset_free(&B);
    sf_runtime_shutdown();
    sf_config_free(&c2);
    free(ds);
  }

  /* ---- keyed change regenerates; staging directories are never reused; stale ones are reclaimed ---- */
  sf_runtime_init(&c);
  make_config(&c2, dsA, frac, 1, "eager", "val_split=50");
  rc = sf_dataset_prepare(&c2, &B);
  SF_CHECK(rc == 0 && B.generated == 1 && strcmp(B.config_id, A.config_id) != 0,
           "keyed change (val_split): status %d generated %d config_id %s (old %s)", rc, B.generated, B.config_id,
           A.config_id);
  SF_CHECK(B.n_train == 6 && B.n_val == 6, "val_split 50: %d/%d, want 6/6", B.n_train, B.n_val);
  sf_dataset_free(&B);
  sf_config_free(&c2);

  char *baseA = sf_path_join(dsA, A.config_id);
  char *staged = sf_path_join(baseA, ".tmp_20990101-000000_1_deadbeef");
  SF_CHECK(rename(A.dir, staged) == 0, "cannot move %s to %s", A.dir, staged);
  rc = sf_dataset_prepare(&c, &B);
  SF_CHECK(rc == 0 && B.generated == 1 && strstr(B.dir, "/.tmp_") == NULL,
           "a complete staging directory must not be reused: status %d generated %d dir %s", rc, B.generated, B.dir);
  SF_CHECK(sf_dir_exists(staged), "a fresh staging directory must not be reclaimed");
  if (rc == 0) compare_dirs(staged, B.dir, "regenerated vs first dataset");
  sf_dataset_free(&B);
  age_tree(staged, 25 * 3600.0);
  rc = sf_dataset_prepare(&c, &B);
  SF_CHECK(rc == 0 && B.generated == 0, "reuse after reclaim: status %d generated %d", rc, B.generated);
  SF_CHECK(!sf_dir_exists(staged), "a staging directory idle for 25 h must be reclaimed: %s", staged);
  sf_dataset_free(&B);
  sf_runtime_shutdown();
  free(baseA), free(staged);

  sf_dataset_free(&A);
  sf_config_free(&c);
  int status = sf_test_end();
  if (status == 0) sf_rm_rf(g_tmp);
  else fprintf(stderr, "kept %s for inspection\n", g_tmp);
  free(frac), free(dsA), free(starpu_home);
  return status;
}
