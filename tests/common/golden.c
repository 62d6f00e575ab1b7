/* Implementation of tests/common/golden.h: loads a whole golden file and indexes its tensors. */
#include "golden.h"

#include "scaffold/model.h"
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"

#define HINT "---> HINT: re-run `/usr/bin/python3 scripts/make_golden.py` from the source directory\n"

__attribute__((noreturn, format(printf, 2, 3))) static void golden_fail(const char *path, const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "golden file %s: ", path ? path : "?");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n" HINT);
  exit(1);
}

char *sf_golden_path(const char *file)
{
  const char *src = getenv("SF_SOURCE_DIR");
#ifdef SF_SOURCE_DIR
  if (!src || !*src) src = SF_SOURCE_DIR;
#endif
  if (!src || !*src) src = ".";
  char *dir = sf_path_join(src, "tests/golden");
  char *p = sf_path_join(dir, file);
  free(dir);
  return p;
}

typedef struct {
  const unsigned char *p;
  size_t len, off;
  const char *path;
} reader;

static void take(reader *r, void *dst, size_t n, const char *what)
{
  if (r->len - r->off < n)
    golden_fail(r->path, "truncated while reading %s at byte %zu (need %zu bytes, %zu left)", what, r->off, n,
                r->len - r->off);
  memcpy(dst, r->p + r->off, n);
  r->off += n;
}

static size_t dtype_size(int dtype) { return dtype == SF_GOLDEN_F64 ? 8 : 4; }

sf_golden *sf_golden_load(const char *path)
{
  size_t len = 0;
  unsigned char *buf = (unsigned char *)sf_read_file(path, &len);
  if (!buf) golden_fail(path, "cannot be read (%s)", strerror(errno));
  reader r = {buf, len, 0, path};
  char magic[8];
  uint32_t version, count;
  take(&r, magic, 8, "the magic");
  if (memcmp(magic, SF_GOLDEN_MAGIC, 8) != 0) golden_fail(path, "bad magic: expected \"" SF_GOLDEN_MAGIC "\"");
  take(&r, &version, 4, "the version");
  if (version != SF_GOLDEN_VERSION)
    golden_fail(path, "version %u, this reader expects version %d", version, SF_GOLDEN_VERSION);
  take(&r, &count, 4, "the tensor count");
  if (count > 100000) golden_fail(path, "implausible tensor count %u", count);

  sf_golden *g = sf_calloc(1, sizeof *g, "golden file");
  g->path = sf_strdup(path);
  g->count = (int)count;
  g->t = sf_calloc(count, sizeof *g->t, "golden tensors");
  for (uint32_t i = 0; i < count; i++) {
    sf_golden_tensor *t = &g->t[i];
    uint32_t nlen, dtype, ndim;
    take(&r, &nlen, 4, "a name length");
    if (nlen == 0 || nlen > 1024) golden_fail(path, "tensor %u: implausible name length %u", i, nlen);
    t->name = sf_malloc(nlen + 1, "golden tensor name");
    take(&r, t->name, nlen, "a name");
    t->name[nlen] = '\0';
    take(&r, &dtype, 4, "a dtype");
    take(&r, &ndim, 4, "a rank");
    if (dtype > SF_GOLDEN_F64) golden_fail(path, "tensor %s: unknown dtype %u", t->name, dtype);
    if (ndim > SF_GOLDEN_MAX_DIMS) golden_fail(path, "tensor %s: rank %u > %d", t->name, ndim, SF_GOLDEN_MAX_DIMS);
    t->dtype = (int)dtype;
    t->ndim = (int)ndim;
    t->numel = 1;
    for (uint32_t d = 0; d < ndim; d++) {
      take(&r, &t->shape[d], 8, "a shape");
      if (t->shape[d] < 0 || t->shape[d] > (1LL << 32)) golden_fail(path, "tensor %s: bad dimension", t->name);
      t->numel *= (size_t)t->shape[d];
    }
    size_t bytes = t->numel * dtype_size(t->dtype);
    t->data = sf_malloc(bytes, "golden tensor data");
    take(&r, t->data, bytes, t->name);
  }
  if (r.off != len) golden_fail(path, "%zu trailing bytes after %u tensors", len - r.off, count);
  free(buf);
  return g;
}

void sf_golden_free(sf_golden *g)
{
  if (!g) return;
  for (int i = 0; i < g->count; i++) {
    free(g->t[i].name);
    free(g->t[i].data);
  }
  free(g->t);
  free(g->path);
  free(g);
}

const sf_golden_tensor *sf_golden_find(const sf_golden *g, const char *name)
{
  for (int i = 0; i < g->count; i++)
    if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
  return NULL;
}

static const sf_golden_tensor *get(const sf_golden *g, const char *name, int dtype)
{
  static const char *names[] = {"float32", "int32", "float64"};
  const sf_golden_tensor *t = sf_golden_find(g, name);
  if (!t) golden_fail(g->path, "has no tensor named \"%s\"", name);
  if (t->dtype != dtype)
    golden_fail(g->path, "tensor %s is %s, expected %s", name, names[t->dtype], names[dtype]);
  return t;
}

const float *sf_golden_f32(const sf_golden *g, const char *name, size_t *numel)
{
  const sf_golden_tensor *t = get(g, name, SF_GOLDEN_F32);
  if (numel) *numel = t->numel;
  return t->data;
}

const int32_t *sf_golden_i32(const sf_golden *g, const char *name, size_t *numel)
{
  const sf_golden_tensor *t = get(g, name, SF_GOLDEN_I32);
  if (numel) *numel = t->numel;
  return t->data;
}

const double *sf_golden_f64(const sf_golden *g, const char *name, size_t *numel)
{
  const sf_golden_tensor *t = get(g, name, SF_GOLDEN_F64);
  if (numel) *numel = t->numel;
  return t->data;
}

int sf_golden_int(const sf_golden *g, const char *name)
{
  const sf_golden_tensor *t = get(g, name, SF_GOLDEN_I32);
  if (t->numel != 1) golden_fail(g->path, "tensor %s has %zu elements, expected a scalar", name, t->numel);
  return ((const int32_t *)t->data)[0];
}

double sf_golden_double(const sf_golden *g, const char *name)
{
  const sf_golden_tensor *t = get(g, name, SF_GOLDEN_F64);
  if (t->numel != 1) golden_fail(g->path, "tensor %s has %zu elements, expected a scalar", name, t->numel);
  return ((const double *)t->data)[0];
}

void sf_golden_expect_shape(const sf_golden *g, const char *name, int ndim, const int64_t *shape)
{
  const sf_golden_tensor *t = sf_golden_find(g, name);
  if (!t) golden_fail(g->path, "has no tensor named \"%s\"", name);
  int ok = t->ndim == ndim;
  for (int d = 0; ok && d < ndim; d++) ok = t->shape[d] == shape[d];
  if (!ok) {
    char want[160] = "", got[160] = "";
    for (int d = 0; d < ndim; d++)
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? "," : "", (long long)shape[d]);
    for (int d = 0; d < t->ndim; d++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "," : "", (long long)t->shape[d]);
    golden_fail(g->path, "tensor %s has shape (%s), expected (%s)", name, got, want);
  }
}

void sf_golden_ncdhw_to_ndhwc(float *dst, const float *src, int C, int D, int H, int W)
{
  size_t n = (size_t)D * H * W;
  for (int c = 0; c < C; c++)
    for (size_t v = 0; v < n; v++) dst[v * C + c] = src[(size_t)c * n + v];
}

void sf_golden_ndhwc_to_ncdhw(float *dst, const float *src, int C, int D, int H, int W)
{
  size_t n = (size_t)D * H * W;
  for (int c = 0; c < C; c++)
    for (size_t v = 0; v < n; v++) dst[(size_t)c * n + v] = src[v * C + c];
}

float *sf_golden_load_arena(const sf_golden *g, const sf_unet *u, const char *prefix)
{
  float *a = calloc(u->total_params, sizeof(float));
  if (!a) {
    fprintf(stderr, "FAIL out of memory for a %zu-parameter arena\n", u->total_params);
    exit(1);
  }
  for (int i = 0; i < u->nparams; i++) {
    const sf_param_desc *p = &u->params[i];
    char key[128];
    snprintf(key, sizeof key, "%s%s", prefix, p->name);
    size_t n = 0;
    const float *t = sf_golden_f32(g, key, &n);
    if (n != p->numel) {
      fprintf(stderr, "FAIL %s has %zu elements, our %s has %zu\n", key, n, p->name, p->numel);
      exit(1);
    }
    sf_param_from_torch(p, a + p->offset, t);
  }
  return a;
}

void sf_golden_check_loss_terms(const char *what, const double *got, const double *want, double rtol)
{
  static const char *names[3] = {"ce", "dice_fg", "loss"};
  for (int i = 0; i < 3; i++) {
    double err = fabs(got[i] - want[i]) / fmax(fabs(want[i]), 1e-3);
    SF_CHECK(err <= rtol, "%s %s: got %.9f want %.9f (relative error %.2e > %.0e)", what, names[i], got[i], want[i],
             err, rtol);
    if (err <= rtol) printf("ok   %s %s: got %.9f want %.9f (relative error %.2e)\n", what, names[i], got[i], want[i], err);
  }
}

size_t sf_golden_mark_ill_conditioned(const sf_unet *u, const float *g, unsigned char *ill)
{
  size_t marked = 0;
  for (int i = 0; i < u->nparams; i++) {
    const sf_param_desc *p = &u->params[i];
    float gmax = 0;
    for (size_t k = p->offset; k < p->offset + p->numel; k++) gmax = fmaxf(gmax, fabsf(g[k]));
    for (size_t k = p->offset; k < p->offset + p->numel; k++) {
      if (fabsf(g[k]) < SF_GOLDEN_G_ABS || fabsf(g[k]) < SF_GOLDEN_G_REL * gmax) ill[k] = 1;
      marked += ill[k] != 0;
    }
  }
  return marked;
}

double sf_golden_check_update(const char *what, const sf_unet *u, const float *p0, const float *got_p,
                              const float *want_p, const unsigned char *ill, double lr, double tol_lr)
{
  double worst = 0;
  size_t checked = 0, excluded = 0;
  const char *worst_name = "-";
  for (int i = 0; i < u->nparams; i++) {
    const sf_param_desc *p = &u->params[i];
    for (size_t k = p->offset; k < p->offset + p->numel; k++) {
      if (ill && ill[k]) {
        excluded++;
        continue;
      }
      checked++;
      double e = fabs(((double)got_p[k] - p0[k]) - ((double)want_p[k] - p0[k])) / lr;
      if (!(e <= worst) && !isnan(worst)) worst = e, worst_name = p->name; /* a NaN stays the worst */
    }
  }
  int ok = worst <= tol_lr;
  SF_CHECK(ok, "%s: worst error %.3e lr (in %s) > %.0e lr", what, worst, worst_name, tol_lr);
  printf("%s %s: worst error %.3e lr over %zu weights (in %s); %zu weights with small |g| not compared "
         "(|g| < %.0e or < %.0e of the tensor's max |g|)\n",
         ok ? "ok  " : "FAIL", what, worst, checked, worst_name, excluded, (double)SF_GOLDEN_G_ABS,
         (double)SF_GOLDEN_G_REL);
  return worst;
}
