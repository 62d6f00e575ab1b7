/* The golden-file reader (tests/common/golden.c): a file written here by hand is read back with its
 * names, dtypes, shapes and values; a bad magic, a wrong version, a truncated file and a missing
 * file each exit with status 1 and a message that names the problem and says to re-run
 * scripts/make_golden.py. The failing loads run in a child process whose stderr is captured. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "golden.h"
#include "scaffold/fsutil.h"
#include "testutil.h"

static size_t put(unsigned char *b, size_t o, const void *p, size_t n)
{
  memcpy(b + o, p, n);
  return o + n;
}

/* A valid file: "w" f32 (2,3) = 0..5, "n" i32 scalar 7, "d" f64 (1) = 0.25. Returns its length. */
static size_t make_file(unsigned char *b, const char *magic, uint32_t version)
{
  size_t o = put(b, 0, magic, 8);
  uint32_t u = version;
  o = put(b, o, &u, 4);
  u = 3;
  o = put(b, o, &u, 4);
  /* w */
  u = 1;
  o = put(b, o, &u, 4);
  o = put(b, o, "w", 1);
  u = SF_GOLDEN_F32;
  o = put(b, o, &u, 4);
  u = 2;
  o = put(b, o, &u, 4);
  int64_t sh[2] = {2, 3};
  o = put(b, o, sh, sizeof sh);
  float w[6] = {0, 1, 2, 3, 4, 5};
  o = put(b, o, w, sizeof w);
  /* n */
  u = 1;
  o = put(b, o, &u, 4);
  o = put(b, o, "n", 1);
  u = SF_GOLDEN_I32;
  o = put(b, o, &u, 4);
  u = 0;
  o = put(b, o, &u, 4);
  int32_t n = 7;
  o = put(b, o, &n, 4);
  /* d */
  u = 1;
  o = put(b, o, &u, 4);
  o = put(b, o, "d", 1);
  u = SF_GOLDEN_F64;
  o = put(b, o, &u, 4);
  u = 1;
  o = put(b, o, &u, 4);
  int64_t one = 1;
  o = put(b, o, &one, 8);
  double d = 0.25;
  o = put(b, o, &d, 8);
  return o;
}

/* Loads path in a child; returns its exit status and fills err with its stderr. */
static int load_in_child(const char *path, char *err, size_t errlen)
{
  int fd[2];
  if (pipe(fd) != 0) return -1;
  fflush(stdout); /* the child exits through exit(), which would flush a copy of our buffer */
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 2);
    close(fd[0]);
    sf_golden *g = sf_golden_load(path);
    sf_golden_free(g);
    _exit(0);
  }
  close(fd[1]);
  size_t len = 0;
  ssize_t k;
  while (len + 1 < errlen && (k = read(fd[0], err + len, errlen - 1 - len)) > 0) len += (size_t)k;
  err[len] = '\0';
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void expect_failure(const char *tag, const char *path, const char *needle)
{
  char err[2048];
  int st = load_in_child(path, err, sizeof err);
  SF_CHECK(st == 1, "%s: loader exit status %d, want 1 (stderr: %s)", tag, st, err);
  SF_CHECK(strstr(err, needle) != NULL, "%s: message lacks \"%s\": %s", tag, needle, err);
  SF_CHECK(strstr(err, "HINT") && strstr(err, "make_golden.py"), "%s: message lacks the re-run HINT: %s", tag, err);
  printf("     %s -> exit %d: %s", tag, st, err);
}

int main(void)
{
  char *dir = sf_test_tmpdir("golden");
  char *good = sf_path_join(dir, "good.bin"), *bad = sf_path_join(dir, "bad.bin");
  unsigned char buf[512];
  size_t len = make_file(buf, SF_GOLDEN_MAGIC, SF_GOLDEN_VERSION);
  SF_CHECK(sf_write_file_atomic(good, buf, len) == 0, "cannot write %s", good);

  sf_golden *g = sf_golden_load(good);
  size_t n = 0;
  const float *w = sf_golden_f32(g, "w", &n);
  SF_CHECK(g->count == 3, "count %d, want 3", g->count);
  SF_CHECK(n == 6 && w[0] == 0 && w[5] == 5, "w: %zu elements, w[5] = %g", n, n ? w[n - 1] : -1.0f);
  int64_t sh[2] = {2, 3};
  sf_golden_expect_shape(g, "w", 2, sh);
  SF_CHECK(sf_golden_int(g, "n") == 7, "n = %d, want 7", sf_golden_int(g, "n"));
  SF_CHECK(sf_golden_double(g, "d") == 0.25, "d = %g, want 0.25", sf_golden_double(g, "d"));
  SF_CHECK(sf_golden_find(g, "missing") == NULL, "find(missing) must be NULL");
  sf_golden_free(g);

  /* layout helpers are inverse of each other */
  float a[2 * 3 * 4 * 5 * 6], b[2 * 3 * 4 * 5 * 6], c[2 * 3 * 4 * 5 * 6];
  for (int i = 0; i < 720; i++) a[i] = (float)i;
  sf_golden_ncdhw_to_ndhwc(b, a, 6, 2, 3, 4 * 5);
  SF_CHECK(b[1] == a[120], "ncdhw->ndhwc: element (v0, c1) = %g, want %g", b[1], a[120]);
  sf_golden_ndhwc_to_ncdhw(c, b, 6, 2, 3, 4 * 5);
  SF_CHECK(memcmp(a, c, sizeof a) == 0, "ndhwc->ncdhw does not invert ncdhw->ndhwc");

  len = make_file(buf, "NOTGOLDN", SF_GOLDEN_VERSION);
  sf_write_file_atomic(bad, buf, len);
  expect_failure("bad magic", bad, "magic");
  len = make_file(buf, SF_GOLDEN_MAGIC, SF_GOLDEN_VERSION + 1);
  sf_write_file_atomic(bad, buf, len);
  expect_failure("newer version", bad, "version");
  len = make_file(buf, SF_GOLDEN_MAGIC, SF_GOLDEN_VERSION);
  sf_write_file_atomic(bad, buf, len - 3);
  expect_failure("truncated", bad, "truncated");
  char *missing = sf_path_join(dir, "absent.bin");
  expect_failure("missing file", missing, "cannot be read");

  free(missing);
  free(good);
  free(bad);
  sf_rm_rf(dir);
  free(dir);
  return sf_test_end();
}
