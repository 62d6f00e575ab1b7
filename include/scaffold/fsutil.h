/* File-system helpers shared by every module: atomic writes (temporary name in the same directory,
 * fsync, rename, so a crash leaves either the old file or the new one), mkdir -p, and small
 * readers. All return 0 on success and -1 with errno set on failure. */
#ifndef SF_FSUTIL_H
#define SF_FSUTIL_H

#include <stddef.h>
#include <stdio.h>

/* Writes len bytes to path atomically. */
int sf_write_file_atomic(const char *path, const void *data, size_t len);

/* Streaming atomic write: sf_atomic_open returns a FILE* on "<dir>/.tmp-<name>-<pid>"; write to it,
 * then sf_atomic_commit (fflush + fsync + fclose + rename) or sf_atomic_abort (fclose + unlink). */
typedef struct {
  FILE *f;
  char *path;
  char *tmp;
} sf_atomic_file;
int sf_atomic_open(sf_atomic_file *a, const char *path);
int sf_atomic_commit(sf_atomic_file *a);
void sf_atomic_abort(sf_atomic_file *a);

int sf_mkdir_p(const char *path);
/* Reads a whole file into a malloc'ed, NUL-terminated buffer; *len (if non-NULL) gets the size. */
char *sf_read_file(const char *path, size_t *len);
int sf_file_exists(const char *path);
int sf_dir_exists(const char *path);
/* rm -rf */
int sf_remove_tree(const char *path);
/* Joins path parts with '/' into a malloc'ed string. */
char *sf_path_join(const char *a, const char *b);

#endif
