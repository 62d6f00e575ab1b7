/* The runtime granularity report (scaffold/bench.h; docs/runtimes.md "Granularity", docs/harness.md): the runs'
 * "granularity" records pooled per group, the efficiency curves per runtime/workers against the mean task
 * duration, and METG(50 %) with its bracket, the same arithmetic as scripts/runtimes_sweep.py (tested on
 * hand-made records by harness_granularity and, for the script, by perf_runtimes_metg). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/json.h"

/* ---- pooling a group's records ---------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
  if (n == 0) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int positive(const cJSON *j) { return cJSON_IsNumber(j) && isfinite(j->valuedouble) && j->valuedouble > 0; }

/* 1 when a run's record has what the report reads, and agrees with the group's first (`first`, or NULL) */
static int usable(const cJSON *r, const cJSON *first)
{
  static const char *const num[] = {"workers", "tasks_per_step", "step_s"};
  if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "shape")) ||
      !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r, "runtime")))
    return 0;
  for (int i = 0; i < 3; i++)
    if (!positive(cJSON_GetObjectItemCaseSensitive(r, num[i]))) return 0;
  if (!first) return 1;
  static const char *const same[] = {"shape", "runtime", "workers", "tasks_per_step"};
  for (int i = 0; i < 4; i++)
    if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(r, same[i]), cJSON_GetObjectItemCaseSensitive(first, same[i]), 1))
      return 0;
  return 1;
}

cJSON *sf_granularity_pool(cJSON *records)
{
  int n = cJSON_GetArraySize(records), k = 0, kb = 0;
  const cJSON *first = NULL, *r;
  double *step = sf_calloc((size_t)n + 1, sizeof *step, "granularity"), *body = sf_calloc((size_t)n + 1, sizeof *body, "granularity");
  cJSON *pooled = NULL, *runs = cJSON_CreateArray();
  cJSON_ArrayForEach(r, records)
  {
    if (!usable(r, first)) goto out; /* a group mixing shapes or runtimes has no single point */
    if (!first) first = r;
    step[k++] = cJSON_GetObjectItemCaseSensitive(r, "step_s")->valuedouble;
    cJSON_AddItemToArray(runs, cJSON_CreateNumber(step[k - 1]));
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(r, "body_s_per_step");
    if (positive(b)) body[kb++] = b->valuedouble;
  }
  if (!first) goto out;
  pooled = cJSON_CreateObject();
  static const char *const copy[] = {"shape", "runtime", "workers", "tasks_per_step"};
  for (int i = 0; i < 4; i++) cJSON_AddItemToObject(pooled, copy[i], cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(first, copy[i]), 1));
  cJSON_AddNumberToObject(pooled, "runs", k);
  cJSON_AddNumberToObject(pooled, "step_s", median(step, (size_t)k));
  if (kb)
    cJSON_AddNumberToObject(pooled, "body_s_per_step", median(body, (size_t)kb));
  else
    cJSON_AddNullToObject(pooled, "body_s_per_step");
  cJSON_AddItemToObject(pooled, "step_s_runs", runs);
  runs = NULL;
out:
  cJSON_Delete(runs);
  cJSON_Delete(records);
  free(step);
  free(body);
  return pooled;
}

cJSON *sf_granularity_check(const cJSON *pooled)
{
  return pooled && usable(pooled, NULL) ? cJSON_Duplicate(pooled, 1) : NULL;
}

/* ---- METG ------------------------------------------------------------------------------------------------- */

static int cmp_pt(const void *a, const void *b)
{
  const sf_gran_pt *p = a, *q = b;
  return (p->x_us > q->x_us) - (p->x_us < q->x_us);
}

void sf_metg_compute(const sf_gran_pt *pts, size_t n, double level, sf_metg *m)
{
  memset(m, 0, sizeof *m);
  m->metg_us = m->extrapolated_us = NAN;
  sf_gran_pt *p = sf_calloc(n + 1, sizeof *p, "curve");
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(pts[i].x_us) && isfinite(pts[i].eff) && pts[i].x_us > 0) p[k++] = pts[i];
  qsort(p, k, sizeof *p, cmp_pt);
  size_t i = 0;
  while (i < k && p[i].eff < level) i++;
  if (k == 0)
    m->side = 2;
  else if (i == k) { /* never reaches level: the longest tasks are the closest */
    m->side = 1;
    m->has_lo = 1, m->lo = p[k - 1];
  } else if (i == 0) { /* the shortest tasks still reach it */
    m->side = -1;
    m->has_hi = 1, m->hi = p[0];
    if (p[0].eff > 0 && p[0].eff < 1) m->extrapolated_us = p[0].x_us * (1 / p[0].eff - 1) * level / (1 - level);
  } else {
    m->has_hi = m->has_lo = 1, m->hi = p[i], m->lo = p[i - 1];
    double t = (level - m->lo.eff) / (m->hi.eff - m->lo.eff);
    m->metg_us = exp(log(m->lo.x_us) + t * (log(m->hi.x_us) - log(m->lo.x_us)));
  }
  free(p);
}

void sf_metg_describe(const sf_metg *m, double level, char *buf, size_t n)
{
  switch (m->side) {
  case 0: snprintf(buf, n, "%.3g", m->metg_us); break;
  case 1: snprintf(buf, n, "above the sweep: even %.3g us tasks stay below %.0f %%", m->lo.x_us, level * 100); break;
  case -1:
    if (isfinite(m->extrapolated_us))
      snprintf(buf, n, "below the sweep: %.3g us tasks still reach %.0f %%; %.2g us extrapolated (constant cost per task, not measured)",
               m->hi.x_us, m->hi.eff * 100, m->extrapolated_us);
    else
      snprintf(buf, n, "below the sweep: %.3g us tasks still reach %.0f %%", m->hi.x_us, m->hi.eff * 100);
    break;
  default: snprintf(buf, n, "no point"); break;
  }
}

/* ---- the curves of a summary ----------------------------------------------------------------------------- */

static const char *str_of(const cJSON *g, const char *k) { return cJSON_GetObjectItemCaseSensitive(g, k)->valuestring; }
static double num_of(const cJSON *g, const char *k) { return sf_json_num(cJSON_GetObjectItemCaseSensitive(g, k)); }

/* The reference of a shape: the median task-body time per step of its sequential-executor groups, or NAN */
static double reference(const sf_summary *s, const char *shape)
{
  double *v = sf_calloc(s->n + 1, sizeof *v, "references"), ref;
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    const cJSON *g = s->g[i].granularity;
    if (g && !strcmp(str_of(g, "runtime"), "sequential") && !strcmp(str_of(g, "shape"), shape) &&
        positive(cJSON_GetObjectItemCaseSensitive(g, "body_s_per_step")))
      v[k++] = num_of(g, "body_s_per_step");
  }
  ref = median(v, k);
  free(v);
  return ref;
}

static sf_gran_series *series_for(sf_granularity *out, const char *name, size_t cap)
{
  for (size_t i = 0; i < out->n; i++)
    if (!strcmp(out->s[i].series, name)) return &out->s[i];
  sf_gran_series *se = &out->s[out->n++];
  snprintf(se->series, sizeof se->series, "%s", name);
  se->pts = sf_calloc(cap, sizeof *se->pts, "curve");
  return se;
}

static int cmp_series(const void *a, const void *b)
{
  return strcmp(((const sf_gran_series *)a)->series, ((const sf_gran_series *)b)->series);
}

void sf_granularity_compute(const sf_summary *s, sf_granularity *out)
{
  memset(out, 0, sizeof *out);
  out->s = sf_calloc(s->n + 1, sizeof *out->s, "series");
  for (size_t i = 0; i < s->n; i++) {
    const cJSON *g = s->g[i].granularity;
    if (!g) continue;
    double ref = reference(s, str_of(g, "shape")), w = num_of(g, "workers");
    if (!isfinite(ref)) {
      out->no_reference++;
      continue;
    }
    char name[48];
    snprintf(name, sizeof name, "%.20s/%.0f", str_of(g, "runtime"), w);
    sf_gran_series *se = series_for(out, name, s->n + 1);
    se->pts[se->n].x_us = ref / num_of(g, "tasks_per_step") * 1e6;
    se->pts[se->n++].eff = ref / (w * num_of(g, "step_s"));
  }
  qsort(out->s, out->n, sizeof *out->s, cmp_series);
  for (size_t i = 0; i < out->n; i++) {
    qsort(out->s[i].pts, out->s[i].n, sizeof *out->s[i].pts, cmp_pt);
    sf_metg_compute(out->s[i].pts, out->s[i].n, 0.5, &out->s[i].metg);
  }
}

void sf_granularity_free(sf_granularity *g)
{
  for (size_t i = 0; i < g->n; i++) free(g->s[i].pts);
  free(g->s);
  memset(g, 0, sizeof *g);
}

int sf_granularity_curves(const sf_granularity *g)
{
  for (size_t i = 0; i < g->n; i++)
    if (g->s[i].n >= 2) return 1;
  return 0;
}

void sf_granularity_print_text(const sf_summary *s, FILE *out)
{
  sf_granularity gr;
  sf_granularity_compute(s, &gr);
  if (sf_granularity_curves(&gr)) {
    fprintf(out, "\nRuntime granularity: METG(50 %%), the smallest mean task duration at 50 %% efficiency\n"
                 "(efficiency = sequential task-body time per step / (workers x step time); docs/runtimes.md)\n");
    for (size_t i = 0; i < gr.n; i++) {
      const sf_metg *m = &gr.s[i].metg;
      char cell[256], hi[64] = "-", lo[64] = "-";
      sf_metg_describe(m, 0.5, cell, sizeof cell);
      if (m->has_hi) snprintf(hi, sizeof hi, "%.3g us at %.0f %%", m->hi.x_us, m->hi.eff * 100);
      if (m->has_lo) snprintf(lo, sizeof lo, "%.3g us at %.0f %%", m->lo.x_us, m->lo.eff * 100);
      fprintf(out, "%-14s METG(50 %%): %s%s | bracket: above 50 %% %s, below 50 %% %s | %zu points\n", gr.s[i].series,
              cell, m->side == 0 ? " us" : "", hi, lo, gr.s[i].n);
    }
    if (gr.no_reference)
      fprintf(out, "note: %ld group(s) with a granularity record have no sequential-executor run of their shape "
                   "(the reference): left out of the granularity curves\n", gr.no_reference);
  }
  sf_granularity_free(&gr);
}
