/* `scaffold calibrate`: measures this machine's class in one command (docs/perfmodels.md, "Calibrating a
 * class"): the kernel tuning record (`scaffold tune`), StarPU perfmodels and bus/platform files (dmda with
 * STARPU_CALIBRATE=1 over the plan of calibrate_plan.c), MEASURED (the real figure a simulation of the class
 * is checked against), CALIBRATED (when, with which code, on which machine) and, for a full calibration, a
 * harness baseline (`scaffold jobs standard` + `summary`). Every measurement runs in a child `scaffold`
 * process; the new models replace the folder's old ones only when all runs have succeeded. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate_run.h"
#include "calibrate_plan.h"
#include "class_folder.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/progress.h"
#include "tune.h"

typedef struct {
  const char *cls;
  int ship, quick, no_baseline, no_tune;
} calib_cli;

static void usage(FILE *f)
{
  fprintf(f,
          "usage: scaffold calibrate [-c CONFIG] [--set KEY=VALUE ...] [--class NAME] [--quick] [--ship]\n"
          "                          [--no-tune] [--no-baseline]\n\n"
          "Measures this machine's class into one folder: the kernel tuning record (as `scaffold tune`), the StarPU\n"
          "perfmodels and bus/platform files that dmda, heft and `scaffold simulate` read (11 calibrating dmda steps\n"
          "per shape), MEASURED (a real step time the class's simulation is checked against), CALIBRATED (date,\n"
          "commit, machine) and a harness baseline (`scaffold jobs standard` + `scaffold summary`). Later runs on\n"
          "machines that fit its MATCH use it; the run header names it.\n"
          "  --class NAME  the class (default: the class that fits this machine, else a name made from it)\n"
          "  --quick       only the config's own shape (and its bf16 twin with torch_amp: 1), no baseline: a few\n"
          "                minutes; the full plan covers the shipped configs' and profiles' shapes (about 25 minutes\n"
          "                on 2 cores)\n"
          "  --ship        write into the source tree's perfmodels/NAME (and baselines/standard/NAME.json), to\n"
          "                commit, instead of the user's classes ($XDG_CACHE_HOME/scaffold-starpu/classes/NAME)\n"
          "  --no-tune     keep the class's tuning record as it is\n"
          "  --no-baseline skip the harness baseline of a full calibration\n\n");
  sf_config_print_cli_help(f);
}

static int extra_opt(void *ctx, int argc, char **argv, int i)
{
  calib_cli *k = ctx;
  const char *a = argv[i];
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
    usage(stdout);
    exit(0);
  }
  if (!strcmp(a, "--ship")) return k->ship = 1, 1;
  if (!strcmp(a, "--quick")) return k->quick = 1, 1;
  if (!strcmp(a, "--no-baseline")) return k->no_baseline = 1, 1;
  if (!strcmp(a, "--no-tune")) return k->no_tune = 1, 1;
  if (strcmp(a, "--class")) return 0;
  if (i + 1 >= argc) sf_die(SF_EXIT_USAGE, "calibrate: option '--class' needs an argument");
  k->cls = argv[i + 1];
  return 2;
}

typedef struct {
  sf_progress pr;
  double done;
  int opencl_failed;
} plan_state;

/* One pass over the plan: tuning (phase 0), calibrating steps (1), or calibrating steps again without the
 * OpenCL runs (2). An OpenCL run that cannot start skips the
 * others; any other failure stops the calibration. */
static int run_phase(sf_calib_ctx *x, const sf_calib_plan *p, int phase, plan_state *st)
{
  for (int i = 0; i < p->n; i++) {
    const sf_calib_run *r = &p->run[i];
    char desc[160], note[200];
    sf_calib_run_describe(r, desc, sizeof desc);
    snprintf(note, sizeof note, "%s %s", phase ? "calibrating" : "tuning", desc);
    sf_progress_update_note(&st->pr, (long)(st->done * 100), note);
    if (!(r->opencl && phase == 2)) st->done += r->weight;
    if (r->opencl && (st->opencl_failed || phase != 1)) continue; /* tuning times CPU kernels only; extra passes
                                                                   * skip the slow OpenCL runs */
    if ((phase ? sf_calib_steps(x, r, 0, r->steps, 1, NULL, NULL) : sf_calib_tune(x, r)) == 0) continue;
    sf_progress_clear(&st->pr);
    if (!r->opencl) {
      fprintf(stderr, "scaffold: error: calibrate: %s %s failed: %s\n", phase ? "calibrating" : "tuning", desc,
              x->last_error);
      return -1;
    }
    st->opencl_failed = 1;
    x->opencl_bus = 0; /* the later passes' bus files then describe the machine as the CPU runs see it */
    printf("calibrate: no OpenCL worker could start (%s): the class has CPU models only\n", x->last_error);
  }
  return 0;
}

/* The plan, then more calibrating passes while footprints lack their 10 samples: StarPU drops a sample far off
 * its footprint's mean (STARPU_HISTORY_MAX_ERROR), which a busy moment of the machine causes on tiny tasks */
static int run_plan(sf_calib_ctx *x, const sf_calib_plan *p, int tune)
{
  plan_state st = {.done = 0};
  double total = 0;
  for (int i = 0; i < p->n; i++) total += p->run[i].weight * (tune ? 2 : 1);
  sf_progress_begin(&st.pr, "calibrate (runs weighted by cost)", (long)(total * 100));
  int rc = tune ? run_phase(x, p, 0, &st) : 0;
  if (rc == 0) rc = run_phase(x, p, 1, &st);
  for (int pass = 1; rc == 0 && pass <= p->extra_passes; pass++) {
    int footprints = 0, under = 0;
    sf_calib_count_staging(x, &footprints, &under);
    if (under == 0) break;
    sf_progress_clear(&st.pr);
    printf("calibrate: %d of %d footprints have fewer than 10 samples: calibrating pass %d of at most %d more\n", under,
           footprints, pass, p->extra_passes);
    for (int i = 0; i < p->n; i++) st.pr.total += p->run[i].opencl ? 0 : (long)(p->run[i].weight * 100);
    rc = run_phase(x, p, 2, &st);
  }
  sf_progress_end(&st.pr, (long)(st.done * 100));
  return rc;
}

int sf_cmd_calibrate(int argc, char **argv)
{
  setvbuf(stdout, NULL, _IOLBF, 0); /* its lines and the progress lines (stderr) stay in order in a log */
  calib_cli k = {0};
  sf_config c;
  sf_steps_command_config(&c, argc, argv, "calibrate", extra_opt, &k);
  char err[PATH_MAX + 512] = "";
  sf_calib_ctx x = {.lock_fd = -1};
  if (sf_class_folder_resolve(k.cls, k.ship, &x.folder, err, sizeof err) != 0) sf_die(SF_EXIT_USAGE, "calibrate: %s", err);
  sf_calib_plan plan;
  sf_calib_plan_make(&plan, &c, k.quick);
  for (int i = 0; i < plan.n; i++) x.opencl_bus |= plan.run[i].opencl;
  if (sf_calib_begin(&x, k.ship, err, sizeof err) != 0) sf_die(SF_EXIT_FAILURE, "calibrate: %s", err);
  printf("calibrate: class %s in %s%s; %s plan: %d runs%s\n", x.folder.name, x.folder.dir,
         x.folder.created ? " (new, with a MATCH for this machine)" : "", k.quick ? "quick" : "full", plan.n,
         k.no_tune ? ", tuning record kept" : ", tuning first");
  int rc = run_plan(&x, &plan, !k.no_tune);
  if (rc == 0) rc = sf_calib_install_models(&x, err, sizeof err);
  if (rc == 0) rc = sf_calib_measure(&x, &plan.measured, err, sizeof err);
  if (rc == 0 && !k.quick && !k.no_baseline) rc = sf_calib_baseline(&x, err, sizeof err);
  if (rc == 0) rc = sf_calib_stamp(&x, k.quick ? "quick" : "full", &plan, err, sizeof err);
  if (rc != 0 && err[0]) fprintf(stderr, "scaffold: error: calibrate: %s\n", err);
  sf_calib_end(&x, rc != 0);
  sf_config_free(&c);
  return rc == 0 ? 0 : SF_EXIT_FAILURE;
}
