/* Shared by the fuzz targets (tests/fuzz/fuzz_*.c): how an input reaches a file-reading API, and how
 * a call that ends in sf_die comes back instead of exiting.
 *
 *   Inputs as files: sf_fuzz_memfd_path() writes the bytes to a memfd and returns "/proc/self/fd/N"
 *   (no disk I/O); sf_fuzz_tmp_path() gives a path in a private temporary directory (on /dev/shm
 *   when it exists), for APIs that need a real directory entry (directory walks, atomic writes).
 *
 *   sf_die: every target is linked with -Wl,--wrap=sf_die, so calls to sf_die from the libraries
 *   land in __wrap_sf_die (fuzz_common.c). Inside sf_fuzz_try it formats the message (so bad format
 *   arguments are still caught by the sanitizers), checks it, and longjmps back to sf_fuzz_try with
 *   the exit status; outside sf_fuzz_try an sf_die is a finding and aborts.
 *
 *   Memory of a dying call: the real program exits there, so the code under test does not free
 *   what it was building. In sanitizer builds sf_fuzz_try records every allocation made during the
 *   call that is still live (malloc/free hooks of the sanitizer runtime) and, when the call dies,
 *   frees those, so that error inputs neither exhaust memory nor count as leaks, while a call that
 *   returns keeps its memory and any leak of it is reported. Therefore the call must allocate
 *   everything it builds (initialise the struct inside fn, not before) and must not die while
 *   holding a FILE* or DIR* (their memory would be freed under stdio's feet). */
#ifndef SF_FUZZ_COMMON_H
#define SF_FUZZ_COMMON_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  jmp_buf env;
  int active;      /* 1 inside sf_fuzz_try */
  int status;      /* the exit status sf_die was called with */
  char msg[2048];  /* its message (truncated) */
} sf_fuzz_die_ctx;

extern sf_fuzz_die_ctx sf_fuzz_die;

/* Runs fn(arg). Returns 0 when it returned, or the status of the sf_die that ended it (its
 * message is in sf_fuzz_die.msg). */
int sf_fuzz_try(void (*fn)(void *arg), void *arg);

/* Aborts (a fuzzer finding) with the message when cond is false. */
#define SF_FUZZ_ASSERT(cond, ...)                                                                  \
  do {                                                                                             \
    if (!(cond)) sf_fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                             \
  } while (0)
__attribute__((noreturn, format(printf, 4, 5))) void sf_fuzz_fail(const char *file, int line,
                                                                  const char *cond, const char *fmt, ...);

/* The input as a file: a memfd whose path is returned (valid until the next call). */
const char *sf_fuzz_memfd_path(const uint8_t *data, size_t size);
/* A fresh path "<private dir>/<name>" (the directory is made once and removed at exit). */
const char *sf_fuzz_tmp_path(const char *name);
const char *sf_fuzz_tmp_dir(void);
/* Writes data to path (plain fopen/fwrite, not atomic). */
void sf_fuzz_write_file(const char *path, const uint8_t *data, size_t size);

/* /dev/null opened once, for output that only has to be produced, not read. */
#include <stdio.h>
FILE *sf_fuzz_devnull(void);

#endif
