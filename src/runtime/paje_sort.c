/* Time-orders a Paje trace in place, as StarPU's own starpu_paje_sort script does (tools/starpu_paje_sort.in
 * in StarPU's source; Debian installs neither it nor an FxT StarPU). starpu_fxt_tool writes events in the
 * order it merges the workers' buffers, so a few are out of time order and strict readers (pajeng's
 * pj_dump: "Illegal, trace is not time-ordered") refuse the file. Kept first, in file order: the header
 * ('%' lines) and the events that define types and values, create containers or add to variables;
 * then every other event, stably sorted by its timestamp (field 2). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"

#include "fxt_internal.h"

typedef struct {
  char *line;
  double t;
  size_t order;
} paje_event;

static int by_time(const void *a, const void *b)
{
  const paje_event *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* The event ids the header defines for the kept-first event types ("%EventDef NAME ID"). */
static int header_ids(char **lines, size_t n, int *ids, int max)
{
  static const char *const kept[] = {"PajeDefineContainerType", "PajeDefineEventType", "PajeDefineStateType",
                                     "PajeDefineVariableType", "PajeDefineLinkType", "PajeDefineEntityValue",
                                     "PajeCreateContainer", "PajeAddVariable"};
  int k = 0;
  for (size_t i = 0; i < n && k < max; i++) {
    char name[64];
    int id;
    if (sscanf(lines[i], "%%EventDef %63s %d", name, &id) != 2) continue;
    for (size_t j = 0; j < sizeof kept / sizeof kept[0]; j++)
      if (!strcmp(name, kept[j])) ids[k++] = id;
  }
  return k;
}

static int kept_first(const char *line, const int *ids, int nids)
{
  if (line[0] == '%' || line[0] == '\n' || line[0] == 0) return 1;
  char *end;
  long id = strtol(line, &end, 10);
  if (end == line) return 1;
  for (int i = 0; i < nids; i++)
    if (ids[i] == id) return 1;
  return 0;
}

static char **read_lines(const char *path, size_t *n)
{
  size_t len = 0, cap = 1024;
  char *text = sf_read_file(path, &len);
  if (!text) return NULL;
  char **lines = sf_malloc(cap * sizeof *lines, "Paje lines");
  *n = 0;
  for (char *p = text; p < text + len;) {
    char *nl = memchr(p, '\n', (size_t)(text + len - p));
    size_t l = nl ? (size_t)(nl - p) + 1 : (size_t)(text + len - p);
    if (*n == cap) lines = realloc(lines, (cap *= 2) * sizeof *lines);
    if (!lines) sf_die(SF_EXIT_FAILURE, "out of memory sorting %s", path);
    lines[*n] = sf_malloc(l + 1, "Paje line");
    memcpy(lines[*n], p, l);
    lines[(*n)++][l] = 0;
    p += l;
  }
  free(text);
  return lines;
}

int sf_paje_sort(const char *path, char *err, size_t errlen)
{
  size_t n = 0;
  char **lines = read_lines(path, &n);
  if (!lines) {
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  int ids[16];
  int nids = header_ids(lines, n, ids, 16);
  paje_event *ev = sf_malloc((n ? n : 1) * sizeof *ev, "Paje events");
  size_t ne = 0;
  sf_atomic_file out;
  int rc = sf_atomic_open(&out, path);
  for (size_t i = 0; i < n; i++) {
    if (kept_first(lines[i], ids, nids)) {
      if (rc == 0) fputs(lines[i], out.f);
      continue;
    }
    const char *f2 = strpbrk(lines[i], " \t");
    ev[ne] = (paje_event){lines[i], f2 ? strtod(f2, NULL) : 0.0, ne};
    ne++;
  }
  qsort(ev, ne, sizeof *ev, by_time);
  for (size_t i = 0; rc == 0 && i < ne; i++) fputs(ev[i].line, out.f);
  if (rc == 0) rc = sf_atomic_commit(&out);
  if (rc != 0) snprintf(err, errlen, "cannot rewrite %s: %s", path, strerror(errno));
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
  free(ev);
  return rc;
}
