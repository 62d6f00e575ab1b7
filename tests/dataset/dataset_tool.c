/* Test and benchmark driver for dataset generation (not a test by itself): parses the usual config
 * options, starts StarPU, optionally makes the fractal library (--fractals), then runs
 * sf_dataset_prepare and prints one line
 *   DATASET dir=<dir> generated=<0|1> repaired=<n> volumes=<n> seconds=<s> volumes_per_s=<r>
 * Used by test_dataset_interrupt.sh (kill -9 partway) and scripts/bench-datagen. Exit status is
 * sf_dataset_prepare's (0, 1 or 2). */
#include <stdio.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/datagen.h"
#include "scaffold/dataset.h"
#include "scaffold/runtime.h"

static int want_fractals = 0;

static int extra_opt(void *ctx, int argc, char **argv, int i)
{
  (void)ctx;
  (void)argc;
  if (!strcmp(argv[i], "--fractals")) {
    want_fractals = 1;
    return 1;
  }
  if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
    printf("usage: dataset_tool [-c CONFIG] [--set KEY=VALUE ...] [--fractals]\n");
    sf_config_print_cli_help(stdout);
    exit(0);
  }
  return 0;
}

int main(int argc, char **argv)
{
  sf_config c;
  sf_config_init(&c);
  int verbose = 0;
  int next = sf_config_from_cli(&c, argc, argv, 1, &verbose, extra_opt, NULL);
  if (next < argc) sf_die(SF_EXIT_USAGE, "dataset_tool: unexpected argument '%s'", argv[next]);
  sf_runtime_init(&c);
  char desc[256];
  sf_info("dataset_tool: %s", sf_runtime_describe(desc, sizeof desc));
  if (want_fractals && sf_generate_fractals(&c) != 0) return SF_EXIT_FAILURE;
  sf_dataset d;
  double t0 = sf_now();
  int rc = sf_dataset_prepare(&c, &d);
  double secs = sf_now() - t0;
  if (rc == 0) {
    int nv = d.n_train + d.n_val;
    printf("DATASET dir=%s generated=%d repaired=%d volumes=%d seconds=%.3f volumes_per_s=%.2f\n", d.dir, d.generated,
           d.repaired, nv, secs, d.generated && secs > 0 ? nv / secs : 0.0);
    sf_dataset_free(&d);
  }
  sf_runtime_shutdown();
  sf_config_free(&c);
  return rc;
}
