/* Probe for the shipped-perfmodel tests (test_perfmodels.sh): starts StarPU through sf_runtime_init
 * with one CPU worker and the given scheduler, then prints the perfmodel environment StarPU ran with
 * and, given a history file, what StarPU predicts for that file's footprints:
 *   perfmodels_probe SCHED [HISTORY_FILE]
 *   -> PERF_MODEL_DIR=<value|(unset)>  HOSTNAME=<value|(unset)>  DESCRIBE=<sf_perfmodels_describe>
 *      EXPECTED footprint=<hash> nx=<n> expected_us=<StarPU's expected length> mean_us=<file's mean>
 * The history file is a StarPU 1.3 model of a codelet on one float vector (sf_zero_v1); the probe
 * loads it under the file's symbol through a codelet of its own, so a number equal to the file's mean
 * (not nan) means StarPU read that model from STARPU_PERF_MODEL_DIR with STARPU_HOSTNAME. */
#include <math.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/perfmodels.h"
#include "scaffold/runtime.h"

static void probe_cpu(void *buffers[], void *arg)
{
  (void)buffers;
  (void)arg;
}

static struct starpu_perfmodel probe_model = {.type = STARPU_HISTORY_BASED};
static struct starpu_codelet probe_cl = {
    .cpu_funcs = {probe_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .model = &probe_model, .name = "sf_pm_probe"};

/* Prints one EXPECTED line per footprint of the file with >= 10 samples (StarPU's calibration minimum). */
static int probe_file(const char *path)
{
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "perfmodels_probe: cannot open %s\n", path);
    return 1;
  }
  /* symbol = file name up to the first '.' after the last '/' */
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  static char symbol[256];
  snprintf(symbol, sizeof symbol, "%.*s", (int)strcspn(base, "."), base);
  probe_model.symbol = symbol;
  struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype(0, 0);
  char line[1024];
  int in_table = 0, printed = 0;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "# hash", 6)) {
      in_table = 1;
      continue;
    }
    if (line[0] == '#') {
      in_table = 0;
      continue;
    }
    unsigned hash;
    unsigned long size, n;
    double flops, mean, dev, sum, sum2;
    if (!in_table || sscanf(line, "%x %lu %lf %lf %lf %lf %lf %lu", &hash, &size, &flops, &mean, &dev, &sum, &sum2,
                            &n) != 8 || n < 10 || size % sizeof(float))
      continue;
    uint32_t nx = (uint32_t)(size / sizeof(float));
    starpu_data_handle_t h;
    starpu_vector_data_register(&h, -1, 0, nx, sizeof(float));
    struct starpu_task *t = starpu_task_create();
    t->cl = &probe_cl;
    t->handles[0] = h;
    /* the expected length first: it loads the model (its per-arch state), which the footprint reads once
     * a worker has run a task (the runtime's start-up tasks register the workers' arch combination) */
    double exp = starpu_task_expected_length(t, arch, 0);
    uint32_t fp = starpu_task_footprint(&probe_model, t, arch, 0);
    if (fp == hash) {
      printf("EXPECTED footprint=%08x nx=%u expected_us=%.6g mean_us=%.6g\n", hash, nx, exp, mean);
      printed++;
    }
    t->destroy = 0;
    starpu_task_destroy(t);
    starpu_data_unregister_no_coherency(h);
  }
  fclose(f);
  if (!printed) printf("EXPECTED none: no footprint of %s with >= 10 samples is a float vector\n", path);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: perfmodels_probe SCHED [HISTORY_FILE]\n");
    return 2;
  }
  sf_config c;
  sf_config_init(&c);
  char kv[128];
  snprintf(kv, sizeof kv, "scheduler=%s", argv[1]);
  sf_config_apply_override(&c, kv);
  sf_config_apply_override(&c, "ncpu=1");
  sf_config_finalize(&c);
  sf_runtime_init(&c);
  const char *d = getenv("STARPU_PERF_MODEL_DIR"), *hn = getenv("STARPU_HOSTNAME");
  char desc[8192];
  printf("PERF_MODEL_DIR=%s\nHOSTNAME=%s\nDESCRIBE=%s\n", d ? d : "(unset)", hn ? hn : "(unset)",
         sf_perfmodels_describe(desc, sizeof desc));
  int rc = argc > 2 ? probe_file(argv[2]) : 0;
  fflush(stdout);
  sf_runtime_shutdown();
  sf_config_free(&c);
  return rc;
}
