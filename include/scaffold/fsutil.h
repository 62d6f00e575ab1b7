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

/* Exclusive lock on the file `path` (created if missing, never removed) with flock(2), for
 * generators that share a directory with other processes: the kernel releases it when the holder
 * exits or is killed, so a dead holder never blocks anyone. If another process holds it, prints one
 * line "scaffold: waiting for another process <what> (lock <path>)" to stderr and blocks until it
 * is free; SIGINT/SIGTERM while waiting (scaffold/signals.h) make it return -1 with errno EINTR. Returns the lock's file
 * descriptor (give it to sf_lock_release), or -1 with errno set. */
int sf_lock_acquire(const char *path, const char *what);
void sf_lock_release(int fd);

#endif
