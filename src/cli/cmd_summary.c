/* `scaffold summary RESULTS_DIR [-o baseline.json]`: Steps A-B of the report as JSON (spec
 * milabench.md §5): per group n, failures, total, train, gflops, per_device, peak_memory (and
 * time_to_solution for convergence tests). Written atomically with -o, else printed. The file
 * is a valid `report` RESULTS argument and a `--compare` baseline. */
#include <errno.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

int sf_cmd_summary(int argc, char **argv)
{
  const char *dir = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: scaffold summary RESULTS_DIR [-o baseline.json]\n");
      return 0;
    } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
      if (i + 1 >= argc) sf_die(SF_EXIT_USAGE, "summary: %s expects a file name", argv[i]);
      out = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      sf_die(SF_EXIT_USAGE, "summary: unknown option '%s' (usage: scaffold summary RESULTS_DIR [-o FILE])", argv[i]);
    } else if (!dir) dir = argv[i];
    else sf_die(SF_EXIT_USAGE, "summary: unexpected argument '%s'", argv[i]);
  }
  if (!dir) sf_die(SF_EXIT_USAGE, "summary: missing RESULTS_DIR (usage: scaffold summary RESULTS_DIR [-o FILE])");
  if (!sf_dir_exists(dir)) sf_die(SF_EXIT_USAGE, "summary: %s is not a directory", dir);
  sf_summary s;
  long n = sf_summary_from_dir(&s, dir, stderr);
  if (n < 0) exit(SF_EXIT_USAGE); /* the message is printed */
  if (n == 0)
    sf_die(SF_EXIT_USAGE, "summary: no results in %s (expected result files *.json with a job id)", dir);
  cJSON *j = sf_summary_to_json(&s);
  int rc = 0;
  if (out) {
    if (sf_json_write_atomic(out, j) != 0) {
      fprintf(stderr, "scaffold: error: cannot write %s: %s\n", out, strerror(errno));
      rc = SF_EXIT_FAILURE;
    } else {
      fprintf(stderr, "scaffold: wrote %s (%zu groups from %ld results)\n", out, s.n, n);
    }
  } else {
    char *text = sf_json_print(j);
    fputs(text, stdout);
    free(text);
  }
  cJSON_Delete(j);
  sf_summary_free(&s);
  return rc;
}
