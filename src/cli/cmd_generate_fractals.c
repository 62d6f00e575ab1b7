/* `scaffold generate_fractals -c CFG [--set key=value ...] [--datagen-batch-size N] [-v]`
 * (spec §1.1): starts StarPU from the config, makes the fractal class library (search) and its
 * 145 instances per class (scaffold/datagen.h), then shuts StarPU down. With `trace: 1` the run is
 * traced (scaffold/trace.h) into <fractal root>/datagen_trace/. Exit 0 on success, 2 on
 * usage/config errors, 1 on runtime/I/O errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/progress.h"
#include "scaffold/config.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/runtime.h"
#include "scaffold/trace.h"

static void usage(FILE *out)
{
  fprintf(out,
          "usage: scaffold generate_fractals -c CONFIG [--set KEY=VALUE ...] [--datagen-batch-size N] [-v]\n"
          "\n"
          "Generate the fractal classes (IFS search, n_categories of them) and 145 instances per class\n"
          "under <fract_base_dir>/var<variance_threshold>/seed<seed>/. Existing complete files are kept;\n"
          "datagen_from_scratch: 1 regenerates everything. Workers and scheduler come from the keys\n"
          "ncpu, ncuda, scheduler (or STARPU_NCPU, STARPU_SCHED when those keys are unset).\n"
          "With trace: 1, a task trace and worker statistics with the utilisation of each phase (class\n"
          "search, instances) go to <root>/datagen_trace/{trace.json,worker_stats.json,worker_stats.txt}.\n\n");
  sf_config_print_cli_help(out);
}

static int extra_opt(void *ctx, int argc, char **argv, int i)
{
  (void)ctx;
  (void)argc;
  if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
    usage(stdout);
    exit(0);
  }
  return 0;
}

/* The keys the fractal library depends on, the runtime that generates it, and the keys every command reads */
static const char *const library_reads[] = {
  "fract_base_dir", "n_categories", "n_instances_used_per_fractal", "variance_threshold", "normalize", "seed",
  "problem_scale", "datagen_from_scratch", "datagen_batch_size", "scale", "dist", "framework", "trace",
  "scheduler", "runtime", "ncpu", "ncuda", "nopencl", "worker_nice", "progress_interval", NULL};

int sf_cmd_generate_fractals(int argc, char **argv)
{
  sf_config c;
  sf_config_init(&c);
  int verbose = 0;
  int next = sf_config_from_cli(&c, argc, argv, 1, &verbose, extra_opt, NULL);
  if (next < argc) sf_die(SF_EXIT_USAGE, "generate_fractals: unexpected argument '%s' (--help lists the options)", argv[next]);
  if (!c.source_file) {
    usage(stderr);
    sf_die(SF_EXIT_USAGE, "generate_fractals needs a config file: -c CONFIG");
  }
  sf_config_refuse_unread(&c, "scaffold generate_fractals", library_reads,
                          "it generates the fractal library only; the dataset, model and training keys take effect "
                          "in `scaffold benchmark`, which also generates a missing library",
                          verbose);
  const char *bad_key = NULL;
  char why[512];
  if (sf_runtime_check_config(&c, &bad_key, why, sizeof why) != 0) sf_config_refuse(&c, bad_key, "%s", why);
  sf_progress_set_interval(c.progress_interval);
  sf_runtime_init(&c);
  char desc[256];
  sf_info("generate_fractals: %s", sf_runtime_describe(desc, sizeof desc));
  char *tdir = NULL, err[1024];
  if (c.trace) {
    char *root = sf_fractal_root_dir(&c);
    tdir = sf_path_join(root, "datagen_trace");
    free(root);
    if (sf_mkdir_p(tdir) != 0) sf_die(SF_EXIT_FAILURE, "trace: cannot create directory %s: %s", tdir, strerror(errno));
    if (sf_trace_begin_as(tdir, "scaffold generate_fractals", "data generation", err, sizeof err) != 0)
      sf_die(SF_EXIT_FAILURE, "trace: %s", err);
  }
  int rc = sf_generate_fractals(&c);
  if (sf_trace_end(err, sizeof err) != 0) {
    fprintf(stderr, "scaffold: error: trace: %s\n", err);
    if (!rc) rc = SF_EXIT_FAILURE;
  } else if (tdir) {
    sf_info("trace: %s/trace.json, worker statistics and phase utilisation in %s/worker_stats.txt", tdir, tdir);
  }
  free(tdir);
  sf_runtime_shutdown();
  sf_config_free(&c);
  return rc;
}
