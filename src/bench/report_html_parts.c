/* Sections of the HTML report beyond milarun's (report_html_parts.h): the machine the results
 * were measured on (from the results' machine records), the units of every figure, a chart of
 * samples/s against CPU workers with the ideal line for each progression test (groups
 * "<test>.<workers>"), and the scheduler x worker-mix matrix of the `schedulers` profile (groups
 * "schedulers.<scheduler>__<mix>__<size>": samples/s, % of the lower bound, and the baseline's
 * samples/s with --compare). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_html_parts.h"
#include "report_sched.h"
#include "scaffold/common.h"

static void row_str(FILE *f, const char *key, const cJSON *m, const char *field)
{
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, field);
  fprintf(f, "<tr><th>%s</th><td>", key);
  if (cJSON_IsString(x)) sf_html_esc(f, x->valuestring);
  else fputs("not recorded", f);
  fputs("</td></tr>\n", f);
}

static void row_num(FILE *f, const char *key, const cJSON *m, const char *field, const char *unit)
{
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, field);
  fprintf(f, "<tr><th>%s</th><td>", key);
  if (cJSON_IsNumber(x)) fprintf(f, "%.0f%s%s", x->valuedouble, unit[0] ? " " : "", unit);
  else fputs("not recorded", f);
  fputs("</td></tr>\n", f);
}

void sf_html_machine(FILE *f, const sf_summary *s)
{
  fputs("<h2>Machine</h2>\n", f);
  const cJSON *m = s->machine;
  if (!m) {
    fputs("<p>No machine record in these results (a summary written before machine records were kept, or no "
          "successful run).</p>\n", f);
    return;
  }
  fputs("<table class=\"table machine\">\n", f);
  row_str(f, "CPU model", m, "cpu_model");
  row_num(f, "packages", m, "packages", "");
  row_num(f, "cores", m, "cores", "");
  row_num(f, "hardware threads", m, "pus", "");
  row_num(f, "memory", m, "memory_mib", "MiB");
  row_num(f, "L3 per cache", m, "l3_kib", "KiB");
  row_num(f, "NVIDIA GPUs", m, "nvidia_gpus", "");
  row_str(f, "StarPU", m, "starpu_version");
  fputs("<tr><th>StarPU features</th><td>", f);
  const cJSON *feat = cJSON_GetObjectItemCaseSensitive(m, "starpu_features"), *x;
  if (!cJSON_IsArray(feat)) fputs("not recorded", f);
  int first = 1;
  cJSON_ArrayForEach(x, feat) if (cJSON_IsString(x))
  {
    fputs(first ? "" : ", ", f);
    sf_html_esc(f, x->valuestring);
    first = 0;
  }
  fputs("</td></tr>\n", f);
  row_num(f, "StarPU max CPU workers", m, "starpu_maxcpus", "");
  row_str(f, "BLAS core (OpenBLAS)", m, "blas_core");
  row_str(f, "CPU kernels (SF_CPU_ISA)", m, "cpu_kernels");
  row_str(f, "host", m, "hostname");
  fputs("</table>\n", f);
}

void sf_html_units(FILE *f)
{
  fputs("<p class=\"units\">Units: perf, perf_base, perf_adj, perf_base_adj in samples/s (steady training "
        "throughput: mean of the runs' mean(rates[-20:-2]) over their sample_duration slices, 0.5 s by default; "
        "\"too few samples (N &lt; 3)\": the runs succeeded with fewer slices than that needs); perf_ratio and perf_ratio_adj "
        "without unit (perf / perf_base); std% in % of perf; n and fail in runs; weight without unit.</p>\n",
        f);
}

/* ---- scaling chart ----------------------------------------------------------------------------- */

/* "<base>.<k>" with k a positive integer: *k and the base length; else 0. */
static int progression_key(const char *name, long *k, size_t *blen)
{
  const char *dot = strrchr(name, '.');
  if (!dot || !dot[1]) return 0;
  for (const char *p = dot + 1; *p; p++)
    if (!isdigit((unsigned char)*p)) return 0;
  *k = strtol(dot + 1, NULL, 10);
  *blen = (size_t)(dot - name);
  return *k > 0;
}

static void scaling_one(FILE *f, const sf_summary *s, const char *base, size_t blen)
{
  long ks[64];
  double perf[64];
  int n = 0;
  for (size_t i = 0; i < s->n && n < 64; i++) {
    long k;
    size_t bl;
    if (!progression_key(s->g[i].name, &k, &bl) || bl != blen || strncmp(s->g[i].name, base, blen)) continue;
    if (!(s->g[i].train.n > 0) || !isfinite(s->g[i].train.mean)) continue;
    int j = n++;
    while (j > 0 && ks[j - 1] > k) ks[j] = ks[j - 1], perf[j] = perf[j - 1], j--;
    ks[j] = k;
    perf[j] = s->g[i].train.mean;
  }
  if (n < 2) return;
  long kmax = ks[n - 1];
  double ideal1 = perf[0] / (double)ks[0], ymax = 0;
  for (int i = 0; i < n; i++) ymax = fmax(ymax, fmax(perf[i], ideal1 * (double)ks[i]));
  ymax *= 1.15;
  const int L = 70, T = 20, W = 420, H = 220;
#define X(k) (L + (int)lround((double)(k) / (double)kmax * W))
#define Y(v) (T + H - (int)lround((v) / ymax * H))
  fputs("<h3>", f);
  fwrite(base, 1, blen, f);
  fputs("</h3>\n", f);
  fprintf(f, "<svg class=\"scaling\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
             "font-family=\"monospace\" font-size=\"12\">\n<title>samples/s against CPU workers</title>\n",
          L + W + 230, T + H + 45, L + W + 230, T + H + 45);
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>", L, T + H, L + W, T + H);
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", L, T, L, T + H);
  for (int i = 0; i < n; i++)
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%ld</text>", X(ks[i]), T + H + 15, ks[i]);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">CPU workers</text>\n", L + W / 2, T + H + 35);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3g</text>", L - 4, T + 10, ymax);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>", L - 4, T + H);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">samples/s</text>\n", 14,
          T + H / 2, 14, T + H / 2);
  fprintf(f, "<polyline class=\"ideal\" fill=\"none\" stroke=\"#888\" stroke-dasharray=\"5 4\" points=\"%d,%d %d,%d\"/>\n",
          X(ks[0]), Y(perf[0]), X(kmax), Y(ideal1 * (double)kmax));
  fputs("<polyline class=\"measured\" fill=\"none\" stroke=\"#4477AA\" stroke-width=\"2\" points=\"", f);
  for (int i = 0; i < n; i++) fprintf(f, "%s%d,%d", i ? " " : "", X(ks[i]), Y(perf[i]));
  fputs("\"/>\n", f);
  for (int i = 0; i < n; i++)
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"3\" fill=\"#4477AA\"/><text x=\"%d\" y=\"%d\">%.3g</text>\n",
            X(ks[i]), Y(perf[i]), X(ks[i]) + 5, Y(perf[i]) - 5, perf[i]);
  fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#4477AA\">measured</text><text x=\"%d\" y=\"%d\" fill=\"#888\">ideal "
             "(linear from %ld)</text>\n", L + W + 10, T + 20, L + W + 10, T + 36, ks[0]);
  fputs("</svg>\n", f);
#undef X
#undef Y
}

void sf_html_scaling(FILE *f, const sf_summary *s)
{
  int header = 0;
  for (size_t i = 0; i < s->n; i++) {
    long k;
    size_t bl;
    if (!progression_key(s->g[i].name, &k, &bl)) continue;
    int seen = 0; /* one chart per base: at its first group */
    for (size_t j = 0; j < i && !seen; j++) {
      long k2;
      size_t bl2;
      seen = progression_key(s->g[j].name, &k2, &bl2) && bl2 == bl && !strncmp(s->g[j].name, s->g[i].name, bl);
    }
    if (seen) continue;
    if (!header) fputs("<h2>Worker scaling (samples/s against CPU workers, ideal = linear)</h2>\n", f);
    header = 1;
    scaling_one(f, s, s->g[i].name, bl);
  }
}

/* ---- scheduler x worker-mix matrix ---------------------------------------------------------------- */

static void sched_cell(FILE *f, const sf_report *r, const sf_group *g)
{
  if (!g) {
    fputs("<td>-</td>", f);
    return;
  }
  fputs("<td>", f);
  char why[64];
  if (g->train.n > 0 && isfinite(g->train.mean)) fprintf(f, "%.3f samples/s", g->train.mean);
  else if (sf_group_unmeasured(g)) {
    fprintf(f, "<span class=\"short\" title=\"the runs succeeded but were too short for a steady rate; fix: %s\">",
            SF_TOO_FEW_FIX);
    sf_html_esc(f, sf_group_too_few(g, why, sizeof why));
    fputs("</span>", f);
    if (g->failures > 0) fprintf(f, "<br><span class=\"FAIL\">failed (%ld/%ld)</span>", g->failures, g->n);
  } else fprintf(f, "<span class=\"FAIL\">failed (%ld/%ld)</span>", g->failures, g->n);
  double pct = sf_sched_bound_pct(g);
  if (!isfinite(pct)) fputs("<br>bound n/a", f);
  else if (pct > 100) fprintf(f, "<br><span class=\"FAIL\" title=\"%s\">%.0f%% of bound: not a bound here</span>", SF_SCHED_BOUND_NOTE, pct);
  else fprintf(f, "<br>%.0f%% of bound", pct);
  double b = sf_sched_matrix_base(r, g);
  if (isfinite(b)) fprintf(f, "<br>baseline %.3f samples/s", b);
  else if (sf_sched_matrix_base_unmeasured(r, g)) fputs("<br>baseline: too few samples", f);
  fputs("</td>", f);
}

void sf_html_schedulers(FILE *f, const sf_report *r, const sf_summary *s)
{
  sf_sched_matrix m;
  if (!sf_sched_matrix_build(&m, s)) return;
  fputs("<h2>Schedulers x worker mixes (samples/s; % of the lower bound's samples/s, bound: 1)</h2>\n"
        "<table class=\"schedulers\">\n<thead><tr><th>scheduler</th>", f);
  for (int c = 0; c < m.nc; c++) {
    fputs("<th>", f);
    sf_html_esc(f, m.cols[c]);
    fputs("</th>", f);
  }
  fputs("</tr></thead>\n<tbody>\n", f);
  for (int i = 0; i < m.nr; i++) {
    fputs("<tr><th class=\"name\">", f);
    sf_html_esc(f, m.rows[i]);
    fputs("</th>", f);
    for (int c = 0; c < m.nc; c++) sched_cell(f, r, sf_sched_matrix_cell(&m, s, i, c));
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  sf_sched_matrix_free(&m);
}
