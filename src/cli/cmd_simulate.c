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
  const char *cls, *schedulers, *mixes, *out, *sim_bin, *ranks, *network, *smpirun, *scaling, *networks;
  int steps, warmup, allow_stale;
} sim_opts;

static void usage(FILE *f)
{
  fprintf(f,
          "usage: scaffold simulate [-c CONFIG] [--set KEY=VALUE ...] --class NAME|DIR [--schedulers all|A,B,...]\n"
          "                         [--mix NCPU:NCUDA:NOPENCL[,...]] [--steps N] [--warmup N] [--out DIR]\n"
          "                         [--sim-bin PATH] [--allow-stale]\n"
          "                         [--ranks N|N1,N2,... [--network NAME|FILE.xml] [--scaling weak|strong]]\n\n"
          "Predicts training steps of the config's task graph on a machine class with StarPU's SimGrid mode: the\n"
          "real scheduler and task graph run, codelets sleep for their calibrated perfmodel times, transfers\n"
          "cross the class's simulated buses. No value, loss or Dice is computed.\n"
          "  --class       a class by name (yours from `scaffold calibrate`, else perfmodels/NAME) or a class folder\n"
          "                (scripts/derive-class)\n"
          "  --schedulers  StarPU policies to compare ('all': the 12 of the schedulers profile); default: the\n"
          "                config's scheduler (lws when empty)\n"
          "  --mix         worker mixes ncpu:ncuda:nopencl; default: the config's ncpu/ncuda/nopencl (-1: all the\n"
          "                class has)\n"
          "  --steps N     timed steps per run (default 5), after --warmup N (default 1)\n"
          "  --out DIR     run logs and, for several runs, study.md/.csv/.png (default sim-<class>)\n"
          "  --sim-bin     scaffold-sim to run (default $SCAFFOLD_SIM, else %s/build-sim/scaffold-sim)\n"
          "  --allow-stale simulate a class whose models were calibrated for other kernels (refused otherwise;\n"
          "                every predicted figure is then marked stale; -v lists the stale codelets)\n"
          "  --ranks       N ranks of StarPU-MPI over SimGrid's SMPI (scripts/build-sim --mpi): replicas x the\n"
          "                config's dc_num_shards, every rank with the mix's workers; prints per rank its busy\n"
          "                share and the bytes it sends and receives per step. A list with --scaling\n"
          "  --network     the network between the ranks: a name of configs/networks.txt (default loopback)\n"
          "                or a SimGrid platform file whose hosts are rank0, rank1, ...\n"
          "  --networks    the named networks file (default %s/configs/networks.txt)\n"
          "  --scaling     weak (the config's local batch on every replica) or strong (the global batch of the\n"
          "                first rank count, split over the replicas): scaling.md, scaling.csv, scaling.png\n"
          "  --smpirun     starpu_smpirun to launch them (default\n"
          "                %s/build/starpu-simgrid-mpi/bin/starpu_smpirun)\n"
          "One run prints the predicted step time, samples/s, busy share per worker and bytes per bus; with\n"
          "trace: 1 its trace.json / worker_stats.* are in DIR/<scheduler>_<mix>/.\n\n",
          SF_SOURCE_DIR, SF_SOURCE_DIR, SF_SOURCE_DIR);
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
  static const char *const opts[] = {"--class", "--schedulers", "--mix",     "--out",     "--sim-bin",
                                     "--ranks", "--network",    "--smpirun", "--scaling", "--networks", "--steps", "--warmup"};
  int k = -1;
  for (int j = 0; j < 12; j++)
    if (!strcmp(a, opts[j])) k = j;
  if (k < 0) return 0;
  if (!v) sf_die(SF_EXIT_USAGE, "simulate: option '%s' needs an argument", a);
  const char **slot[] = {&o->cls, &o->schedulers, &o->mixes, &o->out, &o->sim_bin, &o->ranks, &o->network,
                         &o->smpirun, &o->scaling, &o->networks};
  if (k < 10) *slot[k] = v;
  else if (k == 10) o->steps = int_value(a, v, 1, 1000);
  else o->warmup = int_value(a, v, 0, 1000);
  return 2;
}

static const char *find_sim_bin(const char *given, int mpi)
{
  static char def[4096];
  const char *env = sf_switch("SCAFFOLD_SIM");
  snprintf(def, sizeof def, "%s/%s/scaffold-sim", SF_SOURCE_DIR, mpi ? "build-sim-mpi" : "build-sim");
  const char *bin = given ? given : env && *env ? env : def;
  if (access(bin, X_OK) != 0)
    sf_die(SF_EXIT_USAGE, "simulate: no scaffold-sim at %s%s; build it with scripts/build-sim%s (a SimGrid StarPU from "
           "Debian's source package, then this project against it)", bin,
           given ? " (--sim-bin)" : env && *env ? " (SCAFFOLD_SIM)" : "", mpi ? " --mpi" : "");
  return bin;
}

static const char *find_smpirun(const char *given)
{
  static char def[4096];
  snprintf(def, sizeof def, "%s/build/starpu-simgrid-mpi/bin/starpu_smpirun", SF_SOURCE_DIR);
  const char *bin = given ? given : def;
  if (access(bin, X_OK) != 0)
    sf_die(SF_EXIT_USAGE, "simulate: no starpu_smpirun at %s%s; scripts/build-sim --mpi builds it (with the SimGrid "
           "StarPU-MPI of scripts/build-starpu --simgrid-mpi)", bin, given ? " (--smpirun)" : "");
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
    snprintf(fix, sizeof fix, "recalibrating its source class (`scaffold calibrate` on a machine of it) and deriving "
             "it again (scripts/derive-class) fixes this for good");
  else
    snprintf(fix, sizeof fix, "`scaffold calibrate --class %s` on a machine of the class fixes this for good", cls->name);
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

/* --ranks / --network / --scaling, checked before any run: 1 with ranks (sc and net filled), else 0. */
static int plan_ranks(const sim_opts *o, const sf_config *c, int cells, sim_scaling *sc, sim_network *net)
{
  if (!o->ranks) {
    if (o->network || o->scaling || o->smpirun || o->networks)
      sf_die(SF_EXIT_USAGE, "simulate: %s needs --ranks", o->network ? "--network" : o->scaling ? "--scaling" :
             o->smpirun ? "--smpirun" : "--networks");
    return 0;
  }
  char err[2048];
  if (cells != 1)
    sf_die(SF_EXIT_USAGE, "simulate: --ranks takes one scheduler and one worker mix (the workers of each rank); got %d "
           "combinations", cells);
  if (sim_parse_ranks(o->ranks, o->scaling, sf_config_spatial(c), c->local_batch_size, sc, err, sizeof err) != 0 ||
      sim_network_load(o->network ? o->network : "loopback", o->networks, net, err, sizeof err) != 0)
    sf_die(SF_EXIT_USAGE, "simulate: %s", err);
  return 1;
}

/* One multi-rank run (its per-rank report), or a scaling study (one run per rank count). */
static int run_ranks(sim_plan *p, const char *sched, const sim_mix *m, const sim_scaling *sc)
{
  sim_outcome *cells = sf_calloc((size_t)sc->n, sizeof *cells, "simulation cells");
  char *base = (char *)p->out_dir, bs[64];
  int failed = 0;
  for (int i = 0; i < sc->n; i++) {
    char sub[32];
    snprintf(sub, sizeof sub, "ranks-%d", sc->ranks[i]);
    char *dir = sc->n > 1 ? sf_path_join(base, sub) : sf_strdup(base);
    snprintf(bs, sizeof bs, "local_batch_size=%d", sc->local_batch[i]);
    char *sets[] = {bs, NULL};
    p->out_dir = dir;
    p->ranks = sc->ranks[i];
    p->sets = sets;
    if (sc->n > 1) fprintf(stderr, "simulate: %d ranks on %s (%d of %d)\n", sc->ranks[i], p->net->name, i + 1, sc->n);
    sim_run_one(p, sched, m, sc->n == 1, &cells[i]);
    if (sc->n == 1 && cells[0].ok) sim_print_ranks(p, &cells[0], stdout);
    if (!cells[i].ok)
      fprintf(stderr, "scaffold: error: simulation on %d ranks failed: %s (log: %s/%s_%d-%d-%d/scaffold-sim.log)\n",
              sc->ranks[i], cells[i].why, dir, sched, m->ncpu, m->ncuda, m->nopencl);
    failed += !cells[i].ok;
    free(dir);
  }
  p->out_dir = base;
  if (sc->n > 1) failed = sim_write_scaling(p, sc, cells);
  for (int i = 0; i < sc->n; i++) sim_outcome_free(&cells[i]);
  free(cells);
  return failed;
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
  sim_scaling sc = {0};
  sim_network net;
  int mpi = plan_ranks(&o, &c, ns * nm, &sc, &net);
  char *stale = check_stale(&cls, o.allow_stale, verbose);
  const char *bin = find_sim_bin(o.sim_bin, mpi);
  const char *smpirun = mpi ? find_smpirun(o.smpirun) : NULL;
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
                .trace = (int)c.trace, .cls = &cls, .stale = stale, .net = &net, .smpirun = smpirun};
  if (mpi) {
    int failed = run_ranks(&p, scheds[0], &mixes[0], &sc);
    free(scheds[0]);
    free(stale);
    free(yaml);
    sim_class_free(&cls);
    sf_config_free(&c);
    return failed ? SF_EXIT_FAILURE : 0;
  }
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
