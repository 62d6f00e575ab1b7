/* Waiting for a datagen task graph while its files reach the disk (src/datagen/flush.c): the
 * tasks write their files without fsync and count themselves done; the waiting thread flushes the
 * file system (syncfs) every SF_FLUSH_INTERVAL seconds meanwhile, so that the final flush, which
 * makes everything durable, has only the last files left instead of being a serial tail with every
 * worker idle (docs/datagen-performance.md). Internal to src/datagen. */
#ifndef SF_DATAGEN_FLUSH_H
#define SF_DATAGEN_FLUSH_H

#include <stdatomic.h>
#include <stddef.h>

#include "scaffold/datagen.h"

#define SF_FLUSH_INTERVAL 0.01 /* s between two flushes while the tasks run */

/* Flushes the file system holding dir (syncfs), traced as a main-thread "syncfs" span with
 * `trace: 1`. Returns 0, or -1 with errno set. */
int sf_datagen_syncfs(const char *dir);

/* Polls *done until it reaches total (each task adds 1 when it ends, whatever its outcome),
 * updating prog (may be NULL) and flushing dir every SF_FLUSH_INTERVAL s while new tasks ended;
 * then the final flush. Returns its status (0, or -1 with errno set). The caller still waits for
 * the StarPU tasks themselves (to free them). */
int sf_datagen_wait_flushing(const char *dir, atomic_long *done, long total, sf_progress *prog);

/* Writes len bytes to path atomically (temporary file ".tmp-<name>-<pid>" in the same directory,
 * as fsutil names them and sf_datagen_sweep_tmp removes them, then rename) without fsync: durable
 * at the caller's next flush. Returns 0, or -1 with errno set. */
int sf_datagen_write_nosync(const char *path, const void *data, size_t len);

#endif
