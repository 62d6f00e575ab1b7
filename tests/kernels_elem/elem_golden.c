/* SFGOLDEN v1 reader for the element-wise kernel tests (see elem_golden.h). */
#include "elem_golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HINT "HINT: regenerate with /usr/bin/python3 scripts/make_golden_optim.py"

static int rd(void *dst, size_t bytes, const unsigned char **p, const unsigned char *end)
{
  if ((size_t)(end - *p) < bytes) return 0;
  memcpy(dst, *p, bytes);
  *p += bytes;
  return 1;
}

int gold_open(gold_file *g, const char *dir, const char *name)
{
  memset(g, 0, sizeof *g);
  size_t len = strlen(dir) + strlen(name) + 2;
  g->path = malloc(len);
  snprintf(g->path, len, "%s/%s", dir, name);
  FILE *f = fopen(g->path, "rb");
  if (!f) {
    fprintf(stderr, "FAIL cannot open golden file %s\n" HINT "\n", g->path);
    return 0;
  }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)sz + 1);
  size_t got = fread(buf, 1, (size_t)sz, f);
  fclose(f);
  const unsigned char *p = buf, *end = buf + got;
  char magic[8];
  uint32_t version = 0, count = 0;
  if (!rd(magic, 8, &p, end) || memcmp(magic, "SFGOLDEN", 8) != 0 || !rd(&version, 4, &p, end) ||
      !rd(&count, 4, &p, end) || version != 1) {
    fprintf(stderr, "FAIL %s: bad magic or version %u (expected \"SFGOLDEN\" v1)\n" HINT "\n", g->path, version);
    free(buf);
    return 0;
  }
  g->t = calloc(count, sizeof *g->t);
  for (uint32_t i = 0; i < count; i++) {
    gold_tensor *t = &g->t[i];
    uint32_t nlen = 0;
    int ok = rd(&nlen, 4, &p, end) && nlen < sizeof t->name && rd(t->name, nlen, &p, end) &&
             rd(&t->dtype, 4, &p, end) && rd(&t->ndim, 4, &p, end) && t->ndim <= 8 && t->dtype <= 2 &&
             rd(t->shape, 8 * (size_t)t->ndim, &p, end);
    size_t esz = t->dtype == GOLD_F64 ? 8 : 4;
    t->count = 1;
    for (uint32_t d = 0; ok && d < t->ndim; d++) t->count *= (size_t)t->shape[d];
    if (ok) {
      t->data = malloc(t->count * esz + 1);
      ok = rd(t->data, t->count * esz, &p, end);
    }
    if (!ok) {
      fprintf(stderr, "FAIL %s: truncated or corrupt at tensor %u of %u\n" HINT "\n", g->path, i, count);
      g->n = (int)i + 1;
      free(buf);
      return 0;
    }
  }
  g->n = (int)count;
  free(buf);
  return 1;
}

void gold_close(gold_file *g)
{
  for (int i = 0; i < g->n; i++) free(g->t[i].data);
  free(g->t);
  free(g->path);
  memset(g, 0, sizeof *g);
}

const gold_tensor *gold_find(const gold_file *g, const char *name)
{
  for (int i = 0; i < g->n; i++)
    if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
  return NULL;
}

const void *gold_get(const gold_file *g, const char *name, uint32_t dtype, size_t count)
{
  const gold_tensor *t = gold_find(g, name);
  if (!t) {
    fprintf(stderr, "FAIL %s: no tensor \"%s\"\n" HINT "\n", g->path, name);
    exit(1);
  }
  if (t->dtype != dtype || (count && t->count != count)) {
    fprintf(stderr, "FAIL %s: tensor \"%s\" has dtype %u and %zu elements, expected dtype %u and %zu\n" HINT "\n",
            g->path, name, t->dtype, t->count, dtype, count);
    exit(1);
  }
  return t->data;
}
