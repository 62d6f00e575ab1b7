/* .npy reader/writer (scaffold/npy.h): round trips for every dtype and for 0-, 1-, 2- and 3-d
 * shapes, header layout (NumPy 1.0 format, 64-byte aligned data, '(5,)' 1-tuples), and detection
 * of truncated, over-long, bad-magic, bad-dtype and Fortran-order files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "testutil.h"

static char *dir;

static char *path_of(const char *name) { return sf_path_join(dir, name); }

/* Header text of a file (between byte 10 and the data); caller frees. */
static char *header_text(const char *path, size_t *data_off)
{
  size_t len;
  char *b = sf_read_file(path, &len);
  if (!b || len < 10) return NULL;
  size_t hl = (unsigned char)b[8] | ((size_t)(unsigned char)b[9] << 8);
  char *h = malloc(hl + 1);
  memcpy(h, b + 10, hl);
  h[hl] = '\0';
  *data_off = 10 + hl;
  free(b);
  return h;
}

static void round_trip(const char *name, sf_npy_dtype dt, size_t es, int ndim, const size_t *shape,
                       const char *want_descr, const char *want_shape)
{
  size_t count = 1;
  for (int i = 0; i < ndim; i++) count *= shape[i];
  unsigned char *data = malloc(count * es + 1);
  for (size_t i = 0; i < count * es; i++) data[i] = (unsigned char)(i * 37 + 11);
  char *p = path_of(name), err[512];
  int rc = sf_npy_write(p, dt, ndim, shape, data, err, sizeof err);
  SF_CHECK(rc == 0, "%s: write failed: %s", name, err);
  SF_CHECK(sf_npy_is_complete(p) == 1, "%s: freshly written file not reported complete", name);
  size_t off = 0;
  char *h = header_text(p, &off);
  SF_CHECK(h != NULL, "%s: cannot read back the header", name);
  if (h) {
    char want[256];
    snprintf(want, sizeof want, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", want_descr, want_shape);
    SF_CHECK(!strncmp(h, want, strlen(want)), "%s: header '%s' does not start with '%s'", name, h, want);
    SF_CHECK(off % 64 == 0, "%s: data offset %zu is not a multiple of 64", name, off);
    SF_CHECK(h[strlen(h) - 1] == '\n', "%s: header does not end with a newline", name);
    free(h);
  }
  sf_npy a;
  rc = sf_npy_read(p, &a, err, sizeof err);
  SF_CHECK(rc == 0, "%s: read failed: %s", name, err);
  if (rc == 0) {
    SF_CHECK(a.dtype == dt, "%s: dtype %d, want %d", name, (int)a.dtype, (int)dt);
    SF_CHECK(a.ndim == ndim, "%s: ndim %d, want %d", name, a.ndim, ndim);
    for (int i = 0; i < ndim && i < a.ndim; i++)
      SF_CHECK(a.shape[i] == shape[i], "%s: shape[%d] %zu, want %zu", name, i, a.shape[i], shape[i]);
    SF_CHECK(a.count == count, "%s: count %zu, want %zu", name, a.count, count);
    SF_CHECK(!memcmp(a.data, data, count * es), "%s: data differs after the round trip", name);
    free(a.data);
  }
  free(data);
  free(p);
}

/* Writes a corrupted copy and checks that reading fails with a message containing `expect`. */
static void expect_rejected(const char *name, const unsigned char *bytes, size_t len, const char *expect)
{
  char *p = path_of(name), err[512] = "";
  SF_CHECK(sf_write_file_atomic(p, bytes, len) == 0, "cannot write %s", p);
  SF_CHECK(sf_npy_is_complete(p) == 0, "%s: corrupt file reported complete", name);
  sf_npy a;
  int rc = sf_npy_read(p, &a, err, sizeof err);
  SF_CHECK(rc != 0, "%s: corrupt file was read", name);
  if (rc == 0) free(a.data);
  SF_CHECK(strstr(err, expect) != NULL, "%s: error '%s' does not mention '%s'", name, err, expect);
  SF_CHECK(strstr(err, name) != NULL, "%s: error '%s' does not name the file", name, err);
  printf("ok   %s rejected: %s\n", name, err);
  free(p);
}

int main(void)
{
  dir = sf_test_tmpdir("npy");
  size_t s2[2] = {1024, 3}, s1[1] = {5}, s3[3] = {4, 5, 6}, s0[1] = {0};
  round_trip("f32.npy", SF_NPY_F32, 4, 2, s2, "<f4", "(1024, 3)");
  round_trip("f64.npy", SF_NPY_F64, 8, 1, s1, "<f8", "(5,)");
  round_trip("u16.npy", SF_NPY_U16, 2, 3, s3, "<u2", "(4, 5, 6)");
  round_trip("i64.npy", SF_NPY_I64, 8, 0, s0, "<i8", "()");
  round_trip("u8.npy", SF_NPY_U8, 1, 1, s1, "|u1", "(5,)");
  round_trip("empty.npy", SF_NPY_F32, 4, 2, (size_t[]){0, 3}, "<f4", "(0, 3)");

  /* the no-fsync variant: same bytes, no temporary file left behind */
  {
    float v[6] = {1, 2, 3, 4, 5, 6};
    size_t sh[2] = {2, 3};
    char *a = path_of("sync.npy"), *b = path_of("nosync.npy"), err[512];
    int r1 = sf_npy_write(a, SF_NPY_F32, 2, sh, v, err, sizeof err);
    int r2 = sf_npy_write_flags(b, SF_NPY_F32, 2, sh, v, SF_NPY_NO_FSYNC, err, sizeof err);
    size_t la, lb;
    char *ba = sf_read_file(a, &la), *bb = sf_read_file(b, &lb);
    SF_CHECK(r1 == 0 && r2 == 0 && ba && bb && la == lb && !memcmp(ba, bb, la),
             "SF_NPY_NO_FSYNC write differs from sf_npy_write (rc %d/%d, %zu/%zu bytes)", r1, r2, la, lb);
    char tmpname[64];
    snprintf(tmpname, sizeof tmpname, ".tmp-nosync.npy-%ld", (long)getpid());
    char *tmp = path_of(tmpname);
    SF_CHECK(!sf_file_exists(tmp), "temporary file %s left behind", tmp);
    free(ba), free(bb), free(a), free(b), free(tmp);
  }

  /* corruptions of a valid file */
  char *p = path_of("f32.npy");
  size_t len;
  unsigned char *b = (unsigned char *)sf_read_file(p, &len);
  free(p);
  SF_CHECK(b != NULL && len == 128 + 1024 * 3 * 4, "f32.npy: size %zu, want %d (128-byte header + data)", len,
           128 + 1024 * 3 * 4);
  if (b) {
    expect_rejected("trunc.npy", b, len - 1, "truncated");
    expect_rejected("trunc_hdr.npy", b, 40, "truncated");
    expect_rejected("tiny.npy", b, 5, "too short");
    unsigned char *c = malloc(len + 8);
    memcpy(c, b, len);
    memset(c + len, 0, 8);
    expect_rejected("long.npy", c, len + 8, "trailing");
    memcpy(c, b, len);
    c[1] = 'X';
    expect_rejected("magic.npy", c, len, "magic");
    memcpy(c, b, len);
    memcpy(strstr((char *)c + 10, "<f4"), "<c8", 3);
    expect_rejected("dtype.npy", c, len, "dtype");
    memcpy(c, b, len);
    memcpy(strstr((char *)c + 10, "False"), "True ", 5);
    expect_rejected("fortran.npy", c, len, "fortran");
    memcpy(c, b, len);
    memcpy(strstr((char *)c + 10, "(1024, 3)"), "(1024, 4)", 9);
    expect_rejected("shape.npy", c, len, "needs");
    memcpy(c, b, len);
    c[6] = 9;
    expect_rejected("version.npy", c, len, "version");
    free(c);
    free(b);
  }
  char *missing = path_of("missing.npy");
  SF_CHECK(sf_npy_is_complete(missing) == 0, "a missing file is reported complete");
  free(missing);

  /* write into a directory that does not exist: clean error, no crash */
  char err[512] = "";
  char *bad = path_of("no/such/dir/x.npy");
  int rc = sf_npy_write(bad, SF_NPY_F32, 1, s1, (float[5]){0}, err, sizeof err);
  SF_CHECK(rc != 0 && strstr(err, "x.npy"), "write into a missing directory: rc %d, err '%s'", rc, err);
  free(bad);

  sf_rm_rf(dir);
  free(dir);
  return sf_test_end();
}
