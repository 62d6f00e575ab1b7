/* NumPy .npy files (format 1.0, C order, little-endian): float32, float64, uint16, int64 arrays.
 * Writes are atomic (".tmp-" file in the same directory, fsync, rename). Reads validate the header,
 * dtype, shape and the file size, so a truncated or corrupted file is reported, never loaded; a
 * file may also be read in parts by offset (sf_npy_open, sf_npy_pread). */
#ifndef SF_NPY_H
#define SF_NPY_H

#include <stddef.h>
#include <stdint.h>

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

/* ---- reading parts of a file by offset (the dataset loader's blocks, src/datagen/dataset_block.c) ----
 * sf_npy_open validates the header as sf_npy_read_header does, reading exactly the header's bytes
 * (pread on a descriptor, no stdio buffering), and keeps the file open; sf_npy_pread reads elements
 * [first, first + n) of the C-order array with pread. bytes_read counts every byte read from the
 * file: the header, then each sf_npy_pread's data. */
typedef struct {
  int fd;
  const char *path;   /* the caller's string, for messages; must outlive the handle */
  sf_npy_dtype dtype;
  int ndim;
  size_t shape[8];
  size_t count;       /* product of shape */
  size_t elem_size;   /* bytes per element */
  size_t data_offset; /* header bytes: where the data starts */
  uint64_t bytes_read;
} sf_npy_file;
/* 0 on success; -1 with a message in err naming the file (nothing is left open). */
int sf_npy_open(const char *path, sf_npy_file *f, char *err, size_t errlen);
/* 0 on success; -1 with a message naming the file (a range outside the array, a read error). */
int sf_npy_pread(sf_npy_file *f, size_t first, size_t n, void *buf, char *err, size_t errlen);
void sf_npy_close(sf_npy_file *f);

#endif
