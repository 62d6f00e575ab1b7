/* Helper of test_npy_numpy.sh (not a test by itself):
 *   npy_tool write DIR   writes ours_{f32,f64,u16,i64,u8}.npy with known contents
 *   npy_tool check DIR   reads numpy_{f32,f64,u16,i64,u8}.npy (written by np.save) and checks them
 * Contents: element i (C order) of each array is f(i): f32: i*0.25-3, f64: 1/(i+1), u16: i*7 % 65536,
 * i64: i*1e12 - 5 (as int), u8: i*3 % 256. Shapes: f32 (1024,3), f64 (5,), u16 (4,5,6), i64 (), u8 (7,). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/fsutil.h"
#include "scaffold/npy.h"

typedef struct {
  const char *tag;
  sf_npy_dtype dt;
  int ndim;
  size_t shape[3];
} spec;

static const spec specs[] = {
  {"f32", SF_NPY_F32, 2, {1024, 3}}, {"f64", SF_NPY_F64, 1, {5}}, {"u16", SF_NPY_U16, 3, {4, 5, 6}},
  {"i64", SF_NPY_I64, 0, {0}},       {"u8", SF_NPY_U8, 1, {7}},
};

static size_t count_of(const spec *s)
{
  size_t n = 1;
  for (int i = 0; i < s->ndim; i++) n *= s->shape[i];
  return n;
}

static void *make(const spec *s)
{
  size_t n = count_of(s);
  void *v = malloc(n * 8 + 8);
  for (size_t i = 0; i < n; i++) switch (s->dt) {
    case SF_NPY_F32: ((float *)v)[i] = (float)i * 0.25f - 3.0f; break;
    case SF_NPY_F64: ((double *)v)[i] = 1.0 / (double)(i + 1); break;
    case SF_NPY_U16: ((uint16_t *)v)[i] = (uint16_t)(i * 7); break;
    case SF_NPY_I64: ((int64_t *)v)[i] = (int64_t)i * 1000000000000LL - 5; break;
    case SF_NPY_U8: ((uint8_t *)v)[i] = (uint8_t)(i * 3); break;
    }
  return v;
}

static size_t esize(sf_npy_dtype dt) { return dt == SF_NPY_F32 ? 4 : dt == SF_NPY_U16 ? 2 : dt == SF_NPY_U8 ? 1 : 8; }

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: npy_tool write|check DIR\n");
    return 2;
  }
  int bad = 0;
  for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
    const spec *s = &specs[k];
    char name[64], err[512];
    void *want = make(s);
    if (!strcmp(argv[1], "write")) {
      snprintf(name, sizeof name, "ours_%s.npy", s->tag);
      char *p = sf_path_join(argv[2], name);
      if (sf_npy_write(p, s->dt, s->ndim, s->shape, want, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL write %s: %s\n", p, err);
        bad = 1;
      }
      free(p);
    } else {
      snprintf(name, sizeof name, "numpy_%s.npy", s->tag);
      char *p = sf_path_join(argv[2], name);
      sf_npy a;
      if (sf_npy_read(p, &a, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL read %s: %s\n", p, err);
        bad = 1;
      } else {
        int ok = a.dtype == s->dt && a.ndim == s->ndim && a.count == count_of(s);
        for (int i = 0; ok && i < s->ndim; i++) ok = a.shape[i] == s->shape[i];
        if (!ok) {
          fprintf(stderr, "FAIL %s: dtype %d ndim %d count %zu, want dtype %d ndim %d count %zu\n", p, (int)a.dtype,
                  a.ndim, a.count, (int)s->dt, s->ndim, count_of(s));
          bad = 1;
        } else if (memcmp(a.data, want, a.count * esize(s->dt)) != 0) {
          fprintf(stderr, "FAIL %s: values differ from the expected pattern\n", p);
          bad = 1;
        } else {
          printf("ok   read NumPy's %s\n", name);
        }
        free(a.data);
      }
      free(p);
    }
    free(want);
  }
  return bad;
}
