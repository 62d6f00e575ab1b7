/* Test helpers: every check prints what differed and by how much, and the test's exit status says
 * whether any check failed (0 = all passed, 1 = failures, 77 = skipped). Usage:
 *   SF_CHECK(cond, "fmt", ...);   SF_CHECK_CLOSE(name, got, want, n, rtol);   return sf_test_end();
 */
#ifndef SF_TESTUTIL_H
#define SF_TESTUTIL_H

#include <stddef.h>
#include <stdio.h>

extern int sf_test_failures;
extern int sf_test_checks;

#define SF_CHECK(cond, ...)                                                           \
  do {                                                                                \
    sf_test_checks++;                                                                 \
    if (!(cond)) {                                                                    \
      sf_test_failures++;                                                             \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
      fprintf(stderr, __VA_ARGS__);                                                   \
      fputc('\n', stderr);                                                            \
    }                                                                                 \
  } while (0)

/* Max relative error of got vs want, relative to max(|want|_inf, tiny). Prints the worst index. */
double sf_max_rel_err_f(const float *got, const float *want, size_t n, size_t *worst);
double sf_max_rel_err_d(const double *got, const double *want, size_t n, size_t *worst);
/* Checks max relative error <= rtol; prints name, the error, the worst element and both values. */
int sf_check_close_f(const char *name, const float *got, const float *want, size_t n, double rtol);
int sf_check_close_d(const char *name, const double *got, const double *want, size_t n, double rtol);
/* Bitwise equality of two float arrays; prints the first differing index. */
int sf_check_bitwise_f(const char *name, const float *got, const float *want, size_t n);
/* Prints "N checks, M failed" and returns the exit status. */
int sf_test_end(void);
/* Skip: prints "SKIPPED: <why>" and returns 77. */
int sf_test_skip(const char *why);
/* A fresh temporary directory (mkdtemp under $TMPDIR or /tmp); caller may remove it with sf_rm_rf. */
char *sf_test_tmpdir(const char *tag);
int sf_rm_rf(const char *path);

#endif
