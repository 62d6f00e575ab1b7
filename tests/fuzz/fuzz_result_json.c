/* Fuzz target: the harness's JSON readers (src/bench), fed the input as a file:
 *   sf_json_load            any JSON file (errors must come back as a message, never a crash);
 *   sf_summary_from_dir     the input as the only result file of a results directory
 *                           (`scaffold summary/report DIR`), then the report in text and HTML;
 *   sf_summary_from_json    the input as a summary JSON (`scaffold report --compare FILE`), then
 *                           sf_summary_to_json, which must read back to the same groups.
 * None of these may call sf_die (that aborts here): bad input is reported and skipped. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

/* Weights of 1 for every group, and the report with s as its own baseline. */
static void report(const sf_summary *s)
{
  sf_weights w = {0};
  w.n = s->n;
  w.names = sf_calloc(s->n + 1, sizeof *w.names, "names");
  w.w = sf_calloc(s->n + 1, sizeof *w.w, "weights");
  for (size_t i = 0; i < s->n; i++) w.names[i] = s->g[i].name, w.w[i] = 1.0;
  sf_report r;
  sf_report_compute(&r, s, s, &w, 1, 1, 1000.0);
  sf_report_print_text(&r, s, "fuzz", 1, sf_fuzz_devnull());
  SF_FUZZ_ASSERT(sf_report_write_html(&r, s, "fuzz <&>", 1, sf_fuzz_tmp_path("report.html")) == 0,
                 "sf_report_write_html failed");
  sf_report_free(&r);
  free(w.names);
  free(w.w);
}

static void check_summary_round_trip(const sf_summary *s)
{
  cJSON *j = sf_summary_to_json(s);
  sf_summary back;
  char *err = NULL;
  int rc = sf_summary_from_json(&back, j, &err);
  SF_FUZZ_ASSERT(rc == 0, "sf_summary_from_json(sf_summary_to_json(s)) failed: %s", err ? err : "?");
  /* Group names are unique in s only when they came from a directory; from JSON, duplicate keys of
   * one object are kept by cJSON, so compare counts and the sorted names position by position. */
  SF_FUZZ_ASSERT(back.n == s->n, "%zu groups written, %zu read back", s->n, back.n);
  for (size_t i = 0; i < s->n; i++) {
    SF_FUZZ_ASSERT(!strcmp(back.g[i].name, s->g[i].name), "group %zu: '%s' written, '%s' read back", i,
                   s->g[i].name, back.g[i].name);
    SF_FUZZ_ASSERT(back.g[i].n == s->g[i].n && back.g[i].ndev == s->g[i].ndev,
                   "group '%s': n %ld/%ld, devices %zu/%zu", s->g[i].name, s->g[i].n, back.g[i].n,
                   s->g[i].ndev, back.g[i].ndev);
  }
  sf_summary_free(&back);
  cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  /* The results directory holds just this file (rewritten in place for every input). */
  static char *dir, *file;
  if (!dir) {
    dir = sf_strdup(sf_fuzz_tmp_path("results"));
    SF_FUZZ_ASSERT(sf_mkdir_p(dir) == 0, "cannot make %s", dir);
    size_t n = strlen(dir) + 64;
    file = sf_malloc(n, "path");
    int w = snprintf(file, n, "%s/run.J0.0.20240101-000000-000000.json", dir);
    SF_FUZZ_ASSERT(w > 0 && (size_t)w < n, "result path truncated");
  }
  sf_fuzz_write_file(file, data, size);

  char *err = NULL;
  cJSON *j = sf_json_load(file, &err);
  if (!j) {
    SF_FUZZ_ASSERT(err && *err, "sf_json_load returned NULL without a message");
    free(err);
  } else {
    SF_FUZZ_ASSERT(err == NULL, "sf_json_load returned a document and a message: %s", err);
    char *key = sf_result_group_key(j);
    free(key);
    sf_summary s;
    if (sf_summary_from_json(&s, j, &err) == 0) {
      check_summary_round_trip(&s);
      report(&s);
      sf_summary_free(&s);
    } else {
      SF_FUZZ_ASSERT(err && *err, "sf_summary_from_json failed without a message");
      free(err);
    }
    cJSON_Delete(j);
  }

  sf_summary s;
  long n = sf_summary_from_dir(&s, dir, sf_fuzz_devnull());
  SF_FUZZ_ASSERT(n == 0 || n == 1, "one result file gave %ld results", n);
  SF_FUZZ_ASSERT(s.n == (size_t)n, "%ld results but %zu groups", n, s.n);
  if (n == 1) {
    SF_FUZZ_ASSERT(s.g[0].n == 1, "group '%s' has n = %ld from one file", s.g[0].name, s.g[0].n);
    check_summary_round_trip(&s);
    report(&s);
  }
  sf_summary_free(&s);
  return 0;
}
