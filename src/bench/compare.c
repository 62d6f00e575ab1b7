/* `scaffold compare A B` (milabench's compare): two result sets side by side per test, steady
 * samples/s of each, the ratio B/A and whether the difference is within the runs' spread
 * (|mean_B - mean_A| <= std_A + std_B, population std of each side's runs; a side with one run has
 * no spread, so the verdict is "1 run"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

const char *sf_compare_verdict_name(sf_compare_verdict v)
{
  switch (v) {
  case SF_CMP_WITHIN: return "within spread";
  case SF_CMP_FASTER: return "B faster";
  case SF_CMP_SLOWER: return "B slower";
  case SF_CMP_SINGLE: return "1 run: no spread";
  case SF_CMP_ONLY_A: return "only in A";
  case SF_CMP_ONLY_B: return "only in B";
  case SF_CMP_TOO_FEW: return "too few samples";
  case SF_CMP_NO_DATA: break;
  }
  return "no good run";
}

static void side(const sf_group *g, double *n, double *mean, double *std)
{
  *n = g ? g->train.n : 0;
  *mean = g && g->train.n > 0 ? g->train.mean : NAN;
  *std = g && g->train.n > 0 ? g->train.std : NAN;
}

sf_compare_verdict sf_compare_judge(double na, double ma, double sa, double nb, double mb, double sb)
{
  if (!isfinite(ma) && !isfinite(mb)) return SF_CMP_NO_DATA;
  if (!isfinite(mb)) return na > 0 ? SF_CMP_ONLY_A : SF_CMP_NO_DATA;
  if (!isfinite(ma)) return nb > 0 ? SF_CMP_ONLY_B : SF_CMP_NO_DATA;
  if (na < 2 || nb < 2) return SF_CMP_SINGLE;
  if (fabs(mb - ma) <= sa + sb) return SF_CMP_WITHIN;
  return mb > ma ? SF_CMP_FASTER : SF_CMP_SLOWER;
}

size_t sf_compare_rows(const sf_summary *a, const sf_summary *b, sf_compare_row **out)
{
  char **names = sf_malloc((a->n + b->n + 1) * sizeof(char *), "compare rows");
  size_t n = 0;
  for (size_t i = 0; i < a->n; i++) names[n++] = a->g[i].name;
  for (size_t i = 0; i < b->n; i++)
    if (!sf_summary_find(a, b->g[i].name)) names[n++] = b->g[i].name;
  qsort(names, n, sizeof *names, cmp_name);
  sf_compare_row *r = sf_malloc((n ? n : 1) * sizeof *r, "compare rows");
  for (size_t i = 0; i < n; i++) {
    r[i].name = names[i];
    side(sf_summary_find(a, names[i]), &r[i].na, &r[i].perf_a, &r[i].std_a);
    side(sf_summary_find(b, names[i]), &r[i].nb, &r[i].perf_b, &r[i].std_b);
    r[i].ratio = r[i].perf_b / r[i].perf_a;
    r[i].verdict = sf_compare_judge(r[i].na, r[i].perf_a, r[i].std_a, r[i].nb, r[i].perf_b, r[i].std_b);
    /* A side whose runs succeeded but were all too short has no perf: say so, never "no good run". */
    const sf_group *ga = sf_summary_find(a, names[i]), *gb = sf_summary_find(b, names[i]);
    r[i].slices_a = sf_group_unmeasured(ga) ? ga->short_slices : -1;
    r[i].slices_b = sf_group_unmeasured(gb) ? gb->short_slices : -1;
    if (r[i].slices_a >= 0 || r[i].slices_b >= 0) r[i].verdict = SF_CMP_TOO_FEW;
  }
  free(names);
  *out = r;
  return n;
}

static void cell(char *buf, size_t n, double v, const char *fmt)
{
  if (isfinite(v)) snprintf(buf, n, fmt, v);
  else snprintf(buf, n, "-");
}

void sf_compare_print(const sf_compare_row *r, size_t n, const char *la, const char *lb, FILE *f)
{
  fprintf(f, "A: %s\nB: %s\nperf: steady training throughput, samples/s (mean over runs, +- population std)\n\n", la, lb);
  int too_few = 0;
  fprintf(f, "%-36s %4s %12s %9s %4s %12s %9s %8s  %s\n", "test", "n A", "perf A", "std A", "n B", "perf B", "std B",
          "B/A", "difference");
  for (size_t i = 0; i < n; i++) {
    char pa[32], sa[32], pb[32], sb[32], ra[32];
    cell(pa, sizeof pa, r[i].perf_a, "%.3f");
    cell(sa, sizeof sa, r[i].std_a, "%.3f");
    cell(pb, sizeof pb, r[i].perf_b, "%.3f");
    cell(sb, sizeof sb, r[i].std_b, "%.3f");
    cell(ra, sizeof ra, r[i].ratio, "%.3f");
    char verdict[96];
    if (r[i].verdict == SF_CMP_TOO_FEW) {
      size_t k = 0;
      if (r[i].slices_a >= 0)
        k += (size_t)snprintf(verdict, sizeof verdict, "A: too few samples (%ld < %d)", r[i].slices_a, SF_STEADY_MIN_SLICES);
      if (r[i].slices_b >= 0)
        snprintf(verdict + k, sizeof verdict - k, "%sB: too few samples (%ld < %d)", k ? "; " : "", r[i].slices_b,
                 SF_STEADY_MIN_SLICES);
    } else {
      snprintf(verdict, sizeof verdict, "%s", sf_compare_verdict_name(r[i].verdict));
    }
    fprintf(f, "%-36s %4.0f %12s %9s %4.0f %12s %9s %8s  %s\n", r[i].name, r[i].na, pa, sa, r[i].nb, pb, sb, ra,
            verdict);
    too_few |= r[i].verdict == SF_CMP_TOO_FEW;
  }
  if (too_few)
    fprintf(f, "\ntoo few samples (N < %d): the runs succeeded but recorded N rate slices, too few for the steady rate "
               "mean(rates[-20:-2]); fix: %s\n", SF_STEADY_MIN_SLICES, SF_TOO_FEW_FIX);
}
