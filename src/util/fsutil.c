/* Atomic writes, mkdir -p and small readers (scaffold/fsutil.h). */
#include "scaffold/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/signals.h"

char *sf_path_join(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b);
  char *p = sf_malloc(la + lb + 2, "path");
  memcpy(p, a, la);
  size_t k = la;
  if (la && a[la - 1] != '/') p[k++] = '/';
  memcpy(p + k, b, lb + 1);
  return p;
}

static char *tmp_name_for(const char *path)
{
  char *d1 = sf_strdup(path), *d2 = sf_strdup(path);
  const char *dir = dirname(d1), *base = basename(d2);
  size_t n = strlen(dir) + strlen(base) + 64;
  char *tmp = sf_malloc(n, "path");
  snprintf(tmp, n, "%s/.tmp-%s-%ld", dir, base, (long)getpid());
  free(d1);
  free(d2);
  return tmp;
}

int sf_atomic_open(sf_atomic_file *a, const char *path)
{
  a->path = sf_strdup(path);
  a->tmp = tmp_name_for(path);
  a->f = fopen(a->tmp, "wb");
  if (!a->f) {
    int e = errno;
    free(a->path);
    free(a->tmp);
    a->path = a->tmp = NULL;
    errno = e;
    return -1;
  }
  return 0;
}

int sf_atomic_commit(sf_atomic_file *a)
{
  int rc = 0, e = 0;
  if (fflush(a->f) != 0 || ferror(a->f)) rc = -1, e = errno ? errno : EIO;
  if (rc == 0 && fsync(fileno(a->f)) != 0) rc = -1, e = errno;
  if (fclose(a->f) != 0 && rc == 0) rc = -1, e = errno ? errno : EIO;
  a->f = NULL;
  if (rc == 0 && rename(a->tmp, a->path) != 0) rc = -1, e = errno;
  if (rc != 0) unlink(a->tmp);
  free(a->path);
  free(a->tmp);
  a->path = a->tmp = NULL;
  errno = e;
  return rc;
}

void sf_atomic_abort(sf_atomic_file *a)
{
  if (a->f) fclose(a->f);
  if (a->tmp) unlink(a->tmp);
  free(a->path);
  free(a->tmp);
  a->f = NULL;
  a->path = a->tmp = NULL;
}

int sf_write_file_atomic(const char *path, const void *data, size_t len)
{
  sf_atomic_file a;
  if (sf_atomic_open(&a, path) != 0) return -1;
  if (len && fwrite(data, 1, len, a.f) != len) {
    int e = errno ? errno : EIO;
    sf_atomic_abort(&a);
    errno = e;
    return -1;
  }
  return sf_atomic_commit(&a);
}

int sf_mkdir_p(const char *path)
{
  char *p = sf_strdup(path);
  size_t n = strlen(p);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] == '/' || p[i] == '\0') {
      char c = p[i];
      p[i] = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST) {
        int e = errno;
        free(p);
        errno = e;
        return -1;
      }
      p[i] = c;
    }
  }
  free(p);
  if (!sf_dir_exists(path)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

char *sf_read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = sf_malloc(cap, "file contents");
  for (;;) {
    if (n + 1 >= cap) {
      cap *= 2;
      char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        errno = ENOMEM;
        return NULL;
      }
      buf = nb;
    }
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

int sf_file_exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int sf_dir_exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

int sf_remove_tree(const char *path)
{
  if (!sf_dir_exists(path) && !sf_file_exists(path)) return 0;
  return nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

int sf_lock_acquire(const char *path, const char *what)
{
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  if (errno != EWOULDBLOCK) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  fprintf(stderr, "scaffold: waiting for another process %s (lock %s)\n", what, path);
  fflush(stderr);
  /* polled, not a blocking flock: the handlers of scaffold/signals.h use SA_RESTART, which would
   * restart a blocking flock after SIGINT/SIGTERM instead of letting the caller stop */
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || sf_stop_requested()) {
      int e = errno == EWOULDBLOCK ? EINTR : errno;
      close(fd);
      errno = e;
      return -1;
    }
    usleep(20000);
  }
  return fd;
}

void sf_lock_release(int fd)
{
  if (fd >= 0) close(fd); /* closing the only descriptor releases the flock */
}
