/* `scaffold simulate`: predicts training steps of a config's task graph on a machine class with StarPU's
 * SimGrid mode (scaffold-sim from scripts/build-sim), for one scheduler and worker mix, or as a study over
 * schedulers x worker mixes (simulate.h; docs/simulation.md). Everything is checked (config, class,
 * mixes, scheduler names, scaffold-sim) before the first simulation starts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/fsutil.h"
#include "scaffold/perfmodels.h"
#include "simulate.h"
#include "scaffold/switches.h"

typedef struct {
  const char *cls, *schedulers, *mixes, *out, *sim_bin;
  int steps, warmup, allow_stale;
} sim_opts;

static void usage(FILE *f)
{
  fprintf(f,
          "usage: scaffold simulate [-c CONFIG] [--set KEY=VALUE ...] --class NAME|DIR [--schedulers all|A,B,...]\n"
          "                         [--mix NCPU:NCUDA:NOPENCL[,...]] [--steps N] [--warmup N] [--out DIR]\n"
          "                         [--sim-bin PATH] [--allow-stale]\n\n"
          "Predicts training steps of the config's task graph on a machine class with StarPU's SimGrid mode: the\n"
          "real scheduler and task graph run, codelets sleep for their calibrated perfmodel times, transfers\n"
          "cross the class's simulated buses. No value, loss or Dice is computed.\n"
          "  --class       perfmodels/NAME (scripts/calibrate) or a class folder (scripts/derive-class)\n"
          "  --schedulers  StarPU policies to compare ('all': the 12 of the schedulers profile); default: the\n"
          "                config's scheduler (lws when empty)\n"
          "  --mix         worker mixes ncpu:ncuda:nopencl; default: the config's ncpu/ncuda/nopencl (-1: all the\n"
          "                class has)\n"
          "  --steps N     timed steps per run (default 5), after --warmup N (default 1)\n"
          "  --out DIR     run logs and, for several runs, study.md/.csv/.png (default sim-<class>)\n"
          "  --sim-bin     scaffold-sim to run (default $SCAFFOLD_SIM, else %s/build-sim/scaffold-sim)\n"
          "  --allow-stale simulate a class whose models were calibrated for other kernels (refused otherwise;\n"
          "                every predicted figure is then marked stale; -v lists the stale codelets)\n"
          "One run prints the predicted step time, samples/s, busy share per worker and bytes per bus; with\n"
          "trace: 1 its trace.json / worker_stats.* are in DIR/<scheduler>_<mix>/.\n\n",
          SF_SOURCE_DIR);
  sf_config_print_cli_help(f);
}

static int int_value(const char *opt, const char *v, int lo, int hi)
{
  long x = 0;
  if (sf_parse_long_in(v, lo, hi, &x) != 0)
    sf_die(SF_EXIT_USAGE, "simulate: option '%s' expects an integer in [%d, %d], got '%s'", opt, lo, hi, v ? v : "");
  return (int)x;
}

static int extra_opt(void *ctx, int argc, char **argv, int i)
{
  sim_opts *o = ctx;
  const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
    usage(stdout);
    exit(0);
  }
  if (!strcmp(a, "--allow-stale")) {
    o->allow_stale = 1;
    return 1;
  }
  static const char *const opts[] = {"--class", "--schedulers", "--mix", "--out", "--sim-bin", "--steps", "--warmup"};
  int k = -1;
  for (int j = 0; j < 7; j++)
    if (!strcmp(a, opts[j])) k = j;
  if (k < 0) return 0;
  if (!v) sf_die(SF_EXIT_USAGE, "simulate: option '%s' needs an argument", a);
  const char **slot[] = {&o->cls, &o->schedulers, &o->mixes, &o->out, &o->sim_bin};
  if (k < 5) *slot[k] = v;
  else if (k == 5) o->steps = int_value(a, v, 1, 1000);
  else o->warmup = int_value(a, v, 0, 1000);
  return 2;
}

static const char *find_sim_bin(const char *given)
{
  static char def[4096];
  const char *env = sf_switch("SCAFFOLD_SIM");
  snprintf(def, sizeof def, "%s/build-sim/scaffold-sim", SF_SOURCE_DIR);
  const char *bin = given ? given : env && *env ? env : def;
  if (access(bin, X_OK) != 0)
    sf_die(SF_EXIT_USAGE, "simulate: no scaffold-sim at %s%s; build it with scripts/build-sim (a SimGrid StarPU from "
           "Debian's source package, then this project against it)", bin,
           given ? " (--sim-bin)" : env && *env ? " (SCAFFOLD_SIM)" : "");
  return bin;
}

/* The class's models against this build's perfmodel symbols (scaffold/perfmodels.h): a class calibrated for
 * other kernels is refused (exit 2) unless --allow-stale, before anything runs. Returns NULL (current), or
 * the malloc'ed report of a stale class simulated anyway; writes it to OUT/STALE (removed otherwise). */
static char *check_stale(const sim_class *cls, int allow, int verbose)
{
  char *dir = sf_path_join(cls->dir, "sampling/codelets/45");
  sf_perfmodels_staleness s;
  int rc = sf_perfmodels_check(dir, cls->name, &s);
  free(dir);
  if (rc != 0 || s.nstale == 0) {
    sf_perfmodels_staleness_free(&s);
    return NULL;
  }
  char sum[1024], fix[512];
  sf_perfmodels_stale_summary(&s, cls->name, sum, sizeof sum);
  if (cls->derived)
    snprintf(fix, sizeof fix, "recalibrating its source class (scripts/calibrate on a machine of it) and deriving "
             "it again (scripts/derive-class) fixes this for good");
  else
    snprintf(fix, sizeof fix, "`scripts/calibrate %s` on a machine of the class fixes this for good", cls->name);
  if (!allow) {
    if (verbose && s.detail) fputs(s.detail, stderr);
    sf_die(SF_EXIT_USAGE, "simulate: %s; a simulation would sleep for the times of kernels this build no longer "
           "runs; %s; --allow-stale simulates anyway and marks every predicted figure stale (docs/perfmodels.md)",
           sum, fix);
  }
  sf_warn("simulate: %s; --allow-stale: every predicted figure is marked stale; %s", sum, fix);
  if (verbose && s.detail) fputs(s.detail, stderr);
  size_t n = strlen(sum) + (s.detail ? strlen(s.detail) : 0) + 2;
  char *report = sf_malloc(n, "stale report");
  snprintf(report, n, "%s\n%s", sum, s.detail ? s.detail : "");
  sf_perfmodels_staleness_free(&s);
  return report;
}

/* The mixes and schedulers of the run(s), checked against the class. */
static void plan_grid(const sim_opts *o, const sf_config *c, const sim_class *cls, char **scheds, int *ns,
                      sim_mix *mixes, int *nm)
{
  char err[2048];
  if (o->mixes) {
    if ((*nm = sim_parse_mixes(o->mixes, mixes, SIM_MAX_MIXES, err, sizeof err)) < 0) sf_die(SF_EXIT_USAGE, "simulate: %s", err);
  } else {
    mixes[0] = (sim_mix){c->ncpu >= 0 ? (int)c->ncpu : cls->ncpus, c->ncuda >= 0 ? (int)c->ncuda : cls->ncuda,
                         c->nopencl >= 0 ? (int)c->nopencl : 0};
    *nm = 1;
  }
  for (int j = 0; j < *nm; j++)
    if (sim_class_check_mix(cls, &mixes[j], err, sizeof err) != 0) sf_die(SF_EXIT_USAGE, "simulate: %s", err);
  const char *list = o->schedulers ? o->schedulers : c->scheduler && c->scheduler[0] ? c->scheduler : "lws";
  if ((*ns = sim_parse_schedulers(list, scheds, SIM_MAX_SCHEDS, err, sizeof err)) < 0)
    sf_die(SF_EXIT_USAGE, "simulate: %s", err);
}

int sf_cmd_simulate(int argc, char **argv)
{
  sim_opts o = {.steps = 5, .warmup = 1};
  sf_config c;
  sf_config_init(&c);
  int verbose = 0;
  int next = sf_config_from_cli(&c, argc, argv, 1, &verbose, extra_opt, &o);
  if (next < argc) sf_die(SF_EXIT_USAGE, "simulate: unexpected argument '%s' (--help lists the options)", argv[next]);
  if (!o.cls) sf_die(SF_EXIT_USAGE, "simulate needs a machine class: --class NAME (perfmodels/NAME) or a folder");
  char err[2048];
  sim_class cls;
  if (sim_class_load(o.cls, &cls, err, sizeof err) != 0) sf_die(SF_EXIT_USAGE, "simulate: %s", err);
  char *scheds[SIM_MAX_SCHEDS];
  sim_mix mixes[SIM_MAX_MIXES];
  int ns = 0, nm = 0;
  plan_grid(&o, &c, &cls, scheds, &ns, mixes, &nm);
  char *stale = check_stale(&cls, o.allow_stale, verbose);
  const char *bin = find_sim_bin(o.sim_bin);
  char out_def[512];
  snprintf(out_def, sizeof out_def, "sim-%s", cls.name);
  const char *out = o.out ? o.out : out_def;
  if (sf_mkdir_p(out) != 0) sf_die(SF_EXIT_USAGE, "simulate: cannot create the output directory '%s'", out);
  char *yaml = sf_path_join(out, "config.yaml");
  if (sf_config_write_yaml(&c, yaml) != 0) sf_die(SF_EXIT_FAILURE, "simulate: cannot write %s", yaml);
  char *stale_file = sf_path_join(out, "STALE"); /* the marker of a stale class's predictions */
  if (stale) {
    char *body = sf_malloc(strlen(stale) + 128, "stale report");
    snprintf(body, strlen(stale) + 128, "Every prediction in this folder is STALE (--allow-stale): %s", stale);
    if (sf_write_file_atomic(stale_file, body, strlen(body)) != 0) sf_warn("simulate: cannot write %s", stale_file);
    free(body);
  } else {
    unlink(stale_file);
  }
  free(stale_file);

  sim_plan p = {.sim_bin = bin, .config_yaml = yaml, .out_dir = out, .steps = o.steps, .warmup = o.warmup,
                .trace = (int)c.trace, .cls = &cls, .stale = stale};
  sim_outcome *cells = sf_calloc((size_t)(ns * nm), sizeof *cells, "simulation cells");
  int single = ns * nm == 1, failed = 0;
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < nm; j++) {
      if (!single)
        fprintf(stderr, "simulate: %s on %d:%d:%d (%d of %d)\n", scheds[i], mixes[j].ncpu, mixes[j].ncuda,
                mixes[j].nopencl, i * nm + j + 1, ns * nm);
      sim_run_one(&p, scheds[i], &mixes[j], single, &cells[i * nm + j]);
    }
  if (single) {
    failed = !cells[0].ok;
    if (failed) fprintf(stderr, "scaffold: error: simulation failed: %s (log: %s/%s_%d-%d-%d/scaffold-sim.log)\n",
                        cells[0].why, out, scheds[0], mixes[0].ncpu, mixes[0].ncuda, mixes[0].nopencl);
  } else {
    failed = sim_write_study(&p, scheds, ns, mixes, nm, cells);
  }
  for (int i = 0; i < ns; i++) free(scheds[i]);
  free(stale);
  free(cells);
  free(yaml);
  sim_class_free(&cls);
  sf_config_free(&c);
  return failed ? SF_EXIT_FAILURE : 0;
}
