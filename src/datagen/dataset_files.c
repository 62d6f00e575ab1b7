/* What a dataset directory holds besides the volumes (spec §4.5, §4.6): the cache key (config_id:
 * SHA-256 of the compact key-sorted JSON of the keyed parameters, shard layout sorted by dim, as
 * upstream's _hash_volume_config; a hash input, not a file, so its bytes are kept by hand as Python's
 * json.dumps prints them), volumes_contents.csv (np.savetxt "%i" layout), manifest.json and
 * {train,val}_unique_mask_vals.json (JSON where upstream pickles; printed by cJSON) and meta.yaml
 * (PyYAML's sorted block layout), plus the code commit stamped into names and metadata. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sf_git_commit.h> /* SF_GIT_COMMIT, generated in <build>/generated (cmake/GitCommit.cmake) */

#include "dataset_internal.h"
#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/json.h"
#include "scaffold/sha256.h"

static const char *const INCLUDE_KEYS[] = {"dataset_format_version", "n_categories", "n_instances_used_per_fractal",
                                           "problem_scale",          "seed",         "variance_threshold",
                                           "n_fracts_per_vol",       "val_split",    "dc_num_shards",
                                           "dc_shard_dims"};
#define N_INCLUDE_KEYS (sizeof INCLUDE_KEYS / sizeof INCLUDE_KEYS[0])

/* A config number as Python's json.dumps would print the YAML value: integral values as ints
 * (upstream's YAML has `val_split: 30`), others as Python floats ("0.15"). */
static void json_number(double v, char *buf, size_t len)
{
  if (v == (double)(long long)v && v > -1e15 && v < 1e15) snprintf(buf, len, "%lld", (long long)v);
  else sf_format_pyfloat(v, buf, len);
}

/* Shard layout, optionally sorted by dim as upstream's canonicalization does. */
static void shard_layout(const sf_config *c, int canonical, long dims[3], long nums[3])
{
  for (int i = 0; i < 3; i++) dims[i] = c->dc_shard_dims[i], nums[i] = c->dc_num_shards[i];
  if (!canonical) return;
  for (int i = 1; i < 3; i++) /* insertion sort on (dim, num) pairs */
    for (int j = i; j > 0 && (dims[j - 1] > dims[j] || (dims[j - 1] == dims[j] && nums[j - 1] > nums[j])); j--) {
      long t = dims[j]; dims[j] = dims[j - 1]; dims[j - 1] = t;
      t = nums[j]; nums[j] = nums[j - 1]; nums[j - 1] = t;
    }
}

char *sf_dataset_config_json(const sf_config *c, int canonical_shards)
{
  long dims[3], nums[3];
  shard_layout(c, canonical_shards, dims, nums);
  char vt[64], vs[64];
  json_number(c->variance_threshold, vt, sizeof vt);
  json_number(c->val_split, vs, sizeof vs);
  char *s = sf_malloc(1024, "config json");
  /* keys in sorted order, compact separators */
  snprintf(s, 1024,
           "{\"dataset_format_version\":%d,\"dc_num_shards\":[%ld,%ld,%ld],\"dc_shard_dims\":[%ld,%ld,%ld],"
           "\"n_categories\":%ld,\"n_fracts_per_vol\":%ld,\"n_instances_used_per_fractal\":%ld,"
           "\"problem_scale\":%ld,\"seed\":%ld,\"val_split\":%s,\"variance_threshold\":%s}",
           SF_DATASET_FORMAT_VERSION, nums[0], nums[1], nums[2], dims[0], dims[1], dims[2], c->n_categories,
           c->n_fracts_per_vol, c->n_instances_used_per_fractal, c->problem_scale, c->seed, vs, vt);
  return s;
}

void sf_dataset_config_id(const sf_config *c, char out[13])
{
  char *js = sf_dataset_config_json(c, 1), hex[65];
  sf_sha256_hex(js, strlen(js), hex);
  memcpy(out, hex, 12);
  out[12] = '\0';
  free(js);
}

void sf_ds_code_commit(char *buf, size_t len)
{
  snprintf(buf, len, "%s", SF_GIT_COMMIT[0] ? SF_GIT_COMMIT : "no-commit-id");
  for (char *p = buf; *p; p++)
    if (*p == '/' || *p == ' ' || *p == '\n') *p = '_';
}

/* ---- side files ---------------------------------------------------------------------------- */

typedef struct {
  char *buf;
  size_t len, cap;
} sbuf;

__attribute__((format(printf, 2, 3))) static void put(sbuf *s, const char *fmt, ...)
{
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(s->buf ? s->buf + s->len : NULL, s->buf ? s->cap - s->len : 0, fmt, ap);
    va_end(ap);
    if (s->buf && (size_t)n < s->cap - s->len) {
      s->len += (size_t)n;
      return;
    }
    s->cap = s->cap * 2 + (size_t)n + 256;
    char *nb = realloc(s->buf, s->cap);
    if (!nb) sf_die(SF_EXIT_FAILURE, "out of memory building a dataset side file");
    s->buf = nb;
  }
}

/* volumes_contents.csv exactly as np.savetxt(fmt="%i", delimiter=",") writes it. */
char *sf_ds_contents_csv(const sf_volume_plan *p, size_t *len)
{
  sbuf s = {0};
  for (int v = 0; v < p->num_volumes; v++)
    for (int k = 0; k < p->row_len; k++)
      put(&s, "%lld%c", (long long)p->contents[(size_t)v * p->row_len + k], k + 1 < p->row_len ? ',' : '\n');
  *len = s.len;
  return s.buf;
}

static int write_text(const char *dir, const char *name, const char *text, size_t len, char *err, size_t errlen)
{
  char *path = sf_path_join(dir, name);
  int rc = sf_write_file_atomic(path, text, len);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  free(path);
  return rc;
}

static int write_json_file(const char *dir, const char *name, const cJSON *j, int rows, char *err, size_t errlen)
{
  char *path = sf_path_join(dir, name);
  int rc = rows ? sf_json_write_rows_atomic(path, j) : sf_json_write_atomic(path, j);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  free(path);
  return rc;
}

/* {"mask_values": [...]}: 0 and the categories present in the split's volumes. */
static cJSON *unique_vals_json(const sf_volume_plan *p, int want_val)
{
  unsigned char *has = sf_calloc((size_t)p->n_categories + 1, 1, "mask values");
  has[0] = 1;
  for (int v = 0; v < p->num_volumes; v++)
    if (p->is_val[v] == want_val)
      for (int f = 0; f < p->n_fracts_per_vol; f++) has[p->contents[(size_t)v * p->row_len + 1 + 2 * f] + 1] = 1;
  cJSON *j = cJSON_CreateObject();
  cJSON *vals = cJSON_AddArrayToObject(j, "mask_values");
  for (int k = 0; k <= p->n_categories; k++)
    if (has[k]) cJSON_AddItemToArray(vals, cJSON_CreateNumber(k));
  free(has);
  return j;
}

static cJSON *volume_json(const sf_volume_plan *p, int v)
{
  const int64_t *row = p->contents + (size_t)v * p->row_len;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", v);
  cJSON_AddStringToObject(o, "split", p->is_val[v] ? "validation" : "training");
  cJSON *cats = cJSON_AddArrayToObject(o, "categories"), *inst = cJSON_AddArrayToObject(o, "instances");
  for (int f = 0; f < p->n_fracts_per_vol; f++) {
    cJSON_AddItemToArray(cats, cJSON_CreateNumber((double)row[1 + 2 * f]));
    cJSON_AddItemToArray(inst, cJSON_CreateNumber((double)row[2 + 2 * f]));
  }
  return o;
}

/* manifest.json: the plan's counts, the class colours and, one a line, each volume's split,
 * categories and instances. */
static cJSON *manifest_json(const sf_config *c, const sf_volume_plan *p, const char *config_id)
{
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "dataset_format_version", SF_DATASET_FORMAT_VERSION);
  cJSON_AddStringToObject(m, "config_id", config_id);
  cJSON_AddNumberToObject(m, "grid", sf_dataset_grid(c));
  cJSON_AddNumberToObject(m, "n_categories", p->n_categories);
  cJSON_AddNumberToObject(m, "n_fracts_per_vol", p->n_fracts_per_vol);
  cJSON_AddNumberToObject(m, "num_volumes", p->num_volumes);
  cJSON_AddNumberToObject(m, "n_train", p->n_train);
  cJSON_AddNumberToObject(m, "n_val", p->n_val);
  cJSON *colours = cJSON_AddArrayToObject(m, "colours");
  for (int k = 0; k < p->n_categories; k++)
    cJSON_AddItemToArray(colours, cJSON_CreateDoubleArray(p->colours + 3 * k, 3));
  cJSON *volumes = cJSON_AddArrayToObject(m, "volumes");
  for (int v = 0; v < p->num_volumes; v++) cJSON_AddItemToArray(volumes, volume_json(p, v));
  return m;
}

static int make_subdirs(const char *dir, char *err, size_t errlen)
{
  static const char *const sub[] = {"volumes/training", "volumes/validation", "masks/training", "masks/validation"};
  for (int i = 0; i < 4; i++) {
    char *d = sf_path_join(dir, sub[i]);
    int rc = sf_mkdir_p(d);
    if (rc != 0) snprintf(err, errlen, "cannot create directory %s: %s", d, strerror(errno));
    free(d);
    if (rc != 0) return -1;
  }
  return 0;
}

int sf_ds_write_side_files(const sf_config *c, const sf_volume_plan *p, const char *dir, const char *config_id,
                            char *err, size_t errlen)
{
  if (make_subdirs(dir, err, errlen) != 0) return -1;
  size_t len;
  char *csv = sf_ds_contents_csv(p, &len);
  int rc = write_text(dir, "volumes_contents.csv", csv, len, err, errlen);
  free(csv);
  if (rc) return -1;

  cJSON *m = manifest_json(c, p, config_id);
  rc = write_json_file(dir, "manifest.json", m, 1, err, errlen);
  cJSON_Delete(m);
  if (rc) return -1;

  for (int val = 0; val < 2; val++) {
    cJSON *u = unique_vals_json(p, val);
    rc = write_json_file(dir, val ? "val_unique_mask_vals.json" : "train_unique_mask_vals.json", u, 0, err, errlen);
    cJSON_Delete(u);
    if (rc) return -1;
  }
  return 0;
}

/* meta.yaml as yaml.safe_dump(meta, sort_keys=True, default_flow_style=False) lays it out. */
int sf_ds_write_meta(const sf_config *c, const char *dir, const char *config_id, const char *commit, char *err,
                      size_t errlen)
{
  long dims[3], nums[3];
  shard_layout(c, 0, dims, nums);
  char vt[64], vs[64], created[64];
  json_number(c->variance_threshold, vt, sizeof vt);
  json_number(c->val_split, vs, sizeof vs);
  time_t now = time(NULL);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tmv);
  sbuf m = {0};
  put(&m, "code_commit: %s\nconfig_id: %s\nconfig_subset:\n  dataset_format_version: %d\n", commit, config_id,
      SF_DATASET_FORMAT_VERSION);
  put(&m, "  dc_num_shards:\n  - %ld\n  - %ld\n  - %ld\n  dc_shard_dims:\n  - %ld\n  - %ld\n  - %ld\n", nums[0], nums[1],
      nums[2], dims[0], dims[1], dims[2]);
  put(&m, "  n_categories: %ld\n  n_fracts_per_vol: %ld\n  n_instances_used_per_fractal: %ld\n  problem_scale: %ld\n"
          "  seed: %ld\n  val_split: %s\n  variance_threshold: %s\n",
      c->n_categories, c->n_fracts_per_vol, c->n_instances_used_per_fractal, c->problem_scale, c->seed, vs, vt);
  put(&m, "created_at: '%s'\ndataset_format_version: %d\ninclude_keys:\n", created, SF_DATASET_FORMAT_VERSION);
  for (size_t i = 0; i < N_INCLUDE_KEYS; i++) put(&m, "- %s\n", INCLUDE_KEYS[i]);
  int rc = write_text(dir, "meta.yaml", m.buf, m.len, err, errlen);
  free(m.buf);
  return rc;
}

/* Top-level "key: value" of a meta.yaml (our writer's and PyYAML's block layout); malloc'ed. */
char *sf_ds_meta_value(const char *text, const char *key)
{
  size_t kl = strlen(key);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, key, kl) == 0 && l[kl] == ':') {
      const char *v = l + kl + 1;
      while (*v == ' ') v++;
      size_t n = strcspn(v, "\r\n");
      while (n && v[n - 1] == ' ') n--;
      if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) v++, n -= 2;
      char *s = sf_malloc(n + 1, "meta value");
      memcpy(s, v, n);
      s[n] = '\0';
      return s;
    }
  }
  return NULL;
}
