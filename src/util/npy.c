/* NumPy .npy reader/writer (scaffold/npy.h).
 * Writes format 1.0 headers byte-identical to NumPy 1.24's np.save: the dict with sorted keys,
 * repr'd shape tuple ('(5,)', '(1024, 3)'), 21-digit growth padding, spaces and '\n' so that the
 * data starts at a multiple of 64. Reads accept format 1.x/2.x/3.x, validate magic, header dict,
 * dtype, C order, shape and that the file size is exactly header + data (truncation detected), with
 * pread on a descriptor: the header read is exactly the header's bytes, and sf_npy_pread reads only
 * the elements asked for (the dataset loader's blocks count them). */
#include "scaffold/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_GROWTH_AXIS_MAX_DIGITS 21
#define NPY_MAX_HEADER 65535

static const struct {
  sf_npy_dtype dt;
  const char *descr;
  size_t size;
} dtypes[] = {
  {SF_NPY_F32, "<f4", 4}, {SF_NPY_F64, "<f8", 8}, {SF_NPY_U16, "<u2", 2},
  {SF_NPY_I64, "<i8", 8}, {SF_NPY_U8, "|u1", 1},
};

static size_t dtype_size(sf_npy_dtype dt)
{
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].dt == dt) return dtypes[i].size;
  return 0;
}

static const char *dtype_descr(sf_npy_dtype dt)
{
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].dt == dt) return dtypes[i].descr;
  return NULL;
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

/* The complete header (magic .. '\n') for the array; returns its length, 0 if it does not fit. */
static size_t build_header(char *out, size_t cap, sf_npy_dtype dt, int ndim, const size_t *shape)
{
  char dict[1024], shp[512];
  size_t k = 0;
  shp[k++] = '(';
  for (int i = 0; i < ndim; i++) {
    int w = snprintf(shp + k, sizeof shp - k, i ? ", %zu" : "%zu", shape[i]);
    if (w < 0 || (size_t)w >= sizeof shp - k) return 0;
    k += (size_t)w;
  }
  if (ndim == 1) shp[k++] = ',';
  shp[k++] = ')';
  shp[k] = '\0';
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                   dtype_descr(dt), shp);
  if (n < 0 || (size_t)n >= sizeof dict) return 0;
  size_t hl = (size_t)n;
  if (ndim > 0) { /* NumPy's spare room for growing axis 0 in place */
    char d0[32];
    int l0 = snprintf(d0, sizeof d0, "%zu", shape[0]);
    for (int i = l0; i < NPY_GROWTH_AXIS_MAX_DIGITS; i++) dict[hl++] = ' ';
  }
  size_t hlen = hl + 1; /* + '\n' */
  size_t padlen = NPY_ALIGN - ((NPY_MAGIC_LEN + 2 + 2 + hlen) % NPY_ALIGN);
  size_t total = NPY_MAGIC_LEN + 2 + 2 + hl + padlen + 1;
  if (total > cap || hlen + padlen > NPY_MAX_HEADER) return 0;
  memcpy(out, NPY_MAGIC, NPY_MAGIC_LEN);
  out[6] = 1;
  out[7] = 0;
  uint16_t h = (uint16_t)(hlen + padlen);
  out[8] = (char)(h & 0xff);
  out[9] = (char)(h >> 8);
  memcpy(out + 10, dict, hl);
  memset(out + 10 + hl, ' ', padlen);
  out[total - 1] = '\n';
  return total;
}

size_t sf_npy_header_bytes(sf_npy_dtype dt, int ndim, const size_t *shape)
{
  char h[NPY_MAX_HEADER + 16];
  return build_header(h, sizeof h, dt, ndim, shape);
}

/* Temporary name next to path, as fsutil's: "<dir>/.tmp-<name>-<pid>". */
static char *tmp_name(const char *path)
{
  const char *slash = strrchr(path, '/');
  size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
  size_t n = strlen(path) + 48;
  char *t = sf_malloc(n, "path");
  snprintf(t, n, "%.*s.tmp-%s-%ld", (int)dl, path, slash ? slash + 1 : path, (long)getpid());
  return t;
}

/* Atomic write without fsync: temporary file, then rename. */
static int write_nosync(const char *path, const char *hdr, size_t hn, const void *data, size_t nbytes, char *err,
                        size_t errlen)
{
  char *tmp = tmp_name(path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    int e = errno;
    free(tmp);
    return fail(err, errlen, "cannot create a temporary file next to %s: %s", path, strerror(e));
  }
  int ok = fwrite(hdr, 1, hn, f) == hn && (!nbytes || fwrite(data, 1, nbytes, f) == nbytes);
  int e = ok ? 0 : (errno ? errno : EIO);
  if (fclose(f) != 0 && ok) ok = 0, e = errno ? errno : EIO;
  if (ok && rename(tmp, path) != 0) ok = 0, e = errno;
  if (!ok) unlink(tmp);
  free(tmp);
  if (!ok) return fail(err, errlen, "cannot write %s (%zu bytes): %s", path, hn + nbytes, strerror(e));
  return 0;
}

int sf_npy_write_flags(const char *path, sf_npy_dtype dt, int ndim, const size_t *shape, const void *data,
                       unsigned flags, char *err, size_t errlen)
{
  size_t es = dtype_size(dt);
  if (!es) return fail(err, errlen, "%s: unsupported dtype code %d", path, (int)dt);
  if (ndim < 0 || ndim > 8) return fail(err, errlen, "%s: ndim %d outside 0..8", path, ndim);
  size_t count = 1;
  for (int i = 0; i < ndim; i++) count *= shape[i];
  char hdr[2048];
  size_t hn = build_header(hdr, sizeof hdr, dt, ndim, shape);
  if (!hn) return fail(err, errlen, "%s: .npy header too long", path);
  size_t nbytes = count * es;
  if (flags & SF_NPY_NO_FSYNC) return write_nosync(path, hdr, hn, data, nbytes, err, errlen);
  sf_atomic_file a;
  if (sf_atomic_open(&a, path) != 0)
    return fail(err, errlen, "cannot create a temporary file next to %s: %s", path, strerror(errno));
  if (fwrite(hdr, 1, hn, a.f) != hn || (nbytes && fwrite(data, 1, nbytes, a.f) != nbytes)) {
    int e = errno ? errno : EIO;
    sf_atomic_abort(&a);
    return fail(err, errlen, "cannot write %s (%zu bytes): %s", path, hn + nbytes, strerror(e));
  }
  if (sf_atomic_commit(&a) != 0)
    return fail(err, errlen, "cannot write %s (commit/rename): %s", path, strerror(errno));
  return 0;
}

int sf_npy_write(const char *path, sf_npy_dtype dt, int ndim, const size_t *shape, const void *data,
                 char *err, size_t errlen)
{
  return sf_npy_write_flags(path, dt, ndim, shape, data, 0, err, errlen);
}

/* ---- reading ------------------------------------------------------------------------------- */

typedef struct {
  sf_npy_dtype dtype;
  int ndim;
  size_t shape[8];
  size_t count;
  size_t data_offset;
} npy_header;

static const char *skip_ws(const char *p, const char *end)
{
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* Parses a quoted Python string literal (no escapes needed for our keys). */
static const char *parse_str(const char *p, const char *end, char *out, size_t cap)
{
  if (p >= end || (*p != '\'' && *p != '"')) return NULL;
  char q = *p++;
  size_t k = 0;
  while (p < end && *p != q) {
    if (k + 1 >= cap) return NULL;
    out[k++] = *p++;
  }
  if (p >= end) return NULL;
  out[k] = '\0';
  return p + 1;
}

static int parse_dict(const char *h, size_t n, const char *path, npy_header *hd, char *err, size_t errlen)
{
  const char *p = h, *end = h + n;
  int have_descr = 0, have_order = 0, have_shape = 0;
  char descr[32] = "";
  p = skip_ws(p, end);
  if (p >= end || *p != '{') return fail(err, errlen, "%s: .npy header is not a dict (no '{')", path);
  p++;
  for (;;) {
    p = skip_ws(p, end);
    if (p < end && *p == '}') break;
    char key[64];
    const char *q = parse_str(p, end, key, sizeof key);
    if (!q) return fail(err, errlen, "%s: malformed .npy header dict near offset %zu", path, (size_t)(p - h));
    p = skip_ws(q, end);
    if (p >= end || *p != ':') return fail(err, errlen, "%s: .npy header: expected ':' after '%s'", path, key);
    p = skip_ws(p + 1, end);
    if (!strcmp(key, "descr")) {
      q = parse_str(p, end, descr, sizeof descr);
      if (!q) return fail(err, errlen, "%s: .npy header: 'descr' is not a string", path);
      p = q;
      have_descr = 1;
    } else if (!strcmp(key, "fortran_order")) {
      if (end - p >= 5 && !strncmp(p, "False", 5)) {
        p += 5;
      } else if (end - p >= 4 && !strncmp(p, "True", 4)) {
        return fail(err, errlen, "%s: fortran_order True is not supported (C order expected)", path);
      } else {
        return fail(err, errlen, "%s: .npy header: 'fortran_order' is not True/False", path);
      }
      have_order = 1;
    } else if (!strcmp(key, "shape")) {
      if (p >= end || *p != '(') return fail(err, errlen, "%s: .npy header: 'shape' is not a tuple", path);
      p++;
      hd->ndim = 0;
      for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == ')') {
          p++;
          break;
        }
        if (p >= end || *p < '0' || *p > '9')
          return fail(err, errlen, "%s: .npy header: bad 'shape' entry", path);
        if (hd->ndim >= 8) return fail(err, errlen, "%s: .npy shape has more than 8 dimensions", path);
        char *e2;
        errno = 0;
        unsigned long long v = strtoull(p, &e2, 10);
        if (errno) return fail(err, errlen, "%s: .npy header: shape entry out of range", path);
        hd->shape[hd->ndim++] = (size_t)v;
        p = skip_ws(e2, end);
        if (p < end && *p == ',') p++;
      }
      have_shape = 1;
    } else {
      return fail(err, errlen, "%s: .npy header: unexpected key '%s'", path, key);
    }
    p = skip_ws(p, end);
    if (p < end && *p == ',') p++;
  }
  if (!have_descr || !have_order || !have_shape)
    return fail(err, errlen, "%s: .npy header lacks %s", path,
                !have_descr ? "'descr'" : !have_order ? "'fortran_order'" : "'shape'");
  int found = 0;
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (!strcmp(descr, dtypes[i].descr)) hd->dtype = dtypes[i].dt, found = 1;
  if (!found && !strcmp(descr, "<u1")) hd->dtype = SF_NPY_U8, found = 1;
  if (!found)
    return fail(err, errlen, "%s: unsupported dtype '%s' (expected <f4, <f8, <u2, <i8 or |u1)", path, descr);
  hd->count = 1;
  for (int i = 0; i < hd->ndim; i++)
    if (__builtin_mul_overflow(hd->count, hd->shape[i], &hd->count))
      return fail(err, errlen, "%s: .npy shape: the element count overflows (dimension %d is %zu)", path, i,
                  hd->shape[i]);
  return 0;
}

/* Exactly n bytes at offset off (pread, restarted after EINTR and short reads); 0 or -1 (errno). */
static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
  char *p = buf;
  while (n) {
    ssize_t r = pread(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return -1;
    }
    p += r, n -= (size_t)r, off += (uint64_t)r;
  }
  return 0;
}

/* Reads and validates the header of an open file of size fsize with pread: it reads exactly the
 * header's bytes (hd->data_offset of them on success), nothing of the data. */
static int read_header(int fd, size_t fsize, const char *path, npy_header *hd, char *err, size_t errlen)
{
  unsigned char pre[12];
  if (fsize < 10 || pread_full(fd, pre, 10, 0) != 0)
    return fail(err, errlen, "%s: too short for a .npy file (%zu bytes)", path, fsize);
  if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0) return fail(err, errlen, "%s: not a .npy file (bad magic)", path);
  int major = pre[6];
  size_t hlen, pre_len;
  if (major == 1) {
    hlen = (size_t)pre[8] | ((size_t)pre[9] << 8);
    pre_len = 10;
  } else if (major == 2 || major == 3) {
    if (fsize < 12 || pread_full(fd, pre + 10, 2, 10) != 0) return fail(err, errlen, "%s: truncated .npy header", path);
    hlen = (size_t)pre[8] | ((size_t)pre[9] << 8) | ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
    pre_len = 12;
  } else {
    return fail(err, errlen, "%s: unsupported .npy format version %d.%d", path, major, pre[7]);
  }
  if (pre_len + hlen > fsize)
    return fail(err, errlen, "%s: truncated .npy header (%zu bytes declared, file has %zu)", path, hlen, fsize);
  if (hlen > (1u << 24)) return fail(err, errlen, "%s: implausible .npy header length %zu", path, hlen);
  char *h = sf_malloc(hlen + 1, "npy header");
  if (pread_full(fd, h, hlen, pre_len) != 0) {
    free(h);
    return fail(err, errlen, "%s: cannot read the .npy header", path);
  }
  h[hlen] = '\0';
  int rc = parse_dict(h, hlen, path, hd, err, errlen);
  free(h);
  if (rc) return rc;
  hd->data_offset = pre_len + hlen;
  size_t want;
  if (__builtin_mul_overflow(hd->count, dtype_size(hd->dtype), &want) ||
      __builtin_add_overflow(want, hd->data_offset, &want))
    return fail(err, errlen, "%s: .npy shape of %zu elements of %s does not fit in memory", path, hd->count,
                dtype_descr(hd->dtype));
  if (fsize != want)
    return fail(err, errlen, "%s: size %zu bytes but the header (shape %zu elements of %s) needs %zu%s", path, fsize,
                hd->count, dtype_descr(hd->dtype), want, fsize < want ? " (truncated)" : " (trailing bytes)");
  return 0;
}

/* A read-only descriptor of a regular file and its size; -1 (errno set) otherwise. */
static int open_sized(const char *path, size_t *fsize)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EISDIR;
    return -1;
  }
  *fsize = (size_t)st.st_size;
  return fd;
}

int sf_npy_open(const char *path, sf_npy_file *f, char *err, size_t errlen)
{
  memset(f, 0, sizeof *f);
  f->fd = -1;
  size_t fsize;
  int fd = open_sized(path, &fsize);
  if (fd < 0) return fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
  npy_header hd = {0}; /* read_header fills every field on success */
  if (read_header(fd, fsize, path, &hd, err, errlen) != 0) {
    close(fd);
    return -1;
  }
  f->fd = fd;
  f->path = path;
  f->dtype = hd.dtype;
  f->ndim = hd.ndim;
  memcpy(f->shape, hd.shape, sizeof hd.shape);
  f->count = hd.count;
  f->elem_size = dtype_size(hd.dtype);
  f->data_offset = hd.data_offset;
  f->bytes_read = hd.data_offset;
  return 0;
}

int sf_npy_pread(sf_npy_file *f, size_t first, size_t n, void *buf, char *err, size_t errlen)
{
  if (first > f->count || n > f->count - first)
    return fail(err, errlen, "%s: elements [%zu, %zu) are outside the array's %zu", f->path, first, first + n, f->count);
  size_t bytes = n * f->elem_size;
  if (bytes && pread_full(f->fd, buf, bytes, f->data_offset + (uint64_t)first * f->elem_size) != 0)
    return fail(err, errlen, "%s: cannot read %zu data bytes at element %zu: %s", f->path, bytes, first,
                strerror(errno));
  f->bytes_read += bytes;
  return 0;
}

void sf_npy_close(sf_npy_file *f)
{
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
}

int sf_npy_read(const char *path, sf_npy *out, char *err, size_t errlen)
{
  memset(out, 0, sizeof *out);
  sf_npy_file f;
  if (sf_npy_open(path, &f, err, errlen) != 0) return -1;
  void *data = sf_malloc(f.count * f.elem_size, "npy data");
  if (sf_npy_pread(&f, 0, f.count, data, err, errlen) != 0) {
    free(data);
    sf_npy_close(&f);
    return -1;
  }
  sf_npy_close(&f);
  out->dtype = f.dtype;
  out->ndim = f.ndim;
  memcpy(out->shape, f.shape, sizeof f.shape);
  out->count = f.count;
  out->data = data;
  return 0;
}

int sf_npy_read_header(const char *path, sf_npy *out, char *err, size_t errlen)
{
  memset(out, 0, sizeof *out);
  sf_npy_file f;
  if (sf_npy_open(path, &f, err, errlen) != 0) return -1;
  sf_npy_close(&f);
  out->dtype = f.dtype;
  out->ndim = f.ndim;
  memcpy(out->shape, f.shape, sizeof f.shape);
  out->count = f.count;
  return 0;
}

int sf_npy_is_complete(const char *path)
{
  sf_npy_file f;
  if (sf_npy_open(path, &f, NULL, 0) != 0) return 0;
  sf_npy_close(&f);
  return 1;
}
