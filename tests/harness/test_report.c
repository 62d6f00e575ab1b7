/* Report formulas (spec milabench.md §4) on a hand-made results directory with answers worked
 * out by hand in this file: grouping (per-device by name, progression by name.<devices>), the
 * job_id/sub_job filter, failures (success false, NaN metric), population std, perf, std%,
 * perf_adj with and without --penalize-variance, per-device pools, the score with a weights row
 * missing from the results and a result row missing from the weights, the baseline ratio,
 * price/RPP, the device-comparison matrix, and the text output of `scaffold report`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/fsutil.h"
#include "testutil.h"

static const char *dir;
static int nfile;

/* One result file; steady values are given as rates lists of 5 equal entries (steady = value). */
static void result(const char *name, const char *job_id, int success, const char *metrics, const char *scheme,
                   int device, int device_count, const char *timings, double prog_time, double rss, int sub_job)
{
  char path[512];
  snprintf(path, sizeof path, "%s/r%02d.json", dir, nfile++);
  FILE *f = fopen(path, "w");
  fprintf(f, "{\"name\": \"%s\", \"job_id\": ", name);
  if (job_id) fprintf(f, "\"%s\"", job_id);
  else fprintf(f, "null");
  if (scheme) fprintf(f, ", \"job\": {\"partition_scheme\": {\"type\": \"%s\"}}", scheme);
  if (device >= 0) fprintf(f, ", \"device\": %d", device);
  if (sub_job) fprintf(f, ", \"sub_job\": true");
  fprintf(f, ", \"device_count\": %d, \"success\": %s, \"metrics\": %s, \"peak_rss_mib\": %g,", device_count,
          success ? "true" : "false", metrics, rss);
  fprintf(f, " \"timings\": {\"program\": {\"time\": %g}%s%s}}\n", prog_time, *timings ? ", " : "", timings);
  fclose(f);
}

static char *train(double v)
{
  static char buf[8][256];
  static int k;
  char *b = buf[k++ % 8];
  snprintf(b, 256, "\"train\": {\"rates\": [%g, %g, %g, %g, %g], \"gflops_rates\": [1, 1, 1, 1, 1]}", v, v, v, v, v);
  return b;
}

static void close_(const char *what, double got, double want)
{
  int ok = (isnan(want) && isnan(got)) || fabs(got - want) <= 1e-9 * fmax(1, fabs(want));
  SF_CHECK(ok, "%s: got %.12g, want %.12g (diff %.3g)", what, got, want, got - want);
}

static const sf_report_row *row(const sf_report *r, const char *name)
{
  for (size_t i = 0; i < r->nrows; i++)
    if (!strcmp(r->rows[i].name, name)) return &r->rows[i];
  SF_CHECK(0, "row %s missing from the report", name);
  return NULL;
}

int main(void)
{
  char *tmp = sf_test_tmpdir("report");
  char rdir[512];
  snprintf(rdir, sizeof rdir, "%s/results", tmp);
  sf_mkdir_p(rdir);
  dir = rdir;
  const char *ok = "{\"loss\": 0.5}";
  /* t.a: per-device, steady 100 (dev 0), 110 (dev 1), 120 (dev 0). */
  result("t.a", "0.0", 1, ok, "per-device", 0, 1, train(100), 10, 50, 0);
  result("t.a", "0.1", 1, ok, "per-device", 1, 1, train(110), 12, 70, 0);
  result("t.a", "1.0", 1, ok, "per-device", 0, 1, train(120), 14, 60, 0);
  /* t.b: 3 good (40, 50, 60), one success false, one NaN (null) metric -> n 5, fail 2. */
  result("t.b", "0.0", 1, ok, "per-device", 0, 1, train(40), 5, 10, 0);
  result("t.b", "1.0", 1, ok, "per-device", 0, 1, train(50), 5, 10, 0);
  result("t.b", "2.0", 1, ok, "per-device", 0, 1, train(60), 5, 10, 0);
  result("t.b", "3.0", 0, ok, "per-device", 0, 1, train(999), 5, 10, 0);
  result("t.b", "4.0", 1, "{\"loss\": null}", "per-device", 0, 1, train(999), 5, 10, 0);
  /* t.scale: progression; 1 device: 200; 2 devices: ranks train_0 = 180, train_1 = 190. */
  result("t.scale", "0.0", 1, ok, "progression", -1, 1, train(200), 3, 10, 0);
  char two[600];
  {
    char a[256], b[256];
    snprintf(a, sizeof a, "%s", train(180));
    snprintf(b, sizeof b, "%s", train(190));
    snprintf(two, sizeof two, "\"train_0\"%s, \"train_1\"%s", a + 7, b + 7);
  }
  result("t.scale", "0.1", 1, ok, "progression", -1, 2, two, 3, 10, 0);
  /* t.extra: normal scheme, steady 77, not in the weights. */
  result("t.extra", "0.0", 1, ok, "normal", -1, 1, train(77), 3, 10, 0);
  /* Left out: a rerun (job_id null) and a sub-job. */
  result("t.a", NULL, 1, ok, "per-device", 0, 1, train(5000), 1, 10, 0);
  result("t.a", "9.0", 1, ok, "per-device", 0, 1, train(5000), 1, 10, 1);

  /* ---- Steps A-B ---- */
  sf_summary s;
  FILE *diag = tmpfile();
  long used = sf_summary_from_dir(&s, rdir, diag);
  SF_CHECK(used == 11, "results used: got %ld, want 11 (rerun and sub-job left out)", used);
  SF_CHECK(s.n == 5, "groups: got %zu, want 5 (t.a t.b t.extra t.scale.1 t.scale.2)", s.n);
  const char *want_names[] = {"t.a", "t.b", "t.extra", "t.scale.1", "t.scale.2"};
  for (size_t i = 0; i < 5 && i < s.n; i++)
    SF_CHECK(!strcmp(s.g[i].name, want_names[i]), "group %zu: got %s, want %s", i, s.g[i].name, want_names[i]);
  const double std3 = sqrt(200.0 / 3.0); /* population std of {x-10, x, x+10} */
  const sf_group *a = sf_summary_find(&s, "t.a"), *b = sf_summary_find(&s, "t.b");
  const sf_group *s2 = sf_summary_find(&s, "t.scale.2");
  if (a) {
    SF_CHECK(a->n == 3 && a->failures == 0, "t.a n/fail: %ld/%ld", a->n, a->failures);
    close_("t.a train.mean", a->train.mean, 110);
    close_("t.a train.std (population)", a->train.std, std3);
    close_("t.a train.min", a->train.min, 100);
    close_("t.a total.mean", a->total.mean, 12);
    close_("t.a peak_memory", a->peak_memory, 70);
    SF_CHECK(a->ndev == 2, "t.a per-device pools: got %zu, want 2", a->ndev);
    if (a->ndev == 2) {
      close_("t.a dev0 mean", a->per_device[0].mean, 110);
      close_("t.a dev0 n", a->per_device[0].n, 2);
      close_("t.a dev1 mean", a->per_device[1].mean, 110);
    }
  }
  if (b) {
    SF_CHECK(b->n == 5 && b->failures == 2, "t.b n/fail: got %ld/%ld, want 5/2", b->n, b->failures);
    close_("t.b train.mean (good runs only)", b->train.mean, 50);
    close_("t.b train.n", b->train.n, 3);
  }
  if (s2) {
    SF_CHECK(s2->n == 1, "t.scale.2 n: got %ld, want 1", s2->n);
    close_("t.scale.2 train.n (one per rank)", s2->train.n, 2);
    close_("t.scale.2 train.mean", s2->train.mean, 185);
    close_("t.scale.2 train.std", s2->train.std, 5);
  }

  /* ---- weights and baseline ---- */
  char wpath[512], bpath[512];
  snprintf(wpath, sizeof wpath, "%s/weights.yml", tmp);
  FILE *f = fopen(wpath, "w");
  fprintf(f, "t.a: {weight: 8}\nt.b: 4\nt.scale.1: {weight: 2}\nt.scale.2: {weight: 2}\nt.missing: {weight: 8}\n");
  fclose(f);
  snprintf(bpath, sizeof bpath, "%s/base.json", tmp);
  f = fopen(bpath, "w");
  fprintf(f, "{\"t.a\": {\"n\": 3, \"failures\": 1, \"train\": {\"n\": 3, \"mean\": 100, \"std\": 5}},\n"
             " \"t.b\": {\"n\": 3, \"failures\": 0, \"train\": {\"n\": 3, \"mean\": 40, \"std\": 4}},\n"
             " \"t.scale.1\": {\"n\": 1, \"failures\": 0, \"train\": {\"n\": 1, \"mean\": 250, \"std\": 0}},\n"
             " \"t.missing\": {\"n\": 1, \"failures\": 0, \"train\": {\"n\": 1, \"mean\": 10, \"std\": 1}}}\n");
  fclose(f);
  sf_weights w;
  SF_CHECK(sf_weights_load(&w, wpath) == 0 && w.n == 5, "weights: loaded %zu, want 5", w.n);
  sf_summary base;
  SF_CHECK(sf_summary_load(&base, bpath, stderr) == 4, "baseline summary: want 4 groups");

  /* ---- Steps C-D, default (no variance penalty) ---- */
  sf_report r;
  sf_report_compute(&r, &s, &base, &w, 0, 1, 1000.0);
  SF_CHECK(r.nrows == 6, "rows: got %zu, want 6 (union of results, baseline, weights)", r.nrows);
  const sf_report_row *ra = row(&r, "t.a"), *rb = row(&r, "t.b"), *rs1 = row(&r, "t.scale.1");
  const sf_report_row *rm = row(&r, "t.missing"), *rx = row(&r, "t.extra");
  if (ra) {
    close_("t.a perf", ra->perf, 110);
    close_("t.a std%", ra->std_pct, std3 / 110);
    close_("t.a perf_adj", ra->perf_adj, 110);
    close_("t.a perf_base", ra->perf_base, 100);
    close_("t.a perf_ratio", ra->perf_ratio, 1.1);
    close_("t.a perf_ratio_adj", ra->perf_ratio_adj, 1.1);
    close_("t.a weight", ra->weight, 8);
  }
  if (rb) {
    close_("t.b perf_adj = (1 - 2/5) * 50", rb->perf_adj, 30);
    close_("t.b perf_ratio = 50/40", rb->perf_ratio, 1.25);
    close_("t.b perf_ratio_adj = 30/40 (baseline failures not applied)", rb->perf_ratio_adj, 0.75);
  }
  if (rs1) close_("t.scale.1 perf_ratio", rs1->perf_ratio, 0.8);
  if (rm) {
    SF_CHECK(isnan(rm->perf) && isnan(rm->n), "t.missing: perf/n must be NaN (got %g/%g)", rm->perf, rm->n);
    close_("t.missing perf_base_adj", rm->perf_base_adj, 10);
  }
  if (rx) SF_CHECK(isnan(rx->weight), "t.extra weight must be NaN, got %g", rx->weight);
  close_("failure rate = 2 / 11", r.failure_rate, 2.0 / 11.0);
  /* t.missing: term skipped, weight 8 kept; t.extra (weight NaN) left out entirely. */
  double score = exp((8 * log(110.0) + 4 * log(30.0) + 2 * log(200.0) + 2 * log(185.0)) / 24.0);
  close_("score", r.score, score);
  /* baseline: t.scale.2 has no baseline (term skipped), t.missing has one (10). */
  double score_base = exp((8 * log(100.0) + 4 * log(40.0) + 2 * log(250.0) + 8 * log(10.0)) / 24.0);
  close_("score (baseline)", r.score_base, score_base);
  close_("ratio", r.ratio, score / score_base);
  close_("RPP = price / score", r.rpp, 1000.0 / score);
  sf_report_free(&r);

  /* ---- --penalize-variance ---- */
  sf_report_compute(&r, &s, &base, &w, 1, 0, 0);
  ra = row(&r, "t.a");
  rb = row(&r, "t.b");
  if (ra) {
    close_("t.a perf_adj penalized = 110 - std", ra->perf_adj, 110 - std3);
    close_("t.a perf_base_adj penalized = 100 - 5", ra->perf_base_adj, 95);
    close_("t.a perf_ratio_adj penalized", ra->perf_ratio_adj, (110 - std3) / 95);
    close_("t.a perf_ratio stays raw", ra->perf_ratio, 1.1);
  }
  if (rb) close_("t.b perf_adj penalized = 0.6 * (50 - std)", rb->perf_adj, 0.6 * (50 - std3));
  double pscore = exp((8 * log(110 - std3) + 4 * log(0.6 * (50 - std3)) + 2 * log(200.0) + 2 * log(185.0 - 5)) / 24.0);
  close_("score penalized", r.score, pscore);
  double pbase = exp((8 * log(95.0) + 4 * log(36.0) + 2 * log(250.0) + 8 * log(9.0)) / 24.0);
  close_("score (baseline) penalized", r.score_base, pbase);
  SF_CHECK(isnan(r.rpp) && !r.has_price, "no --price: RPP must be absent");
  sf_report_free(&r);

  /* ---- device comparison: t.a only (devices exactly {0, 1}) ---- */
  const sf_group *rows[8];
  double cells[16];
  size_t G = 0;
  size_t nr = sf_report_device_matrix(&s, "min", rows, cells, &G);
  SF_CHECK(nr == 1 && G == 2, "device matrix: got %zu rows x %zu devices, want 1 x 2", nr, G);
  if (nr == 1 && G == 2) {
    close_("t.a min dev0 / best", cells[0], 100.0 / 110.0);
    close_("t.a min dev1 / best", cells[1], 1.0);
  }

  /* ---- the CLI text (same numbers, milarun's formats) ---- */
  const char *bin = getenv("SF_BINARY");
  if (bin) {
    char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s report %s --weights %s --compare %s --price 1000 --title 'T T' 2>/dev/null", bin,
             rdir, wpath, bpath);
    FILE *p = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    SF_CHECK(st == 0, "`%s` exited with %d", cmd, st);
    char want[128];
    snprintf(want, sizeof want, "%-21s %10.2f\n", "Score:", score);
    SF_CHECK(strstr(out, want), "text report lacks '%s'; got:\n%s", want, out);
    snprintf(want, sizeof want, "%-21s %9.2f%% (FAIL)\n", "Failure rate:", 100.0 * 2 / 11);
    SF_CHECK(strstr(out, want), "text report lacks '%s'", want);
    snprintf(want, sizeof want, "%-21s %10.2f\n", "Ratio:", score / score_base);
    SF_CHECK(strstr(out, want), "text report lacks '%s'", want);
    snprintf(want, sizeof want, "%-21s %10.2f\n", "RPP (Price / Score):", 1000.0 / score);
    SF_CHECK(strstr(out, want), "text report lacks '%s'", want);
    SF_CHECK(strstr(out, "===\nT T\n===\n"),
             "title framed by '=' lines; got:\n%s", out);
    /* Header and the t.a row, compared token by token (column widths are presentation). */
    const char *want_head[] = {"weight", "n", "fail", "perf", "perf_base", "perf_ratio", "std%", "perf_adj",
                               "perf_base_adj", "perf_ratio_adj"};
    const char *want_row[] = {"t.a", "8.00", "3", "0", "110.00", "100.00", "1.10", "7.4%", "110.00", "100.00", "1.10"};
    char *save = NULL, *copy = strdup(out), *head = NULL, *line_a = NULL;
    for (char *ln = strtok_r(copy, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
      if (!head && strstr(ln, "perf_ratio_adj")) head = ln;
      if (!strncmp(ln, "t.a ", 4)) line_a = ln;
    }
    char *tok, *s2 = NULL;
    int k = 0;
    for (tok = head ? strtok_r(head, " ", &s2) : NULL; tok && k < 10; tok = strtok_r(NULL, " ", &s2), k++)
      SF_CHECK(!strcmp(tok, want_head[k]), "header column %d: got '%s', want '%s'", k, tok, want_head[k]);
    SF_CHECK(k == 10, "header: got %d columns, want 10; output:\n%s", k, out);
    k = 0;
    for (tok = line_a ? strtok_r(line_a, " ", &s2) : NULL; tok && k < 11; tok = strtok_r(NULL, " ", &s2), k++)
      SF_CHECK(!strcmp(tok, want_row[k]), "t.a cell %d: got '%s', want '%s'", k, tok, want_row[k]);
    SF_CHECK(k == 11, "t.a row: got %d cells, want 11; output:\n%s", k, out);
    free(copy);
  } else {
    printf("note: SF_BINARY not set, CLI text checks skipped\n");
  }

  sf_weights_free(&w);
  sf_summary_free(&base);
  sf_summary_free(&s);
  fclose(diag);
  sf_rm_rf(tmp);
  free(tmp);
  return sf_test_end();
}
