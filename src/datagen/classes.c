/* Fractal classes as data (spec §2.1, §2.2, §2.5): the candidate parameter stream, the round-size
 * rule, the NNNNNN.csv file format (np.savetxt '%.18e', 2 lines x 13 values) and the sorted
 * class listing that defines category indices. The search itself is in class_search.c. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/rng.h"

#include "flush.h"

/* Domain tags keep the three stream families apart ("SFCLSPAR", "SFCLSPTS"). */
#define SF_STREAM_CLASS_PARAMS 0x5346434c53504152ULL
#define SF_STREAM_CLASS_POINTS 0x5346434c53505453ULL

uint64_t sf_class_param_stream(uint64_t attempt) { return sf_rng_mix(SF_STREAM_CLASS_PARAMS, attempt); }
uint64_t sf_class_point_stream(uint64_t attempt) { return sf_rng_mix(SF_STREAM_CLASS_POINTS, attempt); }

void sf_class_candidate(uint64_t seed, uint64_t attempt, sf_fractal_class *out)
{
  sf_rng r;
  sf_rng_seed(&r, seed, sf_class_param_stream(attempt));
  for (int t = 0; t < 2; t++)
    for (int k = 0; k < SF_IFS_NCOLS; k++) out->p[t][k] = sf_rng_uniform_range(&r, -1.0, 1.0);
  sf_ifs_set_probabilities(out->p);
}

long sf_compute_round_attempts(long batch_size, long remaining, long accepted, long attempts, int nranks)
{
  if (batch_size < 1) batch_size = 1;
  if (nranks < 1) nranks = 1;
  if (accepted <= 0 || attempts <= 0) return batch_size;
  double rate = (double)accepted / (double)attempts;
  double total = ceil(1.1 * (double)remaining / rate);
  long per_rank = (long)ceil(total / (double)nranks);
  if (per_rank < 1) per_rank = 1;
  return per_rank < batch_size ? per_rank : batch_size;
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int sf_fractal_class_save_flags(const char *path, const sf_fractal_class *cls, unsigned flags, char *err, size_t errlen)
{
  char buf[2 * SF_IFS_NCOLS * 40];
  size_t k = 0;
  for (int t = 0; t < 2; t++)
    for (int j = 0; j < SF_IFS_NCOLS; j++)
      k += (size_t)snprintf(buf + k, sizeof buf - k, "%.18e%c", cls->p[t][j], j + 1 < SF_IFS_NCOLS ? ',' : '\n');
  int rc = flags & SF_CLASS_NO_FSYNC ? sf_datagen_write_nosync(path, buf, k) : sf_write_file_atomic(path, buf, k);
  if (rc != 0) return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
  return 0;
}

int sf_fractal_class_save(const char *path, const sf_fractal_class *cls, char *err, size_t errlen)
{
  return sf_fractal_class_save_flags(path, cls, 0, err, errlen);
}

int sf_fractal_class_load(const char *path, sf_fractal_class *out, char *err, size_t errlen)
{
  size_t len;
  char *text = sf_read_file(path, &len);
  if (!text) return fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
  int row = 0, rc = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *p = line;
    while (isspace((unsigned char)*p)) p++;
    if (!*p) continue; /* blank line */
    if (row >= 2) {
      rc = fail(err, errlen, "%s: more than 2 rows (expected 2 lines of 13 comma-separated values)", path);
      break;
    }
    for (int j = 0; j < SF_IFS_NCOLS; j++) {
      char *end;
      errno = 0;
      double v = strtod(p, &end);
      if (end == p || errno == ERANGE) {
        rc = fail(err, errlen, "%s: row %d column %d: '%.20s' is not a number", path, row + 1, j + 1, p);
        break;
      }
      out->p[row][j] = v;
      p = end;
      while (*p == ' ' || *p == '\t' || *p == '\r') p++;
      if (j + 1 < SF_IFS_NCOLS) {
        if (*p != ',') {
          rc = fail(err, errlen, "%s: row %d has %d values (expected 13)", path, row + 1, j + 1);
          break;
        }
        p++;
      } else if (*p) {
        rc = fail(err, errlen, "%s: row %d has more than 13 values", path, row + 1);
      }
    }
    if (rc) break;
    row++;
  }
  free(text);
  if (!rc && row != 2) rc = fail(err, errlen, "%s: %d rows (expected 2 lines of 13 comma-separated values)", path, row);
  return rc;
}

static int is_class_name(const char *s)
{
  for (int i = 0; i < 6; i++)
    if (!isdigit((unsigned char)s[i])) return 0;
  return !strcmp(s + 6, ".csv");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int sf_fractal_list_class_files(const char *param_dir, char ***names)
{
  *names = NULL;
  DIR *d = opendir(param_dir);
  if (!d) return 0;
  int n = 0, cap = 0;
  char **v = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!is_class_name(e->d_name)) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      char **nv = realloc(v, (size_t)cap * sizeof *v);
      if (!nv) sf_die(SF_EXIT_FAILURE, "out of memory listing %s", param_dir);
      v = nv;
    }
    v[n++] = sf_strdup(e->d_name);
  }
  closedir(d);
  if (n) qsort(v, (size_t)n, sizeof *v, cmp_str);
  *names = v;
  return n;
}

void sf_free_names(char **names, int n)
{
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
}

sf_fractal_class *sf_fractal_load_classes(const sf_config *c)
{
  char *dir = sf_fractal_param_dir(c);
  char **names;
  int n = sf_fractal_list_class_files(dir, &names);
  if (n < c->n_categories)
    sf_die(SF_EXIT_FAILURE, "%s holds %d fractal classes but n_categories is %ld; run `scaffold generate_fractals` first",
           dir, n, c->n_categories);
  sf_fractal_class *cls = sf_calloc((size_t)c->n_categories, sizeof *cls, "fractal classes");
  for (long i = 0; i < c->n_categories; i++) {
    char *path = sf_path_join(dir, names[i]);
    char err[512];
    if (sf_fractal_class_load(path, &cls[i], err, sizeof err) != 0) sf_die(SF_EXIT_FAILURE, "%s", err);
    free(path);
  }
  sf_free_names(names, n);
  free(dir);
  return cls;
}
