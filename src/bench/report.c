/* Steps C-D of the report (spec milabench.md §4): one row per group in the sorted union of the
 * results, the baseline and the weights (n, fail, perf, perf_base, perf_ratio, std%, perf_adj,
 * perf_base_adj, perf_ratio_adj, weight), the failure rate with its PASS/FAIL verdict, the
 * weighted geometric-mean score with pandas' NaN rules, the baseline ratio and price/RPP; and the
 * text rendering (title, table, Scores, device comparison). */
#include <math.h>
#include <string.h>

#include "report_sched.h"
#include "scaffold/bench.h"
#include "scaffold/common.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static double weight_of(const sf_weights *w, const char *name)
{
  for (size_t i = 0; i < w->n; i++)
    if (!strcmp(w->names[i], name)) return w->w[i];
  return NAN;
}

/* Python's min(a, b): a unless b < a (so a NaN first argument wins). */
static double py_min(double a, double b) { return b < a ? b : a; }

/* exp(sum(w * ln x) / sum(w)) with pandas' skipna sums: a NaN term (missing x or missing w) is
 * left out of the numerator; a missing w is left out of the denominator, a missing x is not. */
static double weighted_geomean(const sf_report *r, int base)
{
  double num = 0, den = 0;
  for (size_t i = 0; i < r->nrows; i++) {
    const sf_report_row *row = &r->rows[i];
    double x = base ? row->perf_base_adj : row->perf_adj;
    double term = row->weight * log(x);
    if (!isnan(term)) num += term;
    if (!isnan(row->weight)) den += row->weight;
  }
  return exp(num / den);
}

void sf_report_compute(sf_report *r, const sf_summary *s, const sf_summary *base, const sf_weights *w,
                       int penalize_variance, int has_price, double price)
{
  memset(r, 0, sizeof *r);
  r->penalize_variance = penalize_variance;
  r->has_weights = w != NULL;
  r->has_base = base != NULL;
  r->has_price = has_price;
  r->price = price;
  size_t cap = s->n + (base ? base->n : 0) + (w ? w->n : 0);
  char **names = sf_calloc(cap + 1, sizeof *names, "report rows");
  size_t nn = 0;
  for (size_t i = 0; i < s->n; i++) names[nn++] = s->g[i].name;
  if (base)
    for (size_t i = 0; i < base->n; i++) names[nn++] = base->g[i].name;
  if (w)
    for (size_t i = 0; i < w->n; i++) names[nn++] = w->names[i];
  if (nn) qsort(names, nn, sizeof *names, cmp_str);
  r->rows = sf_calloc(nn + 1, sizeof *r->rows, "report rows");
  for (size_t i = 0; i < nn; i++) {
    if (i > 0 && !strcmp(names[i], names[i - 1])) continue;
    sf_report_row *row = &r->rows[r->nrows++];
    row->name = sf_strdup(names[i]);
    const sf_group *g = sf_summary_find(s, names[i]);
    row->weight = w ? weight_of(w, names[i]) : NAN;
    row->n = g ? (double)g->n : NAN;
    row->fail = g ? (double)g->failures : NAN;
    row->perf = g ? g->train.mean : NAN;
    row->std_pct = g ? g->train.std / g->train.mean : NAN;
    row->perf_adj = g ? (1 - row->fail / row->n) * (row->perf - (penalize_variance ? py_min(g->train.std, row->perf) : 0))
                      : NAN;
    row->perf_base = row->perf_ratio = row->perf_base_adj = row->perf_ratio_adj = NAN;
    if (g) {
      row->short_runs = g->short_runs;
      row->short_slices = g->short_slices;
      row->unmeasured = sf_group_unmeasured(g);
    }
    if (base) {
      const sf_group *b = sf_summary_find(base, names[i]);
      if (b) {
        row->base_short_runs = b->short_runs;
        row->base_short_slices = b->short_slices;
        row->base_unmeasured = sf_group_unmeasured(b);
      }
      row->perf_base = b ? b->train.mean : NAN;
      row->perf_ratio = row->perf / row->perf_base;
      row->perf_base_adj = b ? row->perf_base - (penalize_variance ? py_min(b->train.std, row->perf_base) : 0) : NAN;
      row->perf_ratio_adj = row->perf_adj / row->perf_base_adj;
    }
  }
  free(names);
  r->failure_rate = r->score = r->score_base = r->ratio = r->rpp = NAN;
  if (w) {
    double sf = 0, sn = 0;
    for (size_t i = 0; i < r->nrows; i++) {
      if (!isnan(r->rows[i].fail)) sf += r->rows[i].fail;
      if (!isnan(r->rows[i].n)) sn += r->rows[i].n;
    }
    r->failure_rate = sf / sn;
    r->score = weighted_geomean(r, 0);
    if (base) {
      r->score_base = weighted_geomean(r, 1);
      r->ratio = r->score / r->score_base;
    }
    if (has_price) r->rpp = price / r->score;
  }
}

void sf_report_free(sf_report *r)
{
  for (size_t i = 0; i < r->nrows; i++) free(r->rows[i].name);
  free(r->rows);
  memset(r, 0, sizeof *r);
}

/* ---- shared formatting (text and HTML) --------------------------------------------------------- */

size_t sf_report_columns(const sf_report *r, sf_report_col *cols)
{
  size_t n = 0;
  if (r->has_weights) cols[n++] = SF_COL_WEIGHT;
  cols[n++] = SF_COL_N;
  cols[n++] = SF_COL_FAIL;
  cols[n++] = SF_COL_PERF;
  if (r->has_base) cols[n++] = SF_COL_PERF_BASE, cols[n++] = SF_COL_PERF_RATIO;
  cols[n++] = SF_COL_STD_PCT;
  cols[n++] = SF_COL_PERF_ADJ;
  if (r->has_base) cols[n++] = SF_COL_PERF_BASE_ADJ, cols[n++] = SF_COL_PERF_RATIO_ADJ;
  return n;
}

const char *sf_report_col_name(sf_report_col c)
{
  static const char *const names[] = {"weight", "n", "fail", "perf", "perf_base", "perf_ratio",
                                      "std%", "perf_adj", "perf_base_adj", "perf_ratio_adj"};
  return names[c];
}

double sf_report_cell(const sf_report_row *row, sf_report_col c)
{
  switch (c) {
  case SF_COL_WEIGHT: return row->weight;
  case SF_COL_N: return row->n;
  case SF_COL_FAIL: return row->fail;
  case SF_COL_PERF: return row->perf;
  case SF_COL_PERF_BASE: return row->perf_base;
  case SF_COL_PERF_RATIO: return row->perf_ratio;
  case SF_COL_STD_PCT: return row->std_pct;
  case SF_COL_PERF_ADJ: return row->perf_adj;
  case SF_COL_PERF_BASE_ADJ: return row->perf_base_adj;
  case SF_COL_PERF_RATIO_ADJ: return row->perf_ratio_adj;
  default: break;
  }
  return NAN;
}

/* Python's format of a float: "nan"/"inf" spelled as Python spells them. */
void sf_report_fmt(sf_report_col c, double v, char *buf, size_t n)
{
  switch (c) {
  case SF_COL_N:
  case SF_COL_FAIL: snprintf(buf, n, "%.0f", v); break;           /* {:.0f} */
  case SF_COL_WEIGHT: snprintf(buf, n, "%4.2f", v); break;        /* {:4.2f} */
  case SF_COL_STD_PCT: snprintf(buf, n, "%5.1f%%", v * 100); break; /* {:6.1%} */
  default: snprintf(buf, n, "%10.2f", v); break;                  /* {:10.2f} */
  }
}

void sf_report_cell_text(const sf_report_row *row, sf_report_col c, char *buf, size_t n)
{
  int mine = row->unmeasured, theirs = row->base_unmeasured;
  long slices = -1;
  switch (c) {
  case SF_COL_PERF: slices = mine ? row->short_slices : -1; break;
  case SF_COL_PERF_BASE: slices = theirs ? row->base_short_slices : -1; break;
  case SF_COL_STD_PCT:
  case SF_COL_PERF_ADJ:
    if (mine) {
      snprintf(buf, n, "-");
      return;
    }
    break;
  case SF_COL_PERF_BASE_ADJ:
    if (theirs) {
      snprintf(buf, n, "-");
      return;
    }
    break;
  case SF_COL_PERF_RATIO:
  case SF_COL_PERF_RATIO_ADJ:
    if (mine || theirs) {
      snprintf(buf, n, "-");
      return;
    }
    break;
  default: break;
  }
  if (slices >= 0) snprintf(buf, n, "too few samples (%ld < %d)", slices, SF_STEADY_MIN_SLICES);
  else sf_report_fmt(c, sf_report_cell(row, c), buf, n);
}

static void push_note(char ***lines, size_t *n, size_t *cap, const char *text)
{
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 8;
    char **nl = sf_malloc(*cap * sizeof *nl, "notes");
    if (*n) memcpy(nl, *lines, *n * sizeof *nl);
    free(*lines);
    *lines = nl;
  }
  (*lines)[(*n)++] = sf_strdup(text);
}

size_t sf_report_notes(const sf_report *r, char ***lines)
{
  size_t n = 0, cap = 0;
  *lines = NULL;
  char buf[1024];
  int any = 0;
  for (size_t i = 0; i < r->nrows; i++) {
    const sf_report_row *row = &r->rows[i];
    if (row->short_runs > 0) {
      any = 1;
      if (row->unmeasured)
        snprintf(buf, sizeof buf, "%s: too few samples (%ld < %d) in %ld successful run(s): no steady rate, not a failure",
                 row->name, row->short_slices, SF_STEADY_MIN_SLICES, row->short_runs);
      else
        snprintf(buf, sizeof buf, "%s: %ld successful run(s) with too few samples (%ld < %d) left out of perf",
                 row->name, row->short_runs, row->short_slices, SF_STEADY_MIN_SLICES);
      push_note(lines, &n, &cap, buf);
    }
    if (row->base_short_runs > 0) {
      any = 1;
      snprintf(buf, sizeof buf, "%s: the baseline has %ld run(s) with too few samples (%ld < %d)%s", row->name,
               row->base_short_runs, row->base_short_slices, SF_STEADY_MIN_SLICES,
               row->base_unmeasured ? ": no baseline perf" : ", left out of perf_base");
      push_note(lines, &n, &cap, buf);
    }
  }
  if (any) {
    snprintf(buf, sizeof buf,
             "too few samples (N < %d): the run succeeded but recorded N rate slices; the steady rate "
             "mean(rates[-20:-2]) has a value only from %d slices on (a full window from %d). Fix: %s",
             SF_STEADY_MIN_SLICES, SF_STEADY_MIN_SLICES, SF_STEADY_FULL_SLICES, SF_TOO_FEW_FIX);
    push_note(lines, &n, &cap, buf);
  }
  return n;
}

void sf_report_notes_free(char **lines, size_t n)
{
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
}

void sf_report_fmt_pct0(double v, char *buf, size_t n) { snprintf(buf, n, "%.0f%%", v * 100); } /* {:.0%} */

void sf_report_score_lines(const sf_report *r, char keys[][32], char vals[][64], const char **klass, size_t *n)
{
  size_t k = 0;
  snprintf(keys[k], 32, "Failure rate");
  snprintf(vals[k], 64, "%9.2f%% (%s)", r->failure_rate * 100, r->failure_rate <= 0.01 ? "PASS" : "FAIL");
  klass[k++] = r->failure_rate <= 0.01 ? "PASS" : "FAIL";
  snprintf(keys[k], 32, "Score");
  snprintf(vals[k], 64, "%10.2f", r->score);
  klass[k++] = "score";
  if (r->has_base) {
    snprintf(keys[k], 32, "Score (baseline)");
    snprintf(vals[k], 64, "%10.2f", r->score_base);
    klass[k++] = NULL;
    snprintf(keys[k], 32, "Ratio");
    snprintf(vals[k], 64, "%10.2f", r->ratio);
    klass[k++] = NULL;
  }
  if (r->has_price) {
    snprintf(keys[k], 32, "Price ($)");
    snprintf(vals[k], 64, "%10.2f", r->price);
    klass[k++] = NULL;
    snprintf(keys[k], 32, "RPP (Price / Score)");
    snprintf(vals[k], 64, "%10.2f", r->rpp);
    klass[k++] = "rpp";
  }
  *n = k;
}

size_t sf_report_device_matrix(const sf_summary *s, const char *measure, const sf_group **rows, double *cells,
                               size_t *ndev)
{
  size_t G = 0, nr = 0;
  for (size_t i = 0; i < s->n; i++) G = s->g[i].ndev > G ? s->g[i].ndev : G;
  *ndev = G;
  if (G == 0) return 0;
  for (size_t i = 0; i < s->n; i++) {
    const sf_group *g = &s->g[i];
    if (g->ndev != G) continue;
    int ok = 1;
    for (size_t d = 0; d < G; d++) ok &= g->dev_ids[d] == (long)d;
    if (!ok) continue;
    double mx = -INFINITY;
    for (size_t d = 0; d < G; d++) {
      const sf_stats *st = &g->per_device[d];
      double v = !strcmp(measure, "min") ? st->min : !strcmp(measure, "max") ? st->max : st->mean;
      cells[nr * G + d] = v;
      if (v > mx) mx = v;
    }
    for (size_t d = 0; d < G; d++) cells[nr * G + d] /= mx;
    rows[nr++] = g;
  }
  return nr;
}

/* ---- text ---------------------------------------------------------------------------------- */

static void rule(FILE *out, char ch, size_t n)
{
  for (size_t i = 0; i < n; i++) fputc(ch, out);
  fputc('\n', out);
}

void sf_report_print_text(const sf_report *r, const sf_summary *s, const char *title, int compare_devices, FILE *out)
{
  if (!title) title = "Benchmark results";
  rule(out, '=', strlen(title));
  fprintf(out, "%s\n", title);
  rule(out, '=', strlen(title));

  sf_report_col cols[SF_NCOLS];
  size_t nc = sf_report_columns(r, cols);
  size_t namew = 0, width[SF_NCOLS];
  char buf[64];
  for (size_t i = 0; i < r->nrows; i++) namew = strlen(r->rows[i].name) > namew ? strlen(r->rows[i].name) : namew;
  for (size_t c = 0; c < nc; c++) {
    width[c] = strlen(sf_report_col_name(cols[c]));
    for (size_t i = 0; i < r->nrows; i++) {
      sf_report_cell_text(&r->rows[i], cols[c], buf, sizeof buf);
      if (strlen(buf) > width[c]) width[c] = strlen(buf);
    }
  }
  fprintf(out, "%-*s", (int)namew, "");
  for (size_t c = 0; c < nc; c++) fprintf(out, "  %*s", (int)width[c], sf_report_col_name(cols[c]));
  fputc('\n', out);
  for (size_t i = 0; i < r->nrows; i++) {
    fprintf(out, "%-*s", (int)namew, r->rows[i].name);
    for (size_t c = 0; c < nc; c++) {
      sf_report_cell_text(&r->rows[i], cols[c], buf, sizeof buf);
      fprintf(out, "  %*s", (int)width[c], buf);
    }
    fputc('\n', out);
  }
  fprintf(out, "units: perf, perf_adj%s in samples/s (steady training throughput, mean(rates[-20:-2]) of each run); "
               "std%% in %% of perf; n and fail in runs\n", r->has_base ? ", perf_base, perf_base_adj" : "");
  char **notes;
  size_t nnotes = sf_report_notes(r, &notes);
  if (nnotes) fputc('\n', out);
  for (size_t i = 0; i < nnotes; i++) fprintf(out, "note: %s\n", notes[i]);
  sf_report_notes_free(notes, nnotes);

  if (r->has_weights) {
    char keys[8][32], vals[8][64];
    const char *klass[8];
    size_t n, l = 0;
    sf_report_score_lines(r, keys, vals, klass, &n);
    fprintf(out, "\nScores\n------\n");
    for (size_t i = 0; i < n; i++) l = strlen(keys[i]) + 2 > l ? strlen(keys[i]) + 2 : l;
    for (size_t i = 0; i < n; i++) {
      char k[40];
      snprintf(k, sizeof k, "%s:", keys[i]);
      fprintf(out, "%-*s %s\n", (int)l, k, vals[i]);
    }
  }

  sf_report_print_schedulers(r, s, out); /* the `schedulers` profile's matrix, when present */
  sf_granularity_print_text(s, out);      /* METG(50 %) per runtime, when the results hold efficiency curves */

  if (compare_devices) {
    static const char *const measures[] = {"mean", "min", "max"};
    for (int m = 0; m < 3; m++) {
      const sf_group **rows = sf_calloc(s->n + 1, sizeof *rows, "rows");
      size_t G = 0;
      for (size_t i = 0; i < s->n; i++) G = s->g[i].ndev > G ? s->g[i].ndev : G;
      double *cells = sf_calloc((s->n + 1) * (G + 1), sizeof *cells, "cells");
      size_t nr = sf_report_device_matrix(s, measures[m], rows, cells, &G);
      char head[64];
      snprintf(head, sizeof head, "Device comparison (%s)", measures[m]);
      fprintf(out, "\n%s\n", head);
      rule(out, '-', strlen(head));
      if (nr == 0) fprintf(out, "(no group has per-device results for devices 0..N-1)\n");
      size_t nw = 0;
      for (size_t i = 0; i < nr; i++) nw = strlen(rows[i]->name) > nw ? strlen(rows[i]->name) : nw;
      if (nr) {
        fprintf(out, "%-*s", (int)nw, "");
        for (size_t d = 0; d < G; d++) fprintf(out, "  %5zu", d);
        fputc('\n', out);
      }
      for (size_t i = 0; i < nr; i++) {
        fprintf(out, "%-*s", (int)nw, rows[i]->name);
        for (size_t d = 0; d < G; d++) {
          sf_report_fmt_pct0(cells[i * G + d], buf, sizeof buf);
          fprintf(out, "  %5s", buf);
        }
        fputc('\n', out);
      }
      free(rows);
      free(cells);
    }
  }
}
