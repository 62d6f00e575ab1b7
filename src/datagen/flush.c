/* Flushing while waiting (flush.h): the main thread of a datagen task graph, idle until the tasks
 * end, runs syncfs on the output's file system every SF_FLUSH_INTERVAL seconds, so the disk writes
 * of the files already done overlap with the tasks still running, and the closing syncfs (the
 * durability point) is short. One descriptor serves every flush of a wait, so a write-back error
 * reported to any of them makes the wait fail. */
#include "flush.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/trace.h"

static int flush_fd(int fd)
{
  double t0 = sf_trace_now();
  int rc = syncfs(fd), e = errno;
  sf_trace_span("syncfs", "io", t0, sf_trace_now()); /* trace: 1; on the main-thread track */
  errno = e;
  return rc;
}

int sf_datagen_syncfs(const char *dir)
{
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -1;
  int rc = flush_fd(fd), e = errno;
  close(fd);
  errno = e;
  return rc;
}

int sf_datagen_wait_flushing(const char *dir, atomic_long *done, long total, sf_progress *prog)
{
  int fd = open(dir, O_RDONLY | O_DIRECTORY), err = fd < 0 ? errno : 0;
  long d, flushed = 0;
  double last = sf_now();
  while ((d = atomic_load(done)) < total) {
    if (prog) sf_progress_update(prog, d);
    if (fd >= 0 && d > flushed && sf_now() - last >= SF_FLUSH_INTERVAL) {
      if (flush_fd(fd) != 0 && !err) err = errno;
      flushed = d;
      last = sf_now();
    } else {
      usleep(1000);
    }
  }
  if (fd >= 0) {
    if (total > 0 && flush_fd(fd) != 0 && !err) err = errno;
    close(fd);
  }
  errno = err;
  return err ? -1 : 0;
}

int sf_datagen_write_nosync(const char *path, const void *data, size_t len)
{
  const char *slash = strrchr(path, '/');
  size_t dl = slash ? (size_t)(slash - path) + 1 : 0, n = strlen(path) + 64;
  char *tmp = sf_malloc(n, "path");
  snprintf(tmp, n, "%.*s.tmp-%s-%ld", (int)dl, path, slash ? slash + 1 : path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  int rc = f ? 0 : -1, e = errno;
  if (f && len && fwrite(data, 1, len, f) != len) rc = -1, e = errno ? errno : EIO;
  if (f && fclose(f) != 0 && rc == 0) rc = -1, e = errno ? errno : EIO;
  if (rc == 0 && rename(tmp, path) != 0) rc = -1, e = errno;
  if (rc != 0 && f) unlink(tmp);
  free(tmp);
  errno = e;
  return rc;
}
