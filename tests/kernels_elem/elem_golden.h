/* Reader of the SFGOLDEN v1 fixtures written by scripts/make_golden_optim.py (format documented
 * there): the whole file is loaded, and tensors are looked up by name with their expected dtype and
 * element count, so a stale or mismatched fixture fails with a message that says what to re-run. */
#ifndef ELEM_GOLDEN_H
#define ELEM_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

enum { GOLD_F32 = 0, GOLD_I32 = 1, GOLD_F64 = 2 };

typedef struct {
  char name[64];
  uint32_t dtype, ndim;
  int64_t shape[8];
  size_t count;
  void *data;
} gold_tensor;

typedef struct {
  char *path;
  int n;
  gold_tensor *t;
} gold_file;

/* Loads dir/name; returns 0 and prints why on failure (missing file, bad magic or version). */
int gold_open(gold_file *g, const char *dir, const char *name);
void gold_close(gold_file *g);
/* The tensor `name` with the given dtype and, unless count == 0, exactly `count` elements; aborts the
 * test (exit 1) with a hint otherwise. */
const void *gold_get(const gold_file *g, const char *name, uint32_t dtype, size_t count);
const gold_tensor *gold_find(const gold_file *g, const char *name);

#endif
