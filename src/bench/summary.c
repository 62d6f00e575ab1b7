/* Steps A-B of the report (spec milabench.md §4-5): collect result files, keep those with a job
 * id that are not sub-jobs, group them (name, or name.<device_count> for progression runs), and
 * compute per-group statistics: n, failures, program time, steady rates (pooled flat over repeats
 * and devices; a run with too few slices for one is counted apart, never as a failure), per-device
 * pools, peak memory, the commits measured. Also the summary JSON that `scaffold summary` writes and
 * `report`/`--compare` read back. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"

/* ---- whole numbers from JSON ------------------------------------------------------------------ */

/* The largest count or device index read from a result or summary file: every whole number up to
 * it is exact in a double (so a summary reads back to the same value) and fits a long. A number
 * outside [0, SF_JSON_MAX_COUNT] or with a fraction is refused before any cast (casting an
 * out-of-range double to an integer is undefined behaviour). */
#define SF_JSON_MAX_COUNT 9007199254740992.0 /* 2^53 */

/* 1 and *v when j is a JSON number that is a whole number in [0, SF_JSON_MAX_COUNT], else 0. */
static int json_count(const cJSON *j, long *v)
{
  if (!cJSON_IsNumber(j)) return 0;
  double x = j->valuedouble;
  if (!(x >= 0 && x <= SF_JSON_MAX_COUNT) || x != floor(x)) return 0;
  *v = (long)x;
  return 1;
}

/* The message for a field that json_count refused, into buf. */
static const char *bad_count(char *buf, size_t n, const char *field, const cJSON *j)
{
  snprintf(buf, n, "\"%s\" is %.15g, expected a whole number from 0 to %.0f", field, j->valuedouble,
           SF_JSON_MAX_COUNT);
  return buf;
}

/* ---- statistics --------------------------------------------------------------------------- */

void sf_stats_compute(sf_stats *s, const double *x, size_t n)
{
  s->n = (double)n;
  if (n == 0) {
    s->min = s->max = s->mean = s->std = NAN;
    return;
  }
  double sum = 0, mn = x[0], mx = x[0];
  int nan = 0;
  for (size_t i = 0; i < n; i++) {
    sum += x[i];
    if (isnan(x[i])) nan = 1;
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
  }
  double mean = sum / (double)n, ss = 0;
  for (size_t i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
  s->mean = mean;
  s->std = sqrt(ss / (double)n); /* population std (ddof = 0), as numpy's default */
  s->min = nan ? NAN : mn;
  s->max = nan ? NAN : mx;
}

/* ---- growable arrays ---------------------------------------------------------------------- */

typedef struct {
  double *v;
  size_t n, cap;
} dvec;

static void dpush(dvec *a, double x)
{
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 16;
    double *nv = sf_malloc(a->cap * sizeof *nv, "values");
    if (a->n) memcpy(nv, a->v, a->n * sizeof *nv);
    free(a->v);
    a->v = nv;
  }
  a->v[a->n++] = x;
}

/* ---- collecting files ---------------------------------------------------------------------- */

typedef struct {
  char **v;
  size_t n, cap;
} svec;

static void spush(svec *a, char *s)
{
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 64;
    char **nv = sf_malloc(a->cap * sizeof *nv, "paths");
    if (a->n) memcpy(nv, a->v, a->n * sizeof *nv);
    free(a->v);
    a->v = nv;
  }
  a->v[a->n++] = s;
}

static int walk(const char *dir, svec *out, FILE *diag)
{
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(diag, "scaffold: error: cannot read the results directory %s: %s\n", dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (!strncmp(e->d_name, ".tmp-", 5)) continue; /* an atomic write in progress */
    size_t n = strlen(dir) + strlen(e->d_name) + 2;
    char *p = sf_malloc(n, "path");
    snprintf(p, n, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(p, &st) != 0) {
      free(p);
      continue;
    }
    size_t ln = strlen(e->d_name);
    if (S_ISDIR(st.st_mode)) {
      walk(p, out, diag);
      free(p);
    } else if (S_ISREG(st.st_mode) && ln > 5 && !strcmp(e->d_name + ln - 5, ".json")) {
      spush(out, p);
    } else {
      free(p);
    }
  }
  closedir(d);
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char *sf_result_group_key(const cJSON *r)
{
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(r, "name");
  const char *nm = cJSON_IsString(name) ? name->valuestring : "?";
  const cJSON *job = cJSON_GetObjectItemCaseSensitive(r, "job");
  const cJSON *ps = job ? cJSON_GetObjectItemCaseSensitive(job, "partition_scheme") : NULL;
  const cJSON *type = ps ? cJSON_GetObjectItemCaseSensitive(ps, "type") : NULL;
  if (cJSON_IsString(type) &&
      (!strcmp(type->valuestring, "progression") || !strcmp(type->valuestring, "gpu-progression"))) {
    const cJSON *dc = cJSON_GetObjectItemCaseSensitive(r, "device_count");
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(r, "devices");
    /* A device_count that is not a whole number >= 0 counts as absent (sf_summary_from_dir skips
     * such files with a warning before they get here). */
    long count;
    if (!json_count(dc, &count)) count = cJSON_IsArray(devs) ? cJSON_GetArraySize(devs) : 1;
    size_t n = strlen(nm) + 24;
    char *k = sf_malloc(n, "group key");
    snprintf(k, n, "%s.%ld", nm, count);
    return k;
  }
  return sf_strdup(nm);
}

typedef struct {
  char *key;
  cJSON *res;
  size_t order;
} entry;

static int cmp_entry(const void *a, const void *b)
{
  const entry *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x->order < y->order ? -1 : x->order > y->order);
}

static const double *rates_of(const cJSON *timing, const char *field, dvec *tmp)
{
  tmp->n = 0;
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(timing, field);
  const cJSON *x;
  cJSON_ArrayForEach(x, a) dpush(tmp, sf_json_num(x));
  return tmp->v;
}

static int good_result(const cJSON *r)
{
  if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "success"))) return 0;
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "metrics"), *x;
  /* A NaN metric is written as null (JSON has no NaN); both count as a failure. */
  cJSON_ArrayForEach(x, m) if (cJSON_IsNull(x) || (cJSON_IsNumber(x) && isnan(x->valuedouble))) return 0;
  return 1;
}

typedef struct {
  long dev;
  double v;
} devval;

static int cmp_devval(const void *a, const void *b)
{
  const devval *x = a, *y = b;
  return x->dev < y->dev ? -1 : x->dev > y->dev;
}

static void summarize_group(sf_group *g, entry *es, size_t n)
{
  memset(g, 0, sizeof *g);
  g->name = sf_strdup(es[0].key);
  g->n = (long)n;
  dvec total = {0}, rates = {0}, gflops = {0}, tts = {0}, tmp = {0}, bound = {0};
  devval *dv = NULL;
  size_t ndv = 0, capdv = 0;
  cJSON *gran = NULL; /* the good runs' granularity records */
  for (size_t i = 0; i < n; i++) {
    const cJSON *r = es[i].res;
    if (!good_result(r)) {
      g->failures++;
      continue;
    }
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(r, "granularity");
    if (cJSON_IsObject(gr)) cJSON_AddItemToArray(gran ? gran : (gran = cJSON_CreateArray()), cJSON_Duplicate(gr, 1));
    const cJSON *timings = cJSON_GetObjectItemCaseSensitive(r, "timings");
    const cJSON *prog = cJSON_GetObjectItemCaseSensitive(timings, "program");
    dpush(&total, sf_json_num(cJSON_GetObjectItemCaseSensitive(prog, "time")));
    double rss = sf_json_num(cJSON_GetObjectItemCaseSensitive(r, "peak_rss_mib"));
    if (rss > g->peak_memory) g->peak_memory = rss;
    double br = sf_json_num(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "bound"),
                                                              "samples_per_s"));
    if (isfinite(br) && br > 0) dpush(&bound, br);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "time_to_solution");
    if (cJSON_IsNumber(t)) dpush(&tts, t->valuedouble);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(r, "device");
    const cJSON *tm;
    cJSON_ArrayForEach(tm, timings)
    {
      if (!tm->string || strncmp(tm->string, "train", 5) != 0) continue;
      const double *rv = rates_of(tm, "rates", &tmp);
      if (tmp.n < SF_STEADY_MIN_SLICES) { /* ran, but too short for a steady rate: not a failure */
        g->short_runs++;
        if ((long)tmp.n > g->short_slices) g->short_slices = (long)tmp.n;
        continue;
      }
      double steady = sf_steady(rv, tmp.n);
      dpush(&rates, steady);
      rv = rates_of(tm, "gflops_rates", &tmp);
      dpush(&gflops, sf_steady(rv, tmp.n));
      long dev_id;
      if (json_count(dev, &dev_id)) { /* a bad "device" was refused by sf_summary_from_dir */
        if (ndv == capdv) {
          capdv = capdv ? 2 * capdv : 16;
          devval *nd = sf_malloc(capdv * sizeof *nd, "per-device values");
          if (ndv) memcpy(nd, dv, ndv * sizeof *nd);
          free(dv);
          dv = nd;
        }
        dv[ndv].dev = dev_id;
        dv[ndv++].v = steady;
      }
    }
  }
  sf_stats_compute(&g->total, total.v, total.n);
  sf_stats_compute(&g->train, rates.v, rates.n);
  sf_stats_compute(&g->gflops, gflops.v, gflops.n);
  sf_stats_compute(&g->tts, tts.v, tts.n);
  sf_stats_compute(&g->bound_rate, bound.v, bound.n);
  if (gran) g->granularity = sf_granularity_pool(gran);
  if (ndv) {
    qsort(dv, ndv, sizeof *dv, cmp_devval);
    g->dev_ids = sf_malloc(ndv * sizeof *g->dev_ids, "device ids");
    g->per_device = sf_malloc(ndv * sizeof *g->per_device, "per-device stats");
    dvec pool = {0};
    for (size_t i = 0; i < ndv;) {
      size_t j = i;
      pool.n = 0;
      while (j < ndv && dv[j].dev == dv[i].dev) dpush(&pool, dv[j++].v);
      g->dev_ids[g->ndev] = dv[i].dev;
      sf_stats_compute(&g->per_device[g->ndev++], pool.v, pool.n);
      i = j;
    }
    free(pool.v);
  }
  free(dv);
  free(total.v);
  free(rates.v);
  free(gflops.v);
  free(tts.v);
  free(bound.v);
  free(tmp.v);
}

/* The machine a result ran on: its "machine" object plus hostname, blas_core and cpu_kernels. */
static cJSON *machine_record(const cJSON *r)
{
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "machine");
  if (!cJSON_IsObject(m)) return NULL;
  cJSON *o = cJSON_Duplicate(m, 1);
  const char *extra[] = {"hostname", "blas_core", "cpu_kernels"};
  for (int i = 0; i < 3; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(r, extra[i]);
    if (cJSON_IsString(x) && !cJSON_HasObjectItem(o, extra[i])) cJSON_AddStringToObject(o, extra[i], x->valuestring);
  }
  return o;
}

/* Adds a result's "commit" (a short string) to s->commits, kept sorted and distinct. */
static void add_commit(sf_summary *s, const cJSON *c)
{
  if (!cJSON_IsString(c) || !c->valuestring[0] || strlen(c->valuestring) > 64) return;
  if (!strcmp(c->valuestring, "no-commit-id")) return; /* built outside a git checkout: not recorded */
  if (!s->commits) s->commits = cJSON_CreateArray();
  int at = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, s->commits)
  {
    int cmp = strcmp(x->valuestring, c->valuestring);
    if (cmp == 0) return;
    if (cmp > 0) break;
    at++;
  }
  cJSON_InsertItemInArray(s->commits, at, cJSON_CreateString(c->valuestring));
}

/* Keeps the first "kernel_identity" seen: a short string of family=hash words */
static void add_identity(sf_summary *s, const cJSON *k)
{
  if (!s->kernel_identity && cJSON_IsString(k) && k->valuestring[0] && strlen(k->valuestring) < 2048)
    s->kernel_identity = sf_strdup(k->valuestring);
}

long sf_summary_from_dir(sf_summary *s, const char *dir, FILE *diag)
{
  memset(s, 0, sizeof *s);
  svec files = {0};
  if (walk(dir, &files, diag) != 0) return -1;
  if (files.n) qsort(files.v, files.n, sizeof *files.v, cmp_str);
  entry *es = sf_calloc(files.n + 1, sizeof *es, "results");
  size_t ne = 0, no_job = 0;
  for (size_t i = 0; i < files.n; i++) {
    char *err = NULL;
    cJSON *j = sf_json_load(files.v[i], &err);
    if (!j) {
      fprintf(diag, "scaffold: warning: skipping %s: %s\n", files.v[i], err);
      free(err);
      continue;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    if (!cJSON_IsObject(j) || !cJSON_IsString(name) || !cJSON_HasObjectItem(j, "success")) {
      fprintf(diag, "scaffold: warning: skipping %s: not a result file (no \"name\"/\"success\" fields)\n",
              files.v[i]);
      cJSON_Delete(j);
      continue;
    }
    const char *fields[] = {"device", "device_count"};
    const char *bad = NULL;
    char why[160];
    for (int f = 0; f < 2 && !bad; f++) {
      const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, fields[f]);
      long v;
      if (cJSON_IsNumber(x) && !json_count(x, &v)) bad = bad_count(why, sizeof why, fields[f], x);
    }
    if (bad) {
      fprintf(diag, "scaffold: warning: skipping %s: %s\n", files.v[i], bad);
      cJSON_Delete(j);
      continue;
    }
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(j, "job_id");
    if (!cJSON_IsString(jid) || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "sub_job"))) {
      no_job++;
      cJSON_Delete(j);
      continue;
    }
    if (!s->machine && good_result(j)) s->machine = machine_record(j);
    add_commit(s, cJSON_GetObjectItemCaseSensitive(j, "commit"));
    add_identity(s, cJSON_GetObjectItemCaseSensitive(j, "kernel_identity"));
    es[ne].key = sf_result_group_key(j);
    es[ne].res = j;
    es[ne].order = ne;
    ne++;
  }
  if (no_job)
    fprintf(diag, "scaffold: note: %zu result(s) without a job id (reruns) or from sub-jobs were left out\n",
            no_job);
  if (ne) qsort(es, ne, sizeof *es, cmp_entry);
  s->g = sf_calloc(ne + 1, sizeof *s->g, "groups");
  for (size_t i = 0; i < ne;) {
    size_t j = i;
    while (j < ne && !strcmp(es[j].key, es[i].key)) j++;
    summarize_group(&s->g[s->n++], es + i, j - i);
    i = j;
  }
  for (size_t i = 0; i < ne; i++) {
    free(es[i].key);
    cJSON_Delete(es[i].res);
  }
  free(es);
  for (size_t i = 0; i < files.n; i++) free(files.v[i]);
  free(files.v);
  return (long)ne;
}

/* ---- summary JSON ---------------------------------------------------------------------------- */

static cJSON *stats_json(const sf_stats *st)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "n", st->n);
  cJSON_AddNumberToObject(j, "min", st->min);
  cJSON_AddNumberToObject(j, "max", st->max);
  cJSON_AddNumberToObject(j, "mean", st->mean);
  cJSON_AddNumberToObject(j, "std", st->std);
  return j;
}

cJSON *sf_summary_to_json(const sf_summary *s)
{
  cJSON *j = cJSON_CreateObject();
  for (size_t i = 0; i < s->n; i++) {
    const sf_group *g = &s->g[i];
    cJSON *o = cJSON_AddObjectToObject(j, g->name);
    cJSON_AddNumberToObject(o, "n", (double)g->n);
    cJSON_AddNumberToObject(o, "failures", (double)g->failures);
    cJSON_AddItemToObject(o, "total", stats_json(&g->total));
    cJSON_AddItemToObject(o, "train", stats_json(&g->train));
    cJSON_AddItemToObject(o, "gflops", stats_json(&g->gflops));
    cJSON *pd = cJSON_AddObjectToObject(o, "per_device");
    for (size_t d = 0; d < g->ndev; d++) {
      char key[32];
      snprintf(key, sizeof key, "%ld", g->dev_ids[d]);
      cJSON_AddItemToObject(pd, key, stats_json(&g->per_device[d]));
    }
    cJSON_AddNumberToObject(o, "peak_memory", g->peak_memory);
    if (g->tts.n > 0) cJSON_AddItemToObject(o, "time_to_solution", stats_json(&g->tts));
    if (g->bound_rate.n > 0) cJSON_AddItemToObject(o, "bound_rate", stats_json(&g->bound_rate));
    if (g->granularity) cJSON_AddItemToObject(o, "granularity", cJSON_Duplicate(g->granularity, 1));
    if (g->short_runs > 0) { /* train.mean is null (or pools only the other runs): say why */
      cJSON *tf = cJSON_AddObjectToObject(o, "too_few_samples");
      cJSON_AddNumberToObject(tf, "runs", (double)g->short_runs);
      cJSON_AddNumberToObject(tf, "slices", (double)g->short_slices);
      cJSON_AddNumberToObject(tf, "needed", SF_STEADY_MIN_SLICES);
      char why[64], note[384];
      sf_group_too_few(g, why, sizeof why);
      if (sf_group_unmeasured(g))
        snprintf(note, sizeof note, "%s: %s", why, SF_TOO_FEW_FIX);
      else
        snprintf(note, sizeof note, "%ld run(s) with %s left out of perf: %s", g->short_runs, why, SF_TOO_FEW_FIX);
      cJSON_AddStringToObject(o, "perf_note", note);
    }
  }
  if (s->machine) cJSON_AddItemToObject(j, "_machine", cJSON_Duplicate(s->machine, 1));
  if (s->commits) cJSON_AddItemToObject(j, "_commits", cJSON_Duplicate(s->commits, 1));
  if (s->kernel_identity) cJSON_AddStringToObject(j, "_kernel_identity", s->kernel_identity);
  return j;
}

static void stats_from(sf_stats *st, const cJSON *j)
{
  st->n = sf_json_num(cJSON_GetObjectItemCaseSensitive(j, "n"));
  if (isnan(st->n)) st->n = 0;
  st->min = sf_json_num(cJSON_GetObjectItemCaseSensitive(j, "min"));
  st->max = sf_json_num(cJSON_GetObjectItemCaseSensitive(j, "max"));
  st->mean = sf_json_num(cJSON_GetObjectItemCaseSensitive(j, "mean"));
  st->std = sf_json_num(cJSON_GetObjectItemCaseSensitive(j, "std"));
}

static int cmp_group(const void *a, const void *b)
{
  return strcmp(((const sf_group *)a)->name, ((const sf_group *)b)->name);
}

int sf_summary_from_json(sf_summary *s, const cJSON *j, char **err)
{
  memset(s, 0, sizeof *s);
  *err = NULL;
  if (!cJSON_IsObject(j)) {
    *err = sf_strdup("expected an object mapping group name -> {n, failures, train, ...}");
    return -1;
  }
  s->g = sf_calloc((size_t)cJSON_GetArraySize(j) + 1, sizeof *s->g, "groups");
  const cJSON *o;
  cJSON_ArrayForEach(o, j)
  {
    if (o->string && !strcmp(o->string, "_machine")) { /* not a group: the machine record */
      if (cJSON_IsObject(o) && !s->machine) s->machine = cJSON_Duplicate(o, 1);
      continue;
    }
    if (o->string && !strcmp(o->string, "_kernel_identity")) { /* not a group: the kernels measured */
      add_identity(s, o);
      continue;
    }
    if (o->string && !strcmp(o->string, "_commits")) { /* not a group: the commits measured */
      const cJSON *c;
      cJSON_ArrayForEach(c, o) add_commit(s, c);
      continue;
    }
    if (!cJSON_IsObject(o) || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "n")) ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "train"))) {
      char buf[512];
      snprintf(buf, sizeof buf, "group '%s': expected an object with \"n\" and \"train\" (is this a summary file?)",
               o->string ? o->string : "?");
      *err = sf_strdup(buf);
      sf_summary_free(s);
      return -1;
    }
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(o, "n");
    const cJSON *jf = cJSON_GetObjectItemCaseSensitive(o, "failures");
    long n = 0, failures = 0;
    const char *bad = NULL;
    char why[160];
    if (!json_count(jn, &n)) bad = bad_count(why, sizeof why, "n", jn);
    else if (cJSON_IsNumber(jf) && !json_count(jf, &failures)) bad = bad_count(why, sizeof why, "failures", jf);
    if (bad) {
      char buf[512];
      snprintf(buf, sizeof buf, "group '%s': %s", o->string ? o->string : "?", bad);
      *err = sf_strdup(buf);
      sf_summary_free(s);
      return -1;
    }
    sf_group *g = &s->g[s->n++];
    g->name = sf_strdup(o->string);
    g->n = n;
    g->failures = failures; /* absent (or not a number): none */
    stats_from(&g->total, cJSON_GetObjectItemCaseSensitive(o, "total"));
    stats_from(&g->train, cJSON_GetObjectItemCaseSensitive(o, "train"));
    stats_from(&g->gflops, cJSON_GetObjectItemCaseSensitive(o, "gflops"));
    stats_from(&g->tts, cJSON_GetObjectItemCaseSensitive(o, "time_to_solution"));
    stats_from(&g->bound_rate, cJSON_GetObjectItemCaseSensitive(o, "bound_rate"));
    g->granularity = sf_granularity_check(cJSON_GetObjectItemCaseSensitive(o, "granularity"));
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(o, "too_few_samples");
    long sr = 0, ss = 0;
    if (json_count(cJSON_GetObjectItemCaseSensitive(tf, "runs"), &sr) &&
        json_count(cJSON_GetObjectItemCaseSensitive(tf, "slices"), &ss)) {
      g->short_runs = sr;
      g->short_slices = ss;
    }
    double pm = sf_json_num(cJSON_GetObjectItemCaseSensitive(o, "peak_memory"));
    g->peak_memory = isnan(pm) ? 0 : pm;
    const cJSON *pd = cJSON_GetObjectItemCaseSensitive(o, "per_device");
    if (!pd) pd = cJSON_GetObjectItemCaseSensitive(o, "pergpu"); /* milarun's name */
    size_t nd = (size_t)cJSON_GetArraySize(pd);
    if (nd) {
      devval *order = sf_malloc(nd * sizeof *order, "devices");
      const cJSON *x;
      size_t k = 0;
      cJSON_ArrayForEach(x, pd) order[k].dev = strtol(x->string ? x->string : "0", NULL, 10), order[k].v = (double)k, k++;
      qsort(order, nd, sizeof *order, cmp_devval);
      g->dev_ids = sf_malloc(nd * sizeof *g->dev_ids, "device ids");
      g->per_device = sf_malloc(nd * sizeof *g->per_device, "per-device stats");
      for (size_t d = 0; d < nd; d++) {
        g->dev_ids[d] = order[d].dev;
        stats_from(&g->per_device[d], cJSON_GetArrayItem(pd, (int)order[d].v));
      }
      g->ndev = nd;
      free(order);
    }
  }
  if (s->n) qsort(s->g, s->n, sizeof *s->g, cmp_group);
  return 0;
}

long sf_summary_load(sf_summary *s, const char *path, FILE *diag)
{
  struct stat st;
  memset(s, 0, sizeof *s);
  if (stat(path, &st) != 0) {
    fprintf(diag, "scaffold: error: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    long n = sf_summary_from_dir(s, path, diag);
    return n < 0 ? -1 : (long)s->n;
  }
  char *err = NULL;
  cJSON *j = sf_json_load(path, &err);
  if (!j) {
    fprintf(diag, "scaffold: error: %s: %s\n", path, err);
    free(err);
    return -1;
  }
  int rc = sf_summary_from_json(s, j, &err);
  cJSON_Delete(j);
  if (rc != 0) {
    fprintf(diag, "scaffold: error: %s: %s\n", path, err);
    free(err);
    return -1;
  }
  return (long)s->n;
}

const char *sf_group_too_few(const sf_group *g, char *buf, size_t n)
{
  if (!g || g->short_runs <= 0) snprintf(buf, n, "%s", "");
  else snprintf(buf, n, "too few samples (%ld < %d)", g->short_slices, SF_STEADY_MIN_SLICES);
  return buf;
}

int sf_group_unmeasured(const sf_group *g)
{
  return g && g->short_runs > 0 && !(g->train.n > 0);
}

const sf_group *sf_summary_find(const sf_summary *s, const char *name)
{
  if (!s) return NULL;
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->g[i].name, name)) return &s->g[i];
  return NULL;
}

void sf_summary_free(sf_summary *s)
{
  for (size_t i = 0; i < s->n; i++) {
    free(s->g[i].name);
    free(s->g[i].dev_ids);
    free(s->g[i].per_device);
    cJSON_Delete(s->g[i].granularity);
  }
  free(s->g);
  cJSON_Delete(s->machine);
  cJSON_Delete(s->commits);
  free(s->kernel_identity);
  memset(s, 0, sizeof *s);
}
