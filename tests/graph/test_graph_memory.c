/* Flat memory: 20 training steps through the task graph (ps 4, base 8, 3 slabs, 2 workers) must not
 * grow the resident set size by more than a small bound after the first step, since every tensor is
 * allocated when the graph is created. */
#include <stdio.h>
#include <string.h>

#include "graph_testlib.h"
#include "scaffold/common.h"
#include "scaffold/graph.h"
#include "scaffold/config.h"
#include "testutil.h"

#ifndef NSTEPS
#define NSTEPS 20
#endif
#define MAX_GROWTH ((size_t)4 << 20)

/* AddressSanitizer keeps freed blocks in a quarantine (256 MiB by default) and pads every block, so
 * the RSS grows for reasons of its own: the steps still run (and are checked by the sanitizers),
 * the growth bound is skipped. */
#if defined(__SANITIZE_ADDRESS__)
#define SF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_ASAN 1
#endif
#endif
#ifndef SF_ASAN
#define SF_ASAN 0
#endif

int main(void)
{
  gt_problem p;
  gt_problem_init(&p, 4, 8, 4, 4, 3);
  gt_runtime_start("lws", 2);
  size_t n = p.u.total_params;
  float *params = sf_malloc(n * sizeof(float), "params");
  memcpy(params, p.params0, n * sizeof(float));
  sf_config c;
  sf_config_init(&c);
  c.slabs = 3;
  char err[256];
  sf_graph *g = sf_graph_create(&p.u, &c, params, err, sizeof err);
  SF_CHECK(g != NULL, "sf_graph_create: %s", err);
  if (!g) return sf_test_end();
  float *x = sf_malloc(p.nvox * 3 * sizeof(float), "x");
  uint16_t *lab = sf_malloc(p.nvox * sizeof(uint16_t), "lab");
  size_t rss[NSTEPS];
  double out[3];
  for (int s = 0; s < NSTEPS; s++) {
    gt_sample(&p, s % 4, x, lab);
    sf_graph_train_step(g, x, lab, p.cw, 1e-3, s + 1, out);
    rss[s] = gt_rss_bytes();
  }
  size_t growth = rss[NSTEPS - 1] > rss[0] ? rss[NSTEPS - 1] - rss[0] : 0;
  for (int s = 1; s < NSTEPS; s *= 2) printf("  RSS after step %d: %.2f MiB\n", s + 1, rss[s] / 1048576.0);
  printf("RSS after step 1: %.2f MiB, after step 2: %.2f MiB, after step %d: %.2f MiB (growth %.1f KiB)\n",
         rss[0] / 1048576.0, rss[1] / 1048576.0, NSTEPS, rss[NSTEPS - 1] / 1048576.0, growth / 1024.0);
  SF_CHECK(rss[0] > 0, "could not read /proc/self/statm");
  if (!SF_ASAN)
    SF_CHECK(growth <= MAX_GROWTH, "RSS grew by %zu bytes over %d steps (bound %zu)", growth, NSTEPS - 1,
             MAX_GROWTH);
  char desc[256];
  sf_graph_describe(g, desc, sizeof desc);
  printf("%s\n", desc);
  sf_graph_destroy(g);
  sf_config_free(&c);
  gt_runtime_stop();
  free(params);
  free(x);
  free(lab);
  gt_problem_free(&p);
  gt_cleanup();
  int rc = sf_test_end();
  if (SF_ASAN && rc == 0)
    return sf_test_skip("built with AddressSanitizer: its quarantine and redzones grow the RSS, so the "
                        "RSS growth bound was not checked");
  return rc;
}
