/* The HTML report's runtime granularity section (docs/runtimes.md "Granularity", docs/harness.md): efficiency
 * against the mean task duration, log x axis, one curve per runtime/workers and a dashed 50 % line, as an inline
 * SVG (the report stays one self-contained file), then the METG(50 %) table with each crossing's bracket. The
 * curves and METG come from granularity.c; shown only when some series has two points or more. */
#include <math.h>
#include <stdio.h>

#include "report_html_parts.h"

static const char *const colour[] = {"#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#000000"};
#define NCOLOUR (sizeof colour / sizeof colour[0])

enum { L = 70, T = 20, W = 480, H = 260 };

typedef struct {
  double lx0, lx1, ymax; /* log10 of the x range; top of the y axis (efficiency) */
} axes;

static int px(const axes *a, double x_us) { return L + (int)lround((log10(x_us) - a->lx0) / (a->lx1 - a->lx0) * W); }
static int py(const axes *a, double eff) { return T + H - (int)lround(eff / a->ymax * H); }

static axes axes_of(const sf_granularity *g)
{
  double lo = INFINITY, hi = 0, ymax = 1.0;
  for (size_t i = 0; i < g->n; i++)
    for (size_t k = 0; k < g->s[i].n; k++) {
      lo = fmin(lo, g->s[i].pts[k].x_us), hi = fmax(hi, g->s[i].pts[k].x_us);
      ymax = fmax(ymax, g->s[i].pts[k].eff);
    }
  axes a = {floor(log10(lo)), ceil(log10(hi)), ceil(ymax * 10 + 0.5) / 10};
  if (a.lx1 <= a.lx0) a.lx1 = a.lx0 + 1;
  return a;
}

static void frame(FILE *f, const axes *a)
{
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>", L, T + H, L + W, T + H);
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", L, T, L, T + H);
  for (double e = a->lx0; e <= a->lx1 + 1e-9; e += 1) {
    int x = L + (int)lround((e - a->lx0) / (a->lx1 - a->lx0) * W);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%d\" "
               "text-anchor=\"middle\">%g</text>\n", x, T, x, T + H, x, T + H + 15, pow(10, e));
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">mean task duration (us, log scale)</text>\n", L + W / 2,
          T + H + 35);
  for (int p = 0; p <= (int)lround(a->ymax * 100); p += 25)
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d %%</text>", L - 4, py(a, p / 100.0) + 4, p);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">efficiency</text>\n", 14,
          T + H / 2, 14, T + H / 2);
  fprintf(f, "<line class=\"level\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\" stroke-dasharray=\"5 4\"/>"
             "<text x=\"%d\" y=\"%d\" fill=\"#888\">50 %%</text>\n", L, py(a, 0.5), L + W, py(a, 0.5), L + W + 4,
          py(a, 0.5) + 4);
}

static void curve(FILE *f, const axes *a, const sf_gran_series *s, const char *c, int row)
{
  fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
  for (size_t k = 0; k < s->n; k++) fprintf(f, "%s%d,%d", k ? " " : "", px(a, s->pts[k].x_us), py(a, s->pts[k].eff));
  fputs("\"/>\n", f);
  for (size_t k = 0; k < s->n; k++) {
    fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"3\" fill=\"%s\"><title>", px(a, s->pts[k].x_us), py(a, s->pts[k].eff), c);
    sf_html_esc(f, s->series);
    fprintf(f, ": %.3g us tasks, %.0f %%</title></circle>\n", s->pts[k].x_us, s->pts[k].eff * 100);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"%s\">", L + W + 40, T + 16 * row + 10, c);
  sf_html_esc(f, s->series);
  fputs("</text>\n", f);
}

static void metg_table(FILE *f, const sf_granularity *g)
{
  fputs("<table class=\"metg\">\n<tr><th class=\"name\">runtime/workers</th><th>METG(50 %), us</th>"
        "<th>bracket: above 50 %</th><th>below 50 %</th><th>points</th></tr>\n", f);
  for (size_t i = 0; i < g->n; i++) {
    const sf_metg *m = &g->s[i].metg;
    char cell[256];
    sf_metg_describe(m, 0.5, cell, sizeof cell);
    fputs("<tr><th class=\"name\">", f);
    sf_html_esc(f, g->s[i].series);
    fputs("</th><td>", f);
    sf_html_esc(f, cell);
    fputs("</td><td>", f);
    if (m->has_hi)
      fprintf(f, "%.3g us at %.0f %%", m->hi.x_us, m->hi.eff * 100);
    else
      fputs("-", f);
    fputs("</td><td>", f);
    if (m->has_lo)
      fprintf(f, "%.3g us at %.0f %%", m->lo.x_us, m->lo.eff * 100);
    else
      fputs("-", f);
    fprintf(f, "</td><td>%zu</td></tr>\n", g->s[i].n);
  }
  fputs("</table>\n", f);
}

void sf_html_granularity(FILE *f, const sf_summary *s)
{
  sf_granularity g;
  sf_granularity_compute(s, &g);
  if (sf_granularity_curves(&g)) {
    axes a = axes_of(&g);
    fputs("<h3>Runtime granularity: efficiency against mean task duration</h3>\n"
          "<p>Efficiency = the shape's task-body time per step under the sequential executor / (workers x step "
          "time); mean task duration = that time / tasks per step (docs/runtimes.md, \"Granularity\").</p>\n", f);
    fprintf(f, "<svg class=\"granularity\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "font-family=\"monospace\" font-size=\"12\">\n<title>efficiency against mean task duration</title>\n",
            L + W + 170, T + H + 45, L + W + 170, T + H + 45);
    frame(f, &a);
    for (size_t i = 0; i < g.n; i++) curve(f, &a, &g.s[i], colour[i % NCOLOUR], (int)i);
    fputs("</svg>\n", f);
    metg_table(f, &g);
    if (g.no_reference)
      fprintf(f, "<p>%ld group(s) left out: no sequential-executor run of their shape (the reference).</p>\n",
              g.no_reference);
  }
  sf_granularity_free(&g);
}
