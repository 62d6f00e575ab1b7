/* NumPy .npy files (format 1.0, C order, little-endian): float32, float64, uint16, int64 arrays.
 * Writes are atomic (".tmp-" file in the same directory, fsync, rename). Reads validate the header,
 * dtype, shape and the file size, so a truncated or corrupted file is reported, never loaded. */
#ifndef SF_NPY_H
#define SF_NPY_H

#include <stddef.h>

typedef enum { SF_NPY_F32, SF_NPY_F64, SF_NPY_U16, SF_NPY_I64, SF_NPY_U8 } sf_npy_dtype;

typedef struct {
  sf_npy_dtype dtype;
  int ndim;
  size_t shape[8];
  size_t count;   /* product of shape */
  void *data;     /* malloc'ed; free() it */
} sf_npy;

/* 0 on success; -1 with a message in err naming the file and what is wrong. */
int sf_npy_write(const char *path, sf_npy_dtype dt, int ndim, const size_t *shape, const void *data,
                 char *err, size_t errlen);
int sf_npy_read(const char *path, sf_npy *out, char *err, size_t errlen);
/* sf_npy_write with flags. SF_NPY_NO_FSYNC: still atomic (temporary file + rename, so readers and
 * a killed writer never leave a partial file under `path`), but not flushed to disk; for many small
 * files that the caller makes durable at once (e.g. syncfs) and re-validates on the next run. */
#define SF_NPY_NO_FSYNC 1u
int sf_npy_write_flags(const char *path, sf_npy_dtype dt, int ndim, const size_t *shape, const void *data,
                       unsigned flags, char *err, size_t errlen);
/* Bytes of the header sf_npy_write writes for that array (where its data starts); 0 if too long. */
size_t sf_npy_header_bytes(sf_npy_dtype dt, int ndim, const size_t *shape);
/* Like sf_npy_read without loading the data (out->data = NULL): header, dtype, shape and file size
 * are validated. 0 on success; -1 with a message in err. */
int sf_npy_read_header(const char *path, sf_npy *out, char *err, size_t errlen);
/* Header-only check: exists, parses, and the size matches the header. 1 = complete, 0 = not. */
int sf_npy_is_complete(const char *path);

#endif
