/* The report as one self-contained HTML file (no scripts, fonts, images or links): the results
 * table with milarun's colour rules (fail > 0 red bold, weight < 1 grey, perf_ratio* green /
 * olive / orange / red at 1.1 / 0.9 / 0.75), the Scores table, an inline SVG bar chart of the
 * perf ratios (perf_adj when there is no baseline), and the device comparison tables; plus the
 * machine block, units, the scaling chart and the scheduler matrix (report_html_parts.c). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "report_html_parts.h"

static const char *ratio_colour(double v)
{
  return v >= 1.1 ? "#080" : v >= 0.9 ? "#880" : v >= 0.75 ? "#F80" : "#F00";
}

static const char *device_colour(double v)
{
  return v >= 0.9 ? "#080" : v >= 0.8 ? "#880" : v >= 0.7 ? "#F80" : "#F00";
}

static const char *cell_style(sf_report_col c, double v)
{
  switch (c) {
  case SF_COL_FAIL: return v > 0 ? "color: red; font-weight: bold" : "color: black";
  case SF_COL_WEIGHT: return v < 1 ? "color: #888" : "color: black";
  case SF_COL_PERF_RATIO:
  case SF_COL_PERF_RATIO_ADJ: {
    static char buf[32];
    snprintf(buf, sizeof buf, "color: %s", ratio_colour(v));
    return buf;
  }
  default: return NULL;
  }
}

static void table(FILE *f, const sf_report *r)
{
  sf_report_col cols[SF_NCOLS];
  size_t nc = sf_report_columns(r, cols);
  char buf[64];
  fputs("<table class=\"results\">\n<thead><tr><th></th>", f);
  for (size_t c = 0; c < nc; c++) fprintf(f, "<th>%s</th>", sf_report_col_name(cols[c]));
  fputs("</tr></thead>\n<tbody>\n", f);
  for (size_t i = 0; i < r->nrows; i++) {
    fputs("<tr><th class=\"name\">", f);
    sf_html_esc(f, r->rows[i].name);
    fputs("</th>", f);
    for (size_t c = 0; c < nc; c++) {
      double v = sf_report_cell(&r->rows[i], cols[c]);
      sf_report_cell_text(&r->rows[i], cols[c], buf, sizeof buf);
      const char *st = cell_style(cols[c], v);
      if ((cols[c] == SF_COL_PERF && r->rows[i].unmeasured) || (cols[c] == SF_COL_PERF_BASE && r->rows[i].base_unmeasured))
        st = "color: #888"; /* "too few samples (N < 3)": not a failure, not a number */
      if (st) fprintf(f, "<td style=\"%s\">", st);
      else fputs("<td>", f);
      sf_html_esc(f, buf);
      fputs("</td>", f);
    }
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  char **notes;
  size_t nnotes = sf_report_notes(r, &notes);
  if (nnotes) fputs("<ul class=\"notes\">\n", f);
  for (size_t i = 0; i < nnotes; i++) {
    fputs("<li>", f);
    sf_html_esc(f, notes[i]);
    fputs("</li>\n", f);
  }
  if (nnotes) fputs("</ul>\n", f);
  sf_report_notes_free(notes, nnotes);
}

static void scores(FILE *f, const sf_report *r)
{
  char keys[8][32], vals[8][64];
  const char *klass[8];
  size_t n;
  sf_report_score_lines(r, keys, vals, klass, &n);
  fputs("<h2>Scores</h2>\n<table class=\"table scores\">\n", f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "<tr><th>%s</th><td>", keys[i]);
    if (klass[i]) fprintf(f, "<span class=\"%s\">%s</span>", klass[i], vals[i]);
    else fputs(vals[i], f);
    fputs("</td></tr>\n", f);
  }
  fputs("</table>\n", f);
}

static void chart(FILE *f, const sf_report *r)
{
  int ratio = r->has_base;
  double mx = ratio ? 1.0 : 0.0;
  size_t namew = 4;
  for (size_t i = 0; i < r->nrows; i++) {
    double v = ratio ? r->rows[i].perf_ratio : r->rows[i].perf_adj;
    if (isfinite(v) && v > mx) mx = v;
    if (strlen(r->rows[i].name) > namew) namew = strlen(r->rows[i].name);
  }
  if (!(mx > 0)) mx = 1;
  mx *= 1.15;
  const int row_h = 20, top = 10, bar_w = 480;
  const int label_w = (int)(namew * 7.5) + 12;
  const int width = label_w + bar_w + 90, height = top + (int)r->nrows * row_h + 24;
  fprintf(f, "<h2>%s</h2>\n", ratio ? "Performance ratio vs baseline (perf / perf_base)" : "Adjusted performance (perf_adj) in samples/s");
  fprintf(f,
          "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
          "font-family=\"monospace\" font-size=\"12\">\n",
          width, height, width, height);
  fprintf(f, "<title>%s</title>\n", ratio ? "perf_ratio per test" : "perf_adj per test");
  for (size_t i = 0; i < r->nrows; i++) {
    double v = ratio ? r->rows[i].perf_ratio : r->rows[i].perf_adj;
    int y = top + (int)i * row_h;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label_w - 6, y + 14);
    sf_html_esc(f, r->rows[i].name);
    fputs("</text>", f);
    if (isfinite(v) && v > 0) {
      int w = (int)lround(v / mx * bar_w);
      if (w < 1) w = 1;
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>", label_w, y + 3, w, row_h - 6,
              ratio ? ratio_colour(v) : "#4477AA");
      fprintf(f, "<text x=\"%d\" y=\"%d\">%.2f</text>\n", label_w + w + 4, y + 14, v);
    } else {
      const sf_report_row *row = &r->rows[i];
      char why[64] = "n/a";
      if (row->unmeasured) snprintf(why, sizeof why, "too few samples (%ld &lt; %d)", row->short_slices, SF_STEADY_MIN_SLICES);
      else if (ratio && row->base_unmeasured) snprintf(why, sizeof why, "baseline: too few samples");
      fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#888\">%s</text>\n", label_w + 4, y + 14, isfinite(v) ? "0" : why);
    }
  }
  int base_y = top + (int)r->nrows * row_h;
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", label_w, top, label_w, base_y);
  if (ratio) {
    int x = label_w + (int)lround(1.0 / mx * bar_w);
    fprintf(f,
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">1.0</text>\n",
            x, top, x, base_y, x, base_y + 16);
  }
  fputs("</svg>\n", f);
}

static void devices(FILE *f, const sf_summary *s)
{
  static const char *const measures[] = {"mean", "min", "max"};
  size_t G = 0;
  char buf[32];
  for (size_t i = 0; i < s->n; i++) G = s->g[i].ndev > G ? s->g[i].ndev : G;
  for (int m = 0; m < 3; m++) {
    const sf_group **rows = sf_calloc(s->n + 1, sizeof *rows, "rows");
    double *cells = sf_calloc((s->n + 1) * (G + 1), sizeof *cells, "cells");
    size_t g = 0, nr = sf_report_device_matrix(s, measures[m], rows, cells, &g);
    fprintf(f, "<h2>Device comparison (%s)</h2>\n", measures[m]);
    if (nr == 0) fputs("<p>No group has per-device results for devices 0..N-1.</p>\n", f);
    else {
      fputs("<table class=\"devices\">\n<thead><tr><th></th>", f);
      for (size_t d = 0; d < g; d++) fprintf(f, "<th>%zu</th>", d);
      fputs("</tr></thead>\n<tbody>\n", f);
      for (size_t i = 0; i < nr; i++) {
        fputs("<tr><th class=\"name\">", f);
        sf_html_esc(f, rows[i]->name);
        fputs("</th>", f);
        for (size_t d = 0; d < g; d++) {
          double v = cells[i * g + d];
          sf_report_fmt_pct0(v, buf, sizeof buf);
          fprintf(f, "<td style=\"color: %s\">%s</td>", device_colour(v), buf);
        }
        fputs("</tr>\n", f);
      }
      fputs("</tbody></table>\n", f);
    }
    free(rows);
    free(cells);
  }
}

int sf_report_write_html(const sf_report *r, const sf_summary *s, const char *title, int compare_devices,
                         const char *path)
{
  if (!title) title = "Benchmark results";
  sf_atomic_file a;
  if (sf_atomic_open(&a, path) != 0) {
    fprintf(stderr, "scaffold: error: cannot write the HTML report %s: %s\n", path, strerror(errno));
    return -1;
  }
  FILE *f = a.f;
  fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", f);
  sf_html_esc(f, title);
  fputs("</title>\n<style>\n"
        "body { font-family: monospace; }\n"
        "td, th { text-align: right; min-width: 75px; padding: 1px 6px; }\n"
        "th.name, .table th { text-align: left; }\n"
        ".PASS { color: green; font-weight: bold; }\n"
        ".FAIL { color: red; font-weight: bold; }\n"
        ".score, .rpp { color: blue; font-weight: bold; }\n"
        "</style></head><body>\n<h2>",
        f);
  sf_html_esc(f, title);
  fputs("</h2>\n", f);
  sf_html_machine(f, s);
  table(f, r);
  sf_html_units(f);
  if (r->has_weights) scores(f, r);
  chart(f, r);
  sf_html_scaling(f, s);
  sf_html_granularity(f, s);
  sf_html_schedulers(f, r, s);
  if (compare_devices) devices(f, s);
  fputs("</body></html>\n", f);
  if (sf_atomic_commit(&a) != 0) {
    fprintf(stderr, "scaffold: error: cannot write the HTML report %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}
