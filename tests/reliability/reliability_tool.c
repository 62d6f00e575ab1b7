/* Helper of the reliability tests (the scripts in tests/reliability; not a test by itself):
 *   reliability_tool npy-check DIR...       every *.npy under DIR (not .tmp-* files, nor .tmp_* staging
 *                                           directories) must be a complete .npy; prints "npy-ok N"
 *                                           or names the first bad file (exit 1)
 *   reliability_tool ckpt-version IN OUT V  rewrites checkpoint IN as format version V, with a valid
 *                                           checksum (a checkpoint "from another version")
 *   reliability_tool ckpt-params FILE       prints "params <n> fnv1a64 <hex>" of the parameters alone */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "scaffold/trainer.h"

static long n_ok, n_bad;

static void check_tree(const char *dir)
{
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "cannot open directory %s\n", dir);
    n_bad++;
    return;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (!strncmp(e->d_name, ".tmp", 4)) continue; /* unpublished: .tmp-<file>-<pid>, .tmp_<staging> */
    char *p = sf_path_join(dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      check_tree(p);
    } else {
      size_t l = strlen(e->d_name);
      if (l > 4 && !strcmp(e->d_name + l - 4, ".npy")) {
        sf_npy h;
        char err[1024];
        if (sf_npy_read_header(p, &h, err, sizeof err) == 0) {
          n_ok++;
        } else {
          if (!n_bad) fprintf(stderr, "bad .npy: %s\n", err);
          n_bad++;
        }
      }
    }
    free(p);
  }
  closedir(d);
}

static int ckpt_version(const char *in, const char *out, unsigned v)
{
  size_t len;
  char *b = sf_read_file(in, &len);
  if (!b || len < 16 + 8) {
    fprintf(stderr, "cannot read checkpoint %s\n", in);
    return 1;
  }
  for (int i = 0; i < 4; i++) b[8 + i] = (char)(v >> (8 * i));
  uint64_t h = sf_fnv1a64(SF_FNV1A64_INIT, b, len - 8);
  for (int i = 0; i < 8; i++) b[len - 8 + i] = (char)(h >> (8 * i));
  int rc = sf_write_file_atomic(out, b, len);
  free(b);
  if (rc) fprintf(stderr, "cannot write %s\n", out);
  return rc ? 1 : 0;
}

static int ckpt_params(const char *path)
{
  sf_ckpt_state s;
  char err[2048];
  if (sf_checkpoint_read(path, NULL, &s, NULL, NULL, NULL, err, sizeof err) != SF_CKPT_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  size_t n = (size_t)s.topo.nparams;
  float *p = sf_malloc(n * sizeof *p + 4, "params");
  if (sf_checkpoint_read(path, &s.topo, &s, p, NULL, NULL, err, sizeof err) != SF_CKPT_OK) {
    fprintf(stderr, "%s\n", err);
    free(p);
    return 1;
  }
  printf("params %zu fnv1a64 %016llx epoch %ld\n", n,
         (unsigned long long)sf_fnv1a64(SF_FNV1A64_INIT, p, n * sizeof *p), s.epoch);
  free(p);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc >= 3 && !strcmp(argv[1], "npy-check")) {
    for (int i = 2; i < argc; i++) check_tree(argv[i]);
    if (n_bad) {
      fprintf(stderr, "%ld of %ld .npy files are not complete\n", n_bad, n_ok + n_bad);
      return 1;
    }
    printf("npy-ok %ld\n", n_ok);
    return 0;
  }
  if (argc == 5 && !strcmp(argv[1], "ckpt-version")) return ckpt_version(argv[2], argv[3], (unsigned)atoi(argv[4]));
  if (argc == 3 && !strcmp(argv[1], "ckpt-params")) return ckpt_params(argv[2]);
  fprintf(stderr, "usage: reliability_tool npy-check DIR... | ckpt-version IN OUT V | ckpt-params FILE\n");
  return 2;
}
