/* sf_ratelog and sf_steady on synthetic series with hand-computed answers: slice boundaries,
 * one long step producing repeated entries, remainder carry, the final partial slice, GFLOP/s
 * sliced alongside, the stop rule, the sync hook, and mean(rates[-20:-2]) for m = 0..25. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bench.h"
#include "testutil.h"

static int nsync;
static void count_sync(void *ctx) { (void)ctx; nsync++; }

static void check_close(const char *what, double got, double want)
{
  double err = fabs(got - want) / fmax(fabs(want), 1e-300);
  SF_CHECK(err < 1e-12, "%s: got %.17g, want %.17g (rel err %.3g)", what, got, want, err);
}

int main(void)
{
  /* --- slicing: s = 0.5 s ---------------------------------------------------------------- */
  sf_ratelog r;
  sf_ratelog_init(&r, 0.5, 0);
  sf_ratelog_elapse(&r, 0.2, 20, 40e9);
  sf_ratelog_elapse(&r, 0.2, 20, 40e9);
  SF_CHECK(r.n == 0, "0.4 s pending must not complete a slice (got %zu rates)", r.n);
  sf_ratelog_elapse(&r, 0.2, 20, 40e9); /* T = 0.6: k = 1.2 -> one copy of 60/0.6 = 100 */
  SF_CHECK(r.n == 1, "T = 0.6 s: want 1 rate, got %zu", r.n);
  if (r.n >= 1) check_close("rate[0]", r.rates[0], 100.0);
  if (r.n >= 1) check_close("gflops[0]", r.gflops[0], 200.0);
  check_close("carried time", r.t, 0.1);          /* 0.6 mod 0.5 */
  check_close("carried count", r.c, 10.0);        /* 60 - 1*(60/1.2) */
  /* One long step: T = 0.1 + 1.3 = 1.4, C = 10 + 13 = 23, k = 2.8 -> two copies of 23/1.4. */
  sf_ratelog_elapse(&r, 1.3, 13, 26e9);
  SF_CHECK(r.n == 3, "long step: want 3 rates, got %zu", r.n);
  if (r.n >= 3) {
    check_close("rate[1]", r.rates[1], 23.0 / 1.4);
    check_close("rate[2]", r.rates[2], 23.0 / 1.4);
    check_close("gflops[2]", r.gflops[2], 46.0 / 1.4);
  }
  check_close("carried time after long step", r.t, 0.4);       /* 1.4 mod 0.5 */
  check_close("carried count after long step", r.c, 23.0 - 2 * (23.0 / 2.8));
  sf_ratelog_finish(&r); /* final partial slice: C/T = (23*0.4/1.4)/0.4 = 23/1.4 */
  SF_CHECK(r.n == 4, "finish: want 4 rates (partial slice), got %zu", r.n);
  if (r.n >= 4) check_close("partial slice", r.rates[3], 23.0 / 1.4);
  check_close("total time", r.total_time, 1.9);
  check_close("total count", r.total_count, 73.0);
  sf_ratelog_finish(&r);
  SF_CHECK(r.n == 4, "finish must be idempotent (got %zu rates)", r.n);
  sf_ratelog_free(&r);

  /* Exactly one slice: no partial slice is added when nothing is pending. */
  sf_ratelog_init(&r, 0.5, 0);
  sf_ratelog_elapse(&r, 0.5, 5, 0);
  sf_ratelog_finish(&r);
  SF_CHECK(r.n == 1, "exact slice then finish: want 1 rate, got %zu", r.n);
  if (r.n) check_close("exact slice", r.rates[0], 10.0);
  sf_ratelog_free(&r);

  /* Stop rule and metrics. */
  sf_ratelog_init(&r, 0.5, 50);
  int steps = 0;
  while (!sf_ratelog_done(&r)) sf_ratelog_elapse(&r, 0.1, 8, 0), steps++;
  SF_CHECK(steps == 7, "max_count 50 with 8 per step: want 7 steps (overshoot to 56), got %d", steps);
  sf_ratelog_log(&r, "loss", 2.0);
  sf_ratelog_log(&r, "loss", 1.5);
  sf_ratelog_log(&r, "dice", 0.9);
  SF_CHECK(r.nmetrics == 2 && r.metric_vals[0] == 1.5, "metrics keep the last value: n=%zu loss=%g", r.nmetrics,
           r.nmetrics ? r.metric_vals[0] : NAN);
  sf_ratelog_free(&r);

  /* Sync hook: only when a step completes a slice, plus once at finish. */
  sf_ratelog_init(&r, 1000.0, 0);
  sf_ratelog_set_sync(&r, count_sync, NULL);
  nsync = 0;
  for (int i = 0; i < 5; i++) {
    sf_ratelog_iter_begin(&r);
    sf_ratelog_iter_end(&r, 1, 0);
  }
  SF_CHECK(nsync == 0, "no slice boundary crossed: sync must not run (ran %d times)", nsync);
  sf_ratelog_finish(&r);
  SF_CHECK(nsync == 1, "finish must sync once (ran %d times)", nsync);
  SF_CHECK(r.n == 1, "finish adds the partial slice (got %zu rates)", r.n);
  sf_ratelog_free(&r);
  sf_ratelog_init(&r, 1e-9, 0);
  sf_ratelog_set_sync(&r, count_sync, NULL);
  nsync = 0;
  for (int i = 0; i < 4; i++) {
    sf_ratelog_iter_begin(&r);
    sf_ratelog_iter_end(&r, 1, 0);
  }
  SF_CHECK(nsync == 4, "every step crosses a 1 ns slice: want 4 syncs, got %d", nsync);
  sf_ratelog_free(&r);

  /* Progress line once metrics exist. */
  FILE *pf = tmpfile();
  sf_ratelog_init(&r, 0.5, 100);
  r.progress = pf;
  sf_ratelog_log(&r, "loss", 0.25);
  sf_ratelog_elapse(&r, 0.5, 10, 0);
  rewind(pf);
  char line[256] = "";
  if (!fgets(line, sizeof line, pf)) line[0] = '\0';
  SF_CHECK(strstr(line, "[10/100]") && strstr(line, "20.00 items/s") && strstr(line, "loss=0.25"),
           "progress line: got '%s'", line);
  fclose(pf);
  sf_ratelog_free(&r);

  /* --- steady = mean(rates[-20:-2]) with rates[i] = i + 1 ------------------------------------- */
  double v[25];
  for (int i = 0; i < 25; i++) v[i] = i + 1;
  SF_CHECK(isnan(sf_steady(v, 0)), "m=0 must be NaN, got %g", sf_steady(v, 0));
  SF_CHECK(isnan(sf_steady(v, 1)), "m=1 must be NaN, got %g", sf_steady(v, 1));
  SF_CHECK(isnan(sf_steady(v, 2)), "m=2 must be NaN, got %g", sf_steady(v, 2));
  check_close("m=3: rates[0:1]", sf_steady(v, 3), 1.0);
  check_close("m=10: rates[0:8] (warm-up included)", sf_steady(v, 10), 4.5);
  check_close("m=20: rates[0:18]", sf_steady(v, 20), 9.5);
  check_close("m=21: rates[1:19]", sf_steady(v, 21), 10.5);
  check_close("m=25: rates[5:23]", sf_steady(v, 25), 14.5);

  /* --- the "too few samples" threshold is the rule's own: a value from SF_STEADY_MIN_SLICES on --- */
  SF_CHECK(isnan(sf_steady(v, SF_STEADY_MIN_SLICES - 1)), "SF_STEADY_MIN_SLICES - 1 = %d slices must give NaN",
           SF_STEADY_MIN_SLICES - 1);
  SF_CHECK(isfinite(sf_steady(v, SF_STEADY_MIN_SLICES)), "SF_STEADY_MIN_SLICES = %d slices must give a value",
           SF_STEADY_MIN_SLICES);
  check_close("full window: SF_STEADY_FULL_SLICES averages 18", sf_steady(v, SF_STEADY_FULL_SLICES), 9.5);

  /* --- --max-time: the stop by timed step seconds, whatever the rate ------------------------------ */
  const double rates_per_step[] = {1, 1e6}; /* a slow and a very fast "machine": same slices */
  for (int m = 0; m < 2; m++) {
    sf_ratelog_init(&r, 0.5, 0);
    sf_ratelog_set_max_time(&r, 2.0);
    steps = 0;
    while (!sf_ratelog_done(&r)) {
      sf_ratelog_elapse(&r, 0.1, rates_per_step[m] * 0.1, 0);
      steps++;
    }
    sf_ratelog_finish(&r);
    SF_CHECK(steps >= 20 && steps <= 21, "max_time 2 s with 0.1 s steps: want 20 steps (21 for rounding), got %d", steps);
    SF_CHECK(r.n >= 4, "max_time 2 s of 0.5 s slices: want >= 4 slices, got %zu", r.n);
    char why[96];
    sf_ratelog_done_why(&r, why, sizeof why);
    SF_CHECK(!strcmp(why, "--max-time 2 s of training steps reached"), "done_why: got '%s'", why);
    sf_ratelog_free(&r);
  }
  sf_ratelog_init(&r, 0.5, 16); /* both limits: whichever comes first (here the count) */
  sf_ratelog_set_max_time(&r, 100);
  steps = 0;
  while (!sf_ratelog_done(&r)) {
    sf_ratelog_elapse(&r, 0.1, 8, 0);
    steps++;
  }
  char why[96];
  SF_CHECK(steps == 2 && !strcmp(sf_ratelog_done_why(&r, why, sizeof why), "--max-count 16 training samples reached"),
           "max_count 16 before max_time 100: %d steps, '%s'", steps, why);
  sf_ratelog_free(&r);
  return sf_test_end();
}
