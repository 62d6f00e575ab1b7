/* Loader API used by training (spec §4.7): sample ids are the file stems of volumes/<split>/,
 * sorted as strings ("0", "1", "10", "100", ...) as upstream's BasicDataset sorts them, and the
 * paths of a sample's files. Reading a sample (the channels-first float32 (3, G, G, G) volume turned
 * into NDHWC plus its uint16 (G, G, G) mask, whole or a box of it) and the CE class weights from the
 * sampled training masks (spec §6.2) are in dataset_block.c. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Stems "<vol>" of volumes/<split>/<vol>_shard000000.npy, string-sorted. Returns count or -1. */
static int list_ids(const char *dir, const char *split, char ***ids, char *err, size_t errlen)
{
  size_t n = strlen(dir) + strlen(split) + 16;
  char *vdir = sf_malloc(n, "path");
  snprintf(vdir, n, "%s/volumes/%s", dir, split);
  DIR *d = opendir(vdir);
  if (!d) {
    snprintf(err, errlen, "cannot open dataset directory %s", vdir);
    free(vdir);
    return -1;
  }
  char **v = NULL;
  int cnt = 0, cap = 0;
  struct dirent *e;
  const char *suffix = SF_SHARD_SUFFIX ".npy";
  size_t sl = strlen(suffix);
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (e->d_name[0] == '.' || l <= sl || strcmp(e->d_name + l - sl, suffix) != 0) continue;
    if (cnt == cap) v = realloc(v, (size_t)(cap = cap * 2 + 16) * sizeof *v);
    v[cnt] = sf_malloc(l - sl + 1, "id");
    memcpy(v[cnt], e->d_name, l - sl);
    v[cnt][l - sl] = '\0';
    cnt++;
  }
  closedir(d);
  free(vdir);
  if (cnt) qsort(v, (size_t)cnt, sizeof *v, cmp_str);
  *ids = v;
  return cnt;
}

static void free_ids(char **ids, int n)
{
  for (int i = 0; i < n; i++) free(ids[i]);
  free(ids);
}

int sf_dataset_open(const sf_config *c, const char *dir, sf_dataset *out, char *err, size_t errlen)
{
  memset(out, 0, sizeof *out);
  sf_volume_plan p;
  if (sf_volume_plan_make(&p, c->seed, c->n_categories, c->n_instances_used_per_fractal, c->n_fracts_per_vol,
                          c->val_split, NULL, err, errlen) != 0)
    return -1;
  int rc = -1;
  char **tr = NULL, **va = NULL;
  int ntr = list_ids(dir, "training", &tr, err, errlen);
  int nva = ntr < 0 ? -1 : list_ids(dir, "validation", &va, err, errlen);
  if (ntr < 0 || nva < 0) goto out;
  if (ntr != p.n_train || nva != p.n_val) {
    snprintf(err, errlen, "dataset %s holds %d training / %d validation volumes, the configuration expects %d / %d",
             dir, ntr, nva, p.n_train, p.n_val);
    goto out;
  }
  for (int s = 0; s < 2; s++) {
    char **ids = s ? va : tr;
    for (int i = 0; i < (s ? nva : ntr); i++) {
      char *end;
      long v = strtol(ids[i], &end, 10);
      if (*end || v < 0 || v >= p.num_volumes || p.is_val[v] != s) {
        snprintf(err, errlen, "dataset %s: volumes/%s/%s%s.npy does not belong to that split of this configuration",
                 dir, s ? "validation" : "training", ids[i], SF_SHARD_SUFFIX);
        goto out;
      }
    }
  }
  out->dir = sf_strdup(dir);
  sf_dataset_config_id(c, out->config_id);
  out->grid = sf_dataset_grid(c);
  out->n_categories = p.n_categories;
  out->n_classes = p.n_categories + 1;
  out->n_train = ntr;
  out->n_val = nva;
  out->train_ids = tr;
  out->val_ids = va;
  tr = va = NULL;
  out->colours = sf_malloc((size_t)p.n_categories * 3 * sizeof *out->colours, "colours");
  memcpy(out->colours, p.colours, (size_t)p.n_categories * 3 * sizeof *out->colours);
  rc = 0;
out:
  if (tr) free_ids(tr, ntr);
  if (va) free_ids(va, nva);
  sf_volume_plan_free(&p);
  return rc;
}

static const char *sample_id(const sf_dataset *d, sf_split s, int i)
{
  int n = s == SF_SPLIT_VAL ? d->n_val : d->n_train;
  if (i < 0 || i >= n) return NULL;
  return s == SF_SPLIT_VAL ? d->val_ids[i] : d->train_ids[i];
}

static char *sample_path(const sf_dataset *d, sf_split s, int i, int mask)
{
  const char *id = sample_id(d, s, i);
  if (!id) return NULL;
  size_t n = strlen(d->dir) + strlen(id) + 64;
  char *p = sf_malloc(n, "path");
  snprintf(p, n, "%s/%s/%s/%s%s%s.npy", d->dir, mask ? "masks" : "volumes", s == SF_SPLIT_VAL ? "validation" : "training",
           id, SF_SHARD_SUFFIX, mask ? "_mask" : "");
  return p;
}

char *sf_dataset_volume_path(const sf_dataset *d, sf_split s, int i) { return sample_path(d, s, i, 0); }
char *sf_dataset_mask_path(const sf_dataset *d, sf_split s, int i) { return sample_path(d, s, i, 1); }

void sf_dataset_free(sf_dataset *d)
{
  if (d->train_ids) free_ids(d->train_ids, d->n_train);
  if (d->val_ids) free_ids(d->val_ids, d->n_val);
  free(d->colours);
  free(d->dir);
  memset(d, 0, sizeof *d);
}
