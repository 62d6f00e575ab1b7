/* `scaffold report RESULTS [--weights W] [--compare BASE] [--price P] [--html FILE]
 * [--compare-devices] [--penalize-variance] [--title T]`: the milabench report (spec
 * milabench.md §4) of a results directory or a summary JSON: the table, the Scores (with
 * --weights), the device comparison, and optionally a self-contained HTML file. */
#include <math.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"

static void usage(FILE *f)
{
  fprintf(f,
          "usage: scaffold report RESULTS [--weights W] [--compare BASELINE] [--price P] [--html FILE]\n"
          "                       [--compare-devices] [--penalize-variance] [--title T]\n\n"
          "RESULTS and BASELINE are a results directory or a summary JSON (scaffold summary).\n"
          "W is a weights file or a suite name (configs/weights/<name>.yml). See docs/harness.md.\n");
}

static const char *value(int argc, char **argv, int *i)
{
  if (*i + 1 >= argc) sf_die(SF_EXIT_USAGE, "report: option %s expects a value", argv[*i]);
  return argv[++*i];
}

int sf_cmd_report(int argc, char **argv)
{
  const char *results = NULL, *weights = NULL, *compare = NULL, *html = NULL, *title = NULL;
  int compare_devices = 0, penalize = 0, has_price = 0;
  double price = NAN;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--weights")) weights = value(argc, argv, &i);
    else if (!strcmp(a, "--compare")) compare = value(argc, argv, &i);
    else if (!strcmp(a, "--html")) html = value(argc, argv, &i);
    else if (!strcmp(a, "--title")) title = value(argc, argv, &i);
    else if (!strcmp(a, "--compare-devices")) compare_devices = 1;
    else if (!strcmp(a, "--penalize-variance")) penalize = 1;
    else if (!strcmp(a, "--price")) {
      const char *v = value(argc, argv, &i);
      char *end;
      price = strtod(v, &end);
      if (end == v || *end || !(price > 0) || !isfinite(price))
        sf_die(SF_EXIT_USAGE, "report: --price '%s': expected a positive number", v);
      has_price = 1;
    } else if (a[0] == '-' && a[1]) {
      usage(stderr);
      sf_die(SF_EXIT_USAGE, "report: unknown option '%s'", a);
    } else if (!results) results = a;
    else sf_die(SF_EXIT_USAGE, "report: unexpected argument '%s' (RESULTS is already '%s')", a, results);
  }
  if (!results) {
    usage(stderr);
    sf_die(SF_EXIT_USAGE, "report: missing RESULTS (a results directory or a summary JSON)");
  }

  sf_summary s, base;
  long n = sf_summary_load(&s, results, stderr);
  if (n < 0) exit(SF_EXIT_USAGE); /* the message is printed */
  if (n == 0)
    sf_die(SF_EXIT_USAGE, "report: no results to report in %s (expected result files *.json with a job id, "
                          "written by `scaffold jobs` or `scaffold run --job-id`)",
           results);
  if (compare) {
    long nb = sf_summary_load(&base, compare, stderr);
    if (nb < 0) exit(SF_EXIT_USAGE);
    if (nb == 0) sf_die(SF_EXIT_USAGE, "report: the baseline %s holds no results", compare);
    char *why = sf_summary_identity_warning(&s, results, &base, compare);
    if (why) fprintf(stderr, "scaffold: %s\n", why);
    free(why);
  }
  sf_weights w;
  if (weights) {
    char *wp = sf_resolve_config_path("weights", weights);
    if (sf_weights_load(&w, wp) != 0) exit(SF_EXIT_USAGE);
    free(wp);
  }
  sf_report r;
  sf_report_compute(&r, &s, compare ? &base : NULL, weights ? &w : NULL, penalize, has_price, price);
  sf_report_print_text(&r, &s, title, compare_devices, stdout);
  int rc = 0;
  if (html) {
    if (sf_report_write_html(&r, &s, title, compare_devices, html) != 0) rc = SF_EXIT_FAILURE;
    else fprintf(stderr, "scaffold: wrote %s\n", html);
  }
  sf_report_free(&r);
  if (weights) sf_weights_free(&w);
  if (compare) sf_summary_free(&base);
  sf_summary_free(&s);
  return rc;
}
