/* `scaffold compare A B`: two result sets (results directories or summary JSONs) side by side per
 * test, with the ratio B/A and whether the difference is within the runs' spread (docs/harness.md). */
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: scaffold compare A B\n\n"
             "A and B are results directories or summary JSONs (scaffold summary). Prints, per test, the\n"
             "steady samples/s of each (mean, population std, run count), B/A, and whether the difference\n"
             "is within the runs' spread (|mean_B - mean_A| <= std_A + std_B). See docs/harness.md.\n");
}

int sf_cmd_compare(int argc, char **argv)
{
  const char *p[2] = {NULL, NULL};
  int np = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
    if (argv[i][0] == '-' && argv[i][1]) {
      usage(stderr);
      sf_die(SF_EXIT_USAGE, "compare: unknown option '%s'", argv[i]);
    }
    if (np == 2) sf_die(SF_EXIT_USAGE, "compare: unexpected argument '%s' (A and B are '%s' and '%s')", argv[i], p[0], p[1]);
    p[np++] = argv[i];
  }
  if (np != 2) {
    usage(stderr);
    sf_die(SF_EXIT_USAGE, "compare: expected two result sets A and B, got %d", np);
  }
  sf_summary s[2];
  for (int k = 0; k < 2; k++) {
    long n = sf_summary_load(&s[k], p[k], stderr);
    if (n < 0) exit(SF_EXIT_USAGE); /* the message is printed */
    if (n == 0) sf_die(SF_EXIT_USAGE, "compare: no results in %s (expected result files *.json with a job id, or a summary JSON)", p[k]);
  }
  char *why = sf_summary_identity_warning(&s[1], p[1], &s[0], p[0]); /* A is the baseline of B/A */
  if (why) fprintf(stderr, "scaffold: %s\n", why);
  free(why);
  sf_compare_row *rows;
  size_t n = sf_compare_rows(&s[0], &s[1], &rows);
  sf_compare_print(rows, n, p[0], p[1], stdout);
  free(rows);
  sf_summary_free(&s[0]);
  sf_summary_free(&s[1]);
  return 0;
}
