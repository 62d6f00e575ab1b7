/* The scheduler x worker-mix matrix (report_sched.h, docs/scheduling.md): which groups form it,
 * and its text rendering: per cell the steady samples/s, % of the samples/s the run's lower bound
 * allows (`bound: 1`), and the baseline's samples/s when the report has one. */
#include "report_sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"

static const char *const known_scheds[] = {"eager", "lws", "ws", "prio", "dm", "dmda", "dmdas", "dmdar",
                                           "modular-heft", "modular-heft2", "modular-heft-prio",
                                           "modular-heteroprio"};
#define NKNOWN (int)(sizeof known_scheds / sizeof *known_scheds)

/* "schedulers.<sched>__<mix>__<size>": the scheduler, and the column "<mix>__<size>" (a pointer
 * into name). */
static int sched_key(const char *name, char *sched, size_t sn, const char **col)
{
  if (strncmp(name, "schedulers.", 11)) return 0;
  const char *a = name + 11, *b = strstr(a, "__");
  if (!b || b == a || !strstr(b + 2, "__") || (size_t)(b - a) >= sn) return 0;
  memcpy(sched, a, (size_t)(b - a));
  sched[b - a] = 0;
  *col = b + 2;
  return 1;
}

static int str_in(char *const *v, int n, const char *x)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i], x)) return i;
  return -1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int sched_rank(const char *s)
{
  for (int k = 0; k < NKNOWN; k++)
    if (!strcmp(s, known_scheds[k])) return k;
  return NKNOWN;
}

static int cmp_sched(const void *a, const void *b)
{
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  int rx = sched_rank(x), ry = sched_rank(y);
  return rx != ry ? (rx < ry ? -1 : 1) : strcmp(x, y);
}

int sf_sched_matrix_build(sf_sched_matrix *m, const sf_summary *s)
{
  memset(m, 0, sizeof *m);
  char sched[64];
  const char *col;
  for (size_t i = 0; i < s->n; i++) {
    if (!sched_key(s->g[i].name, sched, sizeof sched, &col)) continue;
    if (str_in(m->rows, m->nr, sched) < 0 && m->nr < 64) m->rows[m->nr++] = sf_strdup(sched);
    if (str_in(m->cols, m->nc, col) < 0 && m->nc < 16) m->cols[m->nc++] = sf_strdup(col);
  }
  qsort(m->rows, (size_t)m->nr, sizeof *m->rows, cmp_sched);
  qsort(m->cols, (size_t)m->nc, sizeof *m->cols, cmp_str);
  return m->nr;
}

const sf_group *sf_sched_matrix_cell(const sf_sched_matrix *m, const sf_summary *s, int r, int c)
{
  char name[256];
  snprintf(name, sizeof name, "schedulers.%s__%s", m->rows[r], m->cols[c]);
  return sf_summary_find(s, name);
}

double sf_sched_matrix_base(const sf_report *r, const sf_group *g)
{
  if (!r->has_base || !g) return NAN;
  for (size_t i = 0; i < r->nrows; i++)
    if (!strcmp(r->rows[i].name, g->name)) return r->rows[i].perf_base;
  return NAN;
}

void sf_sched_matrix_free(sf_sched_matrix *m)
{
  for (int i = 0; i < m->nr; i++) free(m->rows[i]);
  for (int c = 0; c < m->nc; c++) free(m->cols[c]);
  memset(m, 0, sizeof *m);
}

double sf_sched_bound_pct(const sf_group *g)
{
  if (!g || g->bound_rate.n <= 0 || g->train.n <= 0 || !isfinite(g->train.mean) || !(g->bound_rate.mean > 0))
    return NAN;
  return 100.0 * g->train.mean / g->bound_rate.mean;
}

/* One cell: "12.345 (67%)", "12.345 (119%!)" above the bound (SF_SCHED_BOUND_NOTE) or "12.345 (-)"
 * without a bound; "too few samples (2 < 3)" when the runs succeeded but none was long enough for a
 * steady rate (never FAIL: ", FAIL 1/2" follows only when some run did fail); "FAIL 1/1" when every
 * run failed; "-" when absent; with a baseline " / 10.000" (" / too few samples" for an unmeasured
 * baseline cell). */
static void cell_text(char *buf, size_t n, const sf_report *r, const sf_group *g)
{
  if (!g) {
    snprintf(buf, n, "-");
    return;
  }
  size_t k = 0;
  if (g->train.n > 0 && isfinite(g->train.mean)) {
    k = (size_t)snprintf(buf, n, "%.3f", g->train.mean);
    double pct = sf_sched_bound_pct(g);
    if (isfinite(pct)) k += (size_t)snprintf(buf + k, n - k, pct > 100 ? " (%.0f%%!)" : " (%.0f%%)", pct);
    else k += (size_t)snprintf(buf + k, n - k, " (-)");
  } else if (sf_group_unmeasured(g)) {
    char why[64];
    k = (size_t)snprintf(buf, n, "%s", sf_group_too_few(g, why, sizeof why));
    if (g->failures > 0 && k < n) k += (size_t)snprintf(buf + k, n - k, ", FAIL %ld/%ld", g->failures, g->n);
  } else {
    k = (size_t)snprintf(buf, n, "FAIL %ld/%ld", g->failures, g->n);
  }
  double b = sf_sched_matrix_base(r, g);
  if (r->has_base && k < n) {
    if (isfinite(b)) snprintf(buf + k, n - k, " / %.3f", b);
    else snprintf(buf + k, n - k, " / %s", sf_sched_matrix_base_unmeasured(r, g) ? "too few samples" : "-");
  }
}

int sf_sched_matrix_base_unmeasured(const sf_report *r, const sf_group *g)
{
  if (!r->has_base || !g) return 0;
  for (size_t i = 0; i < r->nrows; i++)
    if (!strcmp(r->rows[i].name, g->name)) return r->rows[i].base_unmeasured;
  return 0;
}

void sf_report_print_schedulers(const sf_report *r, const sf_summary *s, FILE *out)
{
  sf_sched_matrix m;
  if (!sf_sched_matrix_build(&m, s)) return;
  char buf[160];
  int w0 = 18, w = 24;
  fprintf(out, "\nSchedulers x worker mixes: steady samples/s (%% of the samples/s the lower bound allows, bound: 1)%s\n",
          r->has_base ? " / baseline samples/s" : "");
  fprintf(out, "%-*s", w0, "scheduler");
  for (int c = 0; c < m.nc; c++) fprintf(out, "  %*s", w, m.cols[c]);
  fputc('\n', out);
  int above = 0, short_cells = 0;
  for (int i = 0; i < m.nr; i++) {
    fprintf(out, "%-*s", w0, m.rows[i]);
    for (int c = 0; c < m.nc; c++) {
      const sf_group *g = sf_sched_matrix_cell(&m, s, i, c);
      above += sf_sched_bound_pct(g) > 100;
      short_cells += sf_group_unmeasured(g);
      cell_text(buf, sizeof buf, r, g);
      fprintf(out, "  %*s", w, buf);
    }
    fputc('\n', out);
  }
  if (above) fprintf(out, "!: %d cell%s %s\n", above, above == 1 ? "" : "s", SF_SCHED_BOUND_NOTE);
  if (short_cells)
    fprintf(out, "too few samples: %d cell%s whose runs succeeded but were too short for a steady rate (not failures); "
                 "fix: %s\n", short_cells, short_cells == 1 ? "" : "s", SF_TOO_FEW_FIX);
  sf_sched_matrix_free(&m);
}
