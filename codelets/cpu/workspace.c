/* Per-thread scratch slots for the fast kernels (scaffold/workspace.h). */
#include "scaffold/workspace.h"

#include <stdlib.h>

#include "scaffold/common.h"

static _Thread_local float *ws_ptr[SF_WORKSPACE_SLOTS];
static _Thread_local size_t ws_len[SF_WORKSPACE_SLOTS];

float *sf_workspace_floats(int slot, size_t floats)
{
  SF_ASSERT(slot >= 0 && slot < SF_WORKSPACE_SLOTS);
  if (floats > ws_len[slot]) {
    free(ws_ptr[slot]);
    size_t grow = floats + floats / 8; /* a little headroom avoids repeated regrowth */
    ws_ptr[slot] = sf_aligned_alloc(grow * sizeof(float), "kernel workspace");
    ws_len[slot] = grow;
  }
  return ws_ptr[slot];
}

size_t sf_workspace_bytes(void)
{
  size_t b = 0;
  for (int i = 0; i < SF_WORKSPACE_SLOTS; i++) b += ws_len[i] * sizeof(float);
  return b;
}

void sf_workspace_release(void)
{
  for (int i = 0; i < SF_WORKSPACE_SLOTS; i++) {
    free(ws_ptr[i]);
    ws_ptr[i] = NULL;
    ws_len[i] = 0;
  }
}
