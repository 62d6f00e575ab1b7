/* Fuzz target: the .npy reader (src/util/npy.c), fed the input as a file. npy.h promises that a
 * truncated or corrupted file is reported, never loaded. Oracles: sf_npy_read, sf_npy_read_header
 * and sf_npy_is_complete agree; a successful read has 0..8 dimensions whose product (without
 * overflow) is count; the file size is exactly the header plus count elements, so every element of
 * data is readable (ASan checks the last one); a failed read fills err and leaves data NULL. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "scaffold/npy.h"

static size_t elem_size(sf_npy_dtype t)
{
  switch (t) {
  case SF_NPY_F32: return 4;
  case SF_NPY_F64: return 8;
  case SF_NPY_U16: return 2;
  case SF_NPY_I64: return 8;
  case SF_NPY_U8: return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = sf_fuzz_memfd_path(data, size);
  sf_npy a, h;
  char err[512] = "", herr[512] = "";
  int rc = sf_npy_read(path, &a, err, sizeof err);
  int hrc = sf_npy_read_header(path, &h, herr, sizeof herr);
  int complete = sf_npy_is_complete(path);
  SF_FUZZ_ASSERT(rc == hrc, "sf_npy_read says %d (%s), sf_npy_read_header says %d (%s)", rc, err, hrc, herr);
  SF_FUZZ_ASSERT(complete == (rc == 0), "sf_npy_is_complete says %d but sf_npy_read says %d (%s)", complete, rc,
                 err);
  if (rc != 0) {
    SF_FUZZ_ASSERT(err[0] != '\0', "sf_npy_read failed without a message");
    SF_FUZZ_ASSERT(a.data == NULL, "sf_npy_read failed but left data %p", a.data);
    return 0;
  }
  SF_FUZZ_ASSERT(a.ndim >= 0 && a.ndim <= 8, "ndim %d", a.ndim);
  SF_FUZZ_ASSERT(a.dtype == h.dtype && a.ndim == h.ndim && a.count == h.count,
                 "header-only read differs from the full read");
  for (int i = 0; i < a.ndim; i++) /* shape[ndim..7] are unspecified */
    SF_FUZZ_ASSERT(a.shape[i] == h.shape[i], "shape[%d]: %zu read, %zu from the header-only read", i, a.shape[i],
                   h.shape[i]);
  size_t prod = 1;
  for (int i = 0; i < a.ndim; i++)
    SF_FUZZ_ASSERT(!__builtin_mul_overflow(prod, a.shape[i], &prod),
                   "shape product overflows size_t at dim %d (shape[%d] = %zu) but the read succeeded", i, i,
                   a.shape[i]);
  SF_FUZZ_ASSERT(prod == a.count, "count %zu but the shape's product is %zu", a.count, prod);
  size_t es = elem_size(a.dtype), bytes;
  SF_FUZZ_ASSERT(es != 0, "unknown dtype %d", (int)a.dtype);
  SF_FUZZ_ASSERT(!__builtin_mul_overflow(a.count, es, &bytes), "count %zu x %zu bytes overflows", a.count, es);
  SF_FUZZ_ASSERT(bytes <= size, "%zu data bytes from a %zu-byte file", bytes, size);
  if (bytes) {
    SF_FUZZ_ASSERT(a.data != NULL, "data is NULL for %zu bytes", bytes);
    const volatile uint8_t *p = a.data;
    SF_FUZZ_ASSERT(p[bytes - 1] == data[size - 1], "the last data byte differs from the file's last byte");
  }
  free(a.data);
  return 0;
}
