/* `scaffold tune`: measures which variant of the 3x3x3 convolution is fastest on this machine for every call
 * shape of a config, and stores the winners in the machine class's tuning record, which later runs use in
 * place of the built-in rules (tune.h; docs/performance.md, "Kernel tuning records"). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class_folder.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/fsutil.h"
#include "scaffold/kernel_tuning_setup.h"
#include "tune.h"

typedef struct {
  const char *cls;
  int ship, budget_ms;
} tune_cli;

static void usage(FILE *f)
{
  fprintf(f,
          "usage: scaffold tune [-c CONFIG] [--set KEY=VALUE ...] [--class NAME] [--ship] [--budget-ms N] [-v]\n\n"
          "Times every variant of the 3x3x3 convolution that can run each call shape of the config's network (its\n"
          "problem_scale, channels, batch, torch_amp, ncpu and slab plan), and stores the fastest per shape in the\n"
          "machine class's tuning record, which every later run on this machine uses in place of the built-in\n"
          "rules (the run header says which). Entries for other shapes already in the record are kept, so tuning\n"
          "several configs adds them up. One training step lists the shapes; the timing runs in one thread.\n"
          "  --class NAME   the class to write (default: the class that fits this machine, else a name made from\n"
          "                 it, e.g. intel-f6m207-2core)\n"
          "  --ship         write into the source tree's perfmodels/NAME (to commit) instead of the user's classes\n"
          "                 ($XDG_CACHE_HOME/scaffold-starpu/classes/NAME)\n"
          "  --budget-ms N  time per candidate and shape, in 3 turns (default 30; 1-10000)\n"
          "  -v             one line per shape: the winner and the built-in rules' choice, with their times\n\n");
  sf_config_print_cli_help(f);
}

static int extra_opt(void *ctx, int argc, char **argv, int i)
{
  tune_cli *t = ctx;
  const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
    usage(stdout);
    exit(0);
  }
  if (!strcmp(a, "--ship")) return t->ship = 1, 1;
  if (strcmp(a, "--class") && strcmp(a, "--budget-ms")) return 0;
  if (!v) sf_die(SF_EXIT_USAGE, "tune: option '%s' needs an argument", a);
  if (!strcmp(a, "--class")) {
    t->cls = v;
  } else {
    long x;
    if (sf_parse_long_in(v, 1, 10000, &x) != 0)
      sf_die(SF_EXIT_USAGE, "tune: option '--budget-ms' expects an integer in [1, 10000], got '%s'", v);
    t->budget_ms = (int)x;
  }
  return 2;
}

int sf_cmd_tune(int argc, char **argv)
{
  tune_cli t = {.budget_ms = 30};
  sf_config c;
  int verbose = sf_steps_command_config(&c, argc, argv, "tune", extra_opt, &t);
  char err[PATH_MAX + 512];
  sf_class_folder f;
  if (sf_class_folder_resolve(t.cls, t.ship, &f, err, sizeof err) != 0) sf_die(SF_EXIT_USAGE, "tune: %s", err);
  if (sf_class_folder_prepare(&f, err, sizeof err) != 0) sf_die(SF_EXIT_FAILURE, "tune: %s", err);
  char tuning[PATH_MAX + 16], record[PATH_MAX + 128];
  snprintf(tuning, sizeof tuning, "%s/tuning", f.dir);
  snprintf(record, sizeof record, "%s/%s", tuning, sf_tuning_record_name());
  if (sf_mkdir_p(tuning) != 0) sf_die(SF_EXIT_FAILURE, "tune: cannot create %s", tuning);
  printf("tune: class %s (%s%s), record %s\n", f.name, f.dir, f.created ? ", created with a MATCH for this machine" : "",
         record);
  sf_tune_opts o = {.budget_s = t.budget_ms * 1e-3, .log = stdout, .verbose = verbose};
  sf_tune_summary s;
  if (sf_tune_config(&c, record, &o, &s, err, sizeof err) != 0) sf_die(SF_EXIT_FAILURE, "tune: %s", err);
  printf("tune: %d call shapes, %d with a choice, timed in %.1f s; the winner differs from the built-in rules on %d; "
         "summed fastest calls: built-in rules %.0f us, tuned %.0f us (%.2fx)\n",
         s.shapes, s.timed, s.seconds, s.differ, s.builtin_us, s.tuned_us,
         s.tuned_us > 0 ? s.builtin_us / s.tuned_us : 1.0);
  sf_config_free(&c);
  return 0;
}
