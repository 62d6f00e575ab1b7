/* Per-thread scratch slots for the fast kernels (scaffold/workspace.h). The slots of a thread are
 * freed when the thread exits (a pthread key destructor), so StarPU worker threads leave nothing
 * behind at shutdown. */
#include "scaffold/workspace.h"

#include <pthread.h>
#include <stdlib.h>

#include "scaffold/common.h"

typedef struct {
  float *ptr[SF_WORKSPACE_SLOTS];
  size_t len[SF_WORKSPACE_SLOTS];
} workspace;

static pthread_key_t ws_key;
static pthread_once_t ws_once = PTHREAD_ONCE_INIT;

static void ws_free(void *p)
{
  workspace *w = p;
  for (int i = 0; i < SF_WORKSPACE_SLOTS; i++) free(w->ptr[i]);
  free(w);
}

static void ws_make_key(void) { pthread_key_create(&ws_key, ws_free); }

static workspace *ws_get(int create)
{
  pthread_once(&ws_once, ws_make_key);
  workspace *w = pthread_getspecific(ws_key);
  if (!w && create) {
    w = sf_calloc(1, sizeof *w, "kernel workspace table");
    pthread_setspecific(ws_key, w);
  }
  return w;
}

float *sf_workspace_floats(int slot, size_t floats)
{
  SF_ASSERT(slot >= 0 && slot < SF_WORKSPACE_SLOTS);
  workspace *w = ws_get(1);
  if (floats > w->len[slot]) {
    free(w->ptr[slot]);
    size_t grow = floats + floats / 8; /* a little headroom avoids repeated regrowth */
    w->ptr[slot] = sf_aligned_alloc(grow * sizeof(float), "kernel workspace");
    w->len[slot] = grow;
  }
  return w->ptr[slot];
}

size_t sf_workspace_bytes(void)
{
  workspace *w = ws_get(0);
  size_t b = 0;
  for (int i = 0; w && i < SF_WORKSPACE_SLOTS; i++) b += w->len[i] * sizeof(float);
  return b;
}

void sf_workspace_release(void)
{
  workspace *w = ws_get(0);
  if (!w) return;
  pthread_setspecific(ws_key, NULL);
  ws_free(w);
}
