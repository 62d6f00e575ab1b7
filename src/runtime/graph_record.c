/* The task-graph recorder (scaffold/graph_record.h): tasks as the submission function hands them
 * over, handles numbered in first-use order, predecessors from each handle's access history. */
#include "scaffold/graph_record.h"

#include <errno.h>
#include <starpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/json.h"

typedef struct {
  long *v;
  long n, cap;
} idlist;

static void idlist_add(idlist *l, long x)
{
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 8;
    l->v = realloc(l->v, (size_t)l->cap * sizeof(long));
    if (!l->v) sf_die(SF_EXIT_FAILURE, "graph recorder: out of memory");
  }
  l->v[l->n++] = x;
}
static void idlist_copy(idlist *dst, const idlist *src)
{
  dst->n = 0;
  for (long i = 0; i < src->n; i++) idlist_add(dst, src->v[i]);
}

/* One handle's access history since recording began. */
typedef struct {
  void *h;
  size_t bytes;
  int home;
  idlist writers;     /* the last writer, or the open group of commutative writers */
  idlist readers;     /* readers since the last write */
  idlist group_deps;  /* what the open commutative group waits for */
  int commute_open;   /* writers is a commutative group still accepting members */
} rec_handle;

typedef struct {
  long handle;
  int mode;
} rec_access;

typedef struct {
  const struct starpu_codelet *cl;
  const char *codelet; /* codelet names are static strings */
  int prio;
  double flops;
  uint32_t footprint;
  rec_access *acc;
  int nacc;
  idlist preds;
} rec_task;

static struct {
  int on;
  rec_task *t;
  long nt, ct;
  rec_handle *h;
  long nh, ch;
  long *slot; /* open-addressing map handle pointer -> index, size nslot (a power of two) */
  long nslot;
} R;

static void record_free(void)
{
  for (long i = 0; i < R.nt; i++) {
    free(R.t[i].acc);
    free(R.t[i].preds.v);
  }
  for (long i = 0; i < R.nh; i++) {
    free(R.h[i].writers.v);
    free(R.h[i].readers.v);
    free(R.h[i].group_deps.v);
  }
  free(R.t);
  free(R.h);
  free(R.slot);
  memset(&R, 0, sizeof R);
}

void sf_graph_record_begin(void)
{
  record_free();
  R.on = 1;
}
void sf_graph_record_stop(void) { R.on = 0; }
void sf_graph_record_clear(void) { record_free(); }
int sf_graph_recording(void) { return R.on; }
long sf_graph_record_ntasks(void) { return R.nt; }

static size_t hash_ptr(const void *p) { return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull); }

static void rehash(void)
{
  long n = R.nslot ? 2 * R.nslot : 1024;
  long *s = sf_malloc((size_t)n * sizeof(long), "graph recorder");
  for (long i = 0; i < n; i++) s[i] = -1;
  for (long k = 0; k < R.nh; k++) {
    size_t j = hash_ptr(R.h[k].h) & (size_t)(n - 1);
    while (s[j] >= 0) j = (j + 1) & (size_t)(n - 1);
    s[j] = k;
  }
  free(R.slot);
  R.slot = s;
  R.nslot = n;
}

static long handle_index(void *h)
{
  if (2 * (R.nh + 1) > R.nslot) rehash();
  size_t j = hash_ptr(h) & (size_t)(R.nslot - 1);
  while (R.slot[j] >= 0) {
    if (R.h[R.slot[j]].h == h) return R.slot[j];
    j = (j + 1) & (size_t)(R.nslot - 1);
  }
  if (R.nh == R.ch) {
    R.ch = R.ch ? 2 * R.ch : 256;
    R.h = realloc(R.h, (size_t)R.ch * sizeof *R.h);
    if (!R.h) sf_die(SF_EXIT_FAILURE, "graph recorder: out of memory");
  }
  rec_handle *r = &R.h[R.nh];
  memset(r, 0, sizeof *r);
  r->h = h;
  r->bytes = starpu_data_get_size((starpu_data_handle_t)h);
  r->home = starpu_data_get_home_node((starpu_data_handle_t)h);
  R.slot[j] = R.nh;
  return R.nh++;
}

static void add_preds(idlist *preds, const idlist *from, long self)
{
  for (long i = 0; i < from->n; i++) {
    long p = from->v[i];
    if (p == self) continue;
    int seen = 0;
    for (long k = 0; k < preds->n && !seen; k++) seen = preds->v[k] == p;
    if (!seen) idlist_add(preds, p);
  }
}

/* StarPU's sequential consistency on one handle: task `t` accesses it with `mode`. */
static void access_handle(rec_handle *h, long t, int mode, idlist *preds)
{
  if (mode & STARPU_SCRATCH) return; /* per-worker scratch: no ordering */
  int writes = (mode & (STARPU_W | STARPU_REDUX)) != 0;
  if (!writes) { /* read after write */
    add_preds(preds, &h->writers, t);
    idlist_add(&h->readers, t);
    h->commute_open = 0;
    return;
  }
  if ((mode & STARPU_COMMUTE) && h->commute_open) { /* joins the group: same predecessors, no order */
    add_preds(preds, &h->group_deps, t);
    idlist_add(&h->writers, t);
    return;
  }
  const idlist *before = h->readers.n ? &h->readers : &h->writers; /* write after read / write */
  add_preds(preds, before, t);
  if (mode & STARPU_COMMUTE) idlist_copy(&h->group_deps, before);
  h->writers.n = 0;
  idlist_add(&h->writers, t);
  h->readers.n = 0;
  h->commute_open = (mode & STARPU_COMMUTE) != 0;
}

static int cmp_long(const void *a, const void *b)
{
  long x = *(const long *)a, y = *(const long *)b;
  return x < y ? -1 : x > y;
}

/* The data footprint StarPU's history-based models are indexed by (no custom footprint functions). */
static uint32_t data_footprint(const struct starpu_data_descr *d, int n)
{
  static struct starpu_codelet any = {.nbuffers = STARPU_VARIABLE_NBUFFERS};
  starpu_data_handle_t hs[256];
  if (n > 256) return 0;
  for (int i = 0; i < n; i++) hs[i] = d[i].handle;
  struct starpu_task task;
  memset(&task, 0, sizeof task);
  task.cl = &any;
  task.nbuffers = n;
  task.dyn_handles = hs;
  return starpu_task_data_footprint(&task);
}

void sf_graph_record_task(const struct starpu_codelet *cl, int prio, double flops, const struct starpu_data_descr *d,
                          int n)
{
  if (!R.on) return;
  if (R.nt == R.ct) {
    R.ct = R.ct ? 2 * R.ct : 1024;
    R.t = realloc(R.t, (size_t)R.ct * sizeof *R.t);
    if (!R.t) sf_die(SF_EXIT_FAILURE, "graph recorder: out of memory");
  }
  long id = R.nt++;
  rec_task *t = &R.t[id];
  memset(t, 0, sizeof *t);
  t->cl = cl;
  t->codelet = cl->name;
  t->prio = prio;
  t->flops = flops;
  t->footprint = data_footprint(d, n);
  t->acc = sf_malloc((size_t)(n ? n : 1) * sizeof *t->acc, "graph recorder");
  t->nacc = n;
  for (int i = 0; i < n; i++) {
    t->acc[i].handle = handle_index(d[i].handle);
    t->acc[i].mode = (int)d[i].mode;
    access_handle(&R.h[t->acc[i].handle], id, (int)d[i].mode, &t->preds);
  }
  if (t->preds.n > 1) qsort(t->preds.v, (size_t)t->preds.n, sizeof(long), cmp_long);
}

int sf_graph_record_view(long i, sf_graph_task_view *v)
{
  if (i < 0 || i >= R.nt) return -1;
  v->cl = R.t[i].cl;
  v->footprint = R.t[i].footprint;
  v->preds = R.t[i].preds.v;
  v->npreds = R.t[i].preds.n;
  return 0;
}

static const char *mode_name(int m)
{
  if (m & STARPU_SCRATCH) return "SCRATCH";
  if (m & STARPU_REDUX) return "REDUX";
  if ((m & STARPU_RW) == STARPU_RW) return m & STARPU_COMMUTE ? "RW|COMMUTE" : "RW";
  if (m & STARPU_W) return m & STARPU_COMMUTE ? "W|COMMUTE" : "W";
  return "R";
}

static cJSON *task_json(long i)
{
  const rec_task *t = &R.t[i];
  char footprint[9];
  snprintf(footprint, sizeof footprint, "%08x", (unsigned)t->footprint);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", (double)i);
  cJSON_AddStringToObject(o, "codelet", t->codelet);
  cJSON_AddStringToObject(o, "footprint", footprint);
  cJSON_AddNumberToObject(o, "flops", t->flops);
  cJSON_AddNumberToObject(o, "priority", t->prio);
  cJSON *handles = cJSON_AddArrayToObject(o, "handles");
  for (int k = 0; k < t->nacc; k++) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "handle", (double)t->acc[k].handle);
    cJSON_AddStringToObject(a, "mode", mode_name(t->acc[k].mode));
    cJSON_AddNumberToObject(a, "bytes", (double)R.h[t->acc[k].handle].bytes);
    cJSON_AddItemToArray(handles, a);
  }
  cJSON *preds = cJSON_AddArrayToObject(o, "predecessors");
  for (long k = 0; k < t->preds.n; k++) cJSON_AddItemToArray(preds, cJSON_CreateNumber((double)t->preds.v[k]));
  return o;
}

static cJSON *handle_json(long k)
{
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "id", (double)k);
  cJSON_AddNumberToObject(o, "bytes", (double)R.h[k].bytes);
  cJSON_AddNumberToObject(o, "home_node", R.h[k].home);
  return o;
}

/* graph.json (docs/tracing.md): one task, one handle a line. */
static int write_json(const char *path)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "format", "scaffold-task-graph");
  cJSON_AddNumberToObject(j, "version", 1);
  cJSON_AddNumberToObject(j, "ntasks", (double)R.nt);
  cJSON_AddNumberToObject(j, "nhandles", (double)R.nh);
  cJSON *tasks = cJSON_AddArrayToObject(j, "tasks");
  for (long i = 0; i < R.nt; i++) cJSON_AddItemToArray(tasks, task_json(i));
  cJSON *handles = cJSON_AddArrayToObject(j, "handles");
  for (long k = 0; k < R.nh; k++) cJSON_AddItemToArray(handles, handle_json(k));
  int rc = sf_json_write_rows_atomic(path, j);
  cJSON_Delete(j);
  return rc;
}

static void write_dot(FILE *f)
{
  fprintf(f, "digraph scaffold_step {\n  node [shape=box, fontsize=10];\n");
  for (long i = 0; i < R.nt; i++) fprintf(f, "  t%ld [label=\"%ld %s\"];\n", i, i, R.t[i].codelet);
  for (long i = 0; i < R.nt; i++)
    for (long k = 0; k < R.t[i].preds.n; k++) fprintf(f, "  t%ld -> t%ld;\n", R.t[i].preds.v[k], i);
  fprintf(f, "}\n");
}

static int write_dot_file(const char *path)
{
  sf_atomic_file a;
  int rc = sf_atomic_open(&a, path);
  if (rc == 0) {
    write_dot(a.f);
    rc = sf_atomic_commit(&a);
  }
  return rc;
}

static int write_one(const char *dir, const char *name, int (*fn)(const char *), char *err, size_t errlen)
{
  char *path = sf_path_join(dir, name);
  int rc = fn(path);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  free(path);
  return rc == 0 ? 0 : -1;
}

int sf_graph_record_write(const char *dir, char *err, size_t errlen)
{
  R.on = 0;
  int rc = write_one(dir, "graph.json", write_json, err, errlen);
  if (rc == 0) rc = write_one(dir, "graph.dot", write_dot_file, err, errlen);
  return rc;
}
