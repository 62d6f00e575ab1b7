/* The report's runtime granularity arithmetic (src/bench/granularity.c) on hand-made records, with the numbers of
 * tests/perf/runtimes_metg.py so that the C port and scripts/runtimes_sweep.py agree: METG(50 %) interpolated in
 * log(duration) between the bracketing points (a non-monotone curve too), the sides when the sweep does not
 * bracket the crossing (with the constant-cost extrapolation), the pooling of a group's runs (medians; a group
 * mixing shapes has no point) and the curves of a summary (the sequential executor's reference, efficiency =
 * reference / (workers x step), duration = reference / tasks), groups without a reference left out. */
#include <math.h>
#include <string.h>

#include "scaffold/bench.h"
#include "testutil.h"

static void close_to(const char *what, double got, double want)
{
  SF_CHECK(fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want)), "%s: got %.12g, want %.12g", what, got, want);
}

static void metg_cases(void)
{
  sf_metg m;
  char buf[256];
  sf_gran_pt a[] = {{100, 0.9}, {10, 0.6}, {1, 0.3}};
  sf_metg_compute(a, 3, 0.5, &m);
  SF_CHECK(m.side == 0, "bracketed: side %d", m.side);
  close_to("METG between (10 us, 60 %) and (1 us, 30 %)", m.metg_us, pow(10, 2.0 / 3.0));
  SF_CHECK(m.has_hi && m.hi.x_us == 10 && m.has_lo && m.lo.x_us == 1, "bracket %g / %g", m.hi.x_us, m.lo.x_us);
  sf_gran_pt b[] = {{100, 0.4}, {10, 0.7}, {1, 0.2}}; /* not monotone: the smallest duration at >= 50 % decides */
  sf_metg_compute(b, 3, 0.5, &m);
  close_to("METG of a non-monotone curve", m.metg_us, exp((0.5 - 0.2) / (0.7 - 0.2) * log(10)));
  sf_gran_pt c[] = {{10, 0.9}, {1, 0.8}};
  sf_metg_compute(c, 2, 0.5, &m);
  SF_CHECK(m.side == -1 && m.hi.x_us == 1, "every point >= 50 %%: side %d", m.side);
  close_to("extrapolated crossing of (1 us, 80 %)", m.extrapolated_us, 0.25);
  sf_metg_describe(&m, 0.5, buf, sizeof buf);
  SF_CHECK(strstr(buf, "below the sweep") && strstr(buf, "0.25 us extrapolated") && strstr(buf, "not measured"), "%s", buf);
  sf_gran_pt d[] = {{10, 0.4}, {1, 0.1}};
  sf_metg_compute(d, 2, 0.5, &m);
  sf_metg_describe(&m, 0.5, buf, sizeof buf);
  SF_CHECK(m.side == 1 && m.lo.x_us == 10 && strstr(buf, "above the sweep"), "every point < 50 %%: %s", buf);
  sf_gran_pt e[] = {{1, 1.0}};
  sf_metg_compute(e, 1, 0.5, &m);
  SF_CHECK(m.side == -1 && isnan(m.extrapolated_us), "a point at 100 %%: no extrapolation (%g)", m.extrapolated_us);
  sf_metg_compute(e, 0, 0.5, &m);
  SF_CHECK(m.side == 2, "no point: side %d", m.side);
}

/* A run's record */
static cJSON *rec(const char *shape, const char *rt, int workers, int tasks, double step, double body)
{
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "shape", shape);
  cJSON_AddStringToObject(r, "runtime", rt);
  cJSON_AddNumberToObject(r, "workers", workers);
  cJSON_AddNumberToObject(r, "tasks_per_step", tasks);
  cJSON_AddNumberToObject(r, "steps", 10);
  cJSON_AddNumberToObject(r, "step_s", step);
  if (body > 0) cJSON_AddNumberToObject(r, "body_s_per_step", body); else cJSON_AddNullToObject(r, "body_s_per_step");
  return r;
}

static cJSON *pool(cJSON *a, cJSON *b, cJSON *c)
{
  cJSON *arr = cJSON_CreateArray();
  cJSON_AddItemToArray(arr, a);
  if (b) cJSON_AddItemToArray(arr, b);
  if (c) cJSON_AddItemToArray(arr, c);
  return sf_granularity_pool(arr);
}

static void summary_cases(void)
{
  /* runtimes_metg.py's records: the sequential reference is the median body time, 0.011 s; 100 tasks */
  sf_group g[5];
  memset(g, 0, sizeof g);
  g[0].granularity = pool(rec("S", "sequential", 1, 100, 0.011, 0.010), rec("S", "sequential", 1, 100, 0.013, 0.012),
                          rec("S", "sequential", 1, 100, 0.012, 0.011));
  g[1].granularity = pool(rec("S", "openmp", 2, 100, 0.011, 0.005), rec("S", "openmp", 2, 100, 0.022, 0.005),
                          rec("S", "openmp", 2, 100, 0.0055, 0.005));
  g[2].granularity = pool(rec("T", "sequential", 1, 10, 0.002, 0.001), rec("T", "sequential", 1, 10, 0.002, 0.001), NULL);
  g[3].granularity = pool(rec("T", "openmp", 2, 10, 0.002, 0.001), NULL, NULL);
  g[4].granularity = pool(rec("U", "starpu", 1, 10, 0.002, -1), NULL, NULL); /* no sequential run of U */
  SF_CHECK(g[0].granularity && g[4].granularity, "pooled records");
  close_to("pooled step_s: the median of the runs", cJSON_GetObjectItem(g[1].granularity, "step_s")->valuedouble, 0.011);
  close_to("pooled body time: the median", cJSON_GetObjectItem(g[0].granularity, "body_s_per_step")->valuedouble, 0.011);
  SF_CHECK(cJSON_IsNull(cJSON_GetObjectItem(g[4].granularity, "body_s_per_step")), "StarPU: no body time");
  SF_CHECK(pool(rec("S", "openmp", 2, 100, 0.011, 0.005), rec("T", "openmp", 2, 100, 0.011, 0.005), NULL) == NULL,
           "a group mixing shapes has no point");
  cJSON *bad = cJSON_CreateObject();
  cJSON_AddStringToObject(bad, "shape", "S");
  SF_CHECK(pool(bad, NULL, NULL) == NULL, "a record without runtime, workers, tasks, step_s is ignored");
  sf_summary s = {g, 5, NULL, NULL, NULL};
  sf_granularity gr;
  sf_granularity_compute(&s, &gr);
  SF_CHECK(gr.n == 2 && !strcmp(gr.s[0].series, "openmp/2") && !strcmp(gr.s[1].series, "sequential/1"),
           "series: %zu (%s)", gr.n, gr.n ? gr.s[0].series : "");
  SF_CHECK(gr.no_reference == 1, "groups without a reference: %ld", gr.no_reference);
  if (gr.n == 2 && gr.s[0].n == 2) { /* points by duration: T (100 us), then S (110 us) */
    close_to("openmp/2 at T: duration 0.001 s / 10 tasks", gr.s[0].pts[0].x_us, 100);
    close_to("openmp/2 at T: 0.001 / (2 x 0.002)", gr.s[0].pts[0].eff, 0.25);
    close_to("openmp/2 at S: duration 0.011 s / 100 tasks", gr.s[0].pts[1].x_us, 110);
    close_to("openmp/2 at S: 0.011 / (2 x 0.011)", gr.s[0].pts[1].eff, 0.5);
    close_to("sequential/1 at S: 0.011 / 0.012", gr.s[1].pts[1].eff, 0.011 / 0.012);
    SF_CHECK(gr.s[0].metg.side == 0, "openmp/2 bracketed: side %d", gr.s[0].metg.side);
    close_to("openmp/2 METG: 110 us at 50 % is the bracket's upper point", gr.s[0].metg.hi.x_us, 110);
    SF_CHECK(sf_granularity_curves(&gr), "curves");
  }
  sf_granularity_free(&gr);
  for (int i = 0; i < 5; i++) cJSON_Delete(g[i].granularity);
}

int main(void)
{
  metg_cases();
  summary_cases();
  return sf_test_end();
}
