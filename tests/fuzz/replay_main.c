/* A plain driver for the fuzz targets, for builds without libFuzzer (gcc, the normal and the
 * sanitizer suites): calls LLVMFuzzerTestOneInput once per file named on the command line, or per
 * regular file of each directory named (sorted, hidden files skipped). Prints each input before
 * running it, so a crash names its input. Fails when no input was found at all. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scaffold/fsutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static long run_file(const char *path)
{
  size_t len = 0;
  char *data = sf_read_file(path, &len);
  if (!data) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    exit(1);
  }
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
  /* An exact-size copy, so that ASan sees a read past the input's end. */
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy) abort();
  memcpy(copy, data, len);
  free(data);
  LLVMFuzzerTestOneInput(copy, len);
  free(copy);
  return 1;
}

static long run_dir(const char *dir)
{
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: cannot open directory %s\n", dir);
    exit(1);
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *p = sf_path_join(dir, e->d_name);
    struct stat st;
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(p);
      continue;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      names = realloc(names, cap * sizeof *names);
      if (!names) abort();
    }
    names[n++] = p;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  long runs = 0;
  for (size_t i = 0; i < n; i++) {
    runs += run_file(names[i]);
    free(names[i]);
  }
  free(names);
  return runs;
}

int main(int argc, char **argv)
{
  long runs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s does not exist\n", argv[i]);
      return 1;
    }
    runs += S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
  }
  if (runs == 0) {
    fprintf(stderr, "replay: no inputs found in the %d path(s) given\n", argc - 1);
    return 1;
  }
  printf("replay: %ld input(s) ran without a finding\n", runs);
  return 0;
}
