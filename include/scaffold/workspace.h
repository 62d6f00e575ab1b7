/* Per-thread scratch memory for the fast kernels (im2col buffers and the like).
 * Each thread (StarPU worker) owns a few slots that grow to the largest size requested and are
 * reused afterwards, so steady-state training does no allocation. Slot i is independent of slot j,
 * so one kernel can hold several buffers at once. */
#ifndef SF_WORKSPACE_H
#define SF_WORKSPACE_H

#include <stddef.h>

#define SF_WORKSPACE_SLOTS 4

/* A 64-byte aligned buffer of at least `floats` floats in this thread's slot `slot`.
 * The contents are undefined. Valid until the next call with the same slot on this thread. */
float *sf_workspace_floats(int slot, size_t floats);
/* Bytes currently held by this thread's workspace (for RSS accounting and tests). */
size_t sf_workspace_bytes(void);
/* Releases this thread's workspace. */
void sf_workspace_release(void);

#endif
