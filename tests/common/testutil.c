/* Implementation of tests/common/testutil.h. */
#include "testutil.h"

#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sf_test_failures = 0;
int sf_test_checks = 0;

double sf_max_rel_err_f(const float *got, const float *want, size_t n, size_t *worst)
{
  double scale = 1e-30, err = 0;
  size_t wi = 0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - (double)want[i]);
    if (isnan(got[i]) != isnan(want[i])) e = INFINITY;
    if (e > err) {
      err = e;
      wi = i;
    }
  }
  if (worst) *worst = wi;
  return err / scale;
}

double sf_max_rel_err_d(const double *got, const double *want, size_t n, size_t *worst)
{
  double scale = 1e-300, err = 0;
  size_t wi = 0;
  for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < n; i++) {
    double e = fabs(got[i] - want[i]);
    if (isnan(got[i]) != isnan(want[i])) e = INFINITY;
    if (e > err) {
      err = e;
      wi = i;
    }
  }
  if (worst) *worst = wi;
  return err / scale;
}

int sf_check_close_f(const char *name, const float *got, const float *want, size_t n, double rtol)
{
  size_t w = 0;
  double e = sf_max_rel_err_f(got, want, n, &w);
  sf_test_checks++;
  if (!(e <= rtol)) {
    sf_test_failures++;
    fprintf(stderr, "FAIL %s: max relative error %.3e > %.1e at [%zu]: got %.9g want %.9g (n=%zu)\n", name, e,
            rtol, w, n ? got[w] : 0.0f, n ? want[w] : 0.0f, n);
    return 0;
  }
  printf("ok   %s: max relative error %.3e <= %.1e (n=%zu)\n", name, e, rtol, n);
  return 1;
}

int sf_check_close_d(const char *name, const double *got, const double *want, size_t n, double rtol)
{
  size_t w = 0;
  double e = sf_max_rel_err_d(got, want, n, &w);
  sf_test_checks++;
  if (!(e <= rtol)) {
    sf_test_failures++;
    fprintf(stderr, "FAIL %s: max relative error %.3e > %.1e at [%zu]: got %.17g want %.17g (n=%zu)\n", name, e,
            rtol, w, n ? got[w] : 0.0, n ? want[w] : 0.0, n);
    return 0;
  }
  printf("ok   %s: max relative error %.3e <= %.1e (n=%zu)\n", name, e, rtol, n);
  return 1;
}

int sf_check_bitwise_f(const char *name, const float *got, const float *want, size_t n)
{
  sf_test_checks++;
  for (size_t i = 0; i < n; i++) {
    if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      sf_test_failures++;
      fprintf(stderr, "FAIL %s: not bitwise equal at [%zu]: got %.9g want %.9g (n=%zu)\n", name, i, got[i], want[i],
              n);
      return 0;
    }
  }
  printf("ok   %s: bitwise equal (n=%zu)\n", name, n);
  return 1;
}

int sf_test_end(void)
{
  printf("%d checks, %d failed\n", sf_test_checks, sf_test_failures);
  if (sf_test_checks == 0) {
    fprintf(stderr, "FAIL: the test ran no checks\n");
    return 1;
  }
  return sf_test_failures ? 1 : 0;
}

int sf_test_skip(const char *why)
{
  printf("SKIPPED: %s\n", why);
  return 77;
}

char *sf_test_tmpdir(const char *tag)
{
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  size_t n = strlen(base) + strlen(tag) + 32;
  char *p = malloc(n);
  snprintf(p, n, "%s/sf-%s-XXXXXX", base, tag);
  if (!mkdtemp(p)) {
    perror("mkdtemp");
    exit(1);
  }
  return p;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

int sf_rm_rf(const char *path) { return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }
