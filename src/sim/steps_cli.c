/* The command line shared by `scaffold steps` (real) and `scaffold-sim` (StarPU's SimGrid mode): the config
 * options (-c FILE, --set key=value, ...) plus --steps, --warmup, --out, --machine and --json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/fsutil.h"
#include "scaffold/perfmodels.h"
#include "scaffold/runtime.h"
#include "scaffold/steps.h"

typedef struct {
  sf_steps_opts o;
  int json;
  const char *prog;
} steps_cli;

static void usage(const steps_cli *s, FILE *f)
{
  fprintf(f,
          "usage: %s [-c CONFIG] [--set KEY=VALUE ...] [--steps N] [--warmup N] [--out DIR] [--machine NAME] [--json]\n\n"
          "%s\n"
          "  --steps N       timed steps (default 5; at most %d)\n"
          "  --warmup N      untimed steps first (default 1)\n"
          "  --out DIR       where trace.json / worker_stats.* go with trace: 1 (default: steps-out)\n"
          "  --machine NAME  the machine or class the figures are for, printed with them\n"
          "  --json          also print one line 'SFSTEPS {json}'\n"
          "The config's problem_scale, unet_base_channels, unet_bottleneck_dim, n_categories, group_norm_groups,\n"
          "local_batch_size, optimizer, scheduler, ncpu, ncuda and nopencl shape the run (docs/simulation.md); a key\n"
          "this command does not read is refused when set on the command line (it takes effect in\n"
          "`scaffold benchmark`).\n\n",
          s->prog,
          s->o.simulated
              ? "Predicts training steps of the config's task graph under StarPU's SimGrid mode. Run it through\n"
                "`scaffold simulate`, which sets the machine class (STARPU_HOSTNAME, STARPU_PERF_MODEL_DIR) first."
              : "Times training steps of the config's task graph on synthetic samples (no dataset), on this machine:\n"
                "the real counterpart of `scaffold simulate`.",
          SF_STEPS_MAX);
  sf_config_print_cli_help(f);
}

static int int_value(const char *opt, const char *v, int lo, int hi)
{
  long x = 0;
  if (sf_parse_long_in(v, lo, hi, &x) != 0)
    sf_die(SF_EXIT_USAGE, "option '%s' expects an integer in [%d, %d], got '%s'", opt, lo, hi, v ? v : "");
  return (int)x;
}

static int extra_opt(void *ctx, int argc, char **argv, int i)
{
  steps_cli *s = ctx;
  const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
    usage(s, stdout);
    exit(0);
  }
  if (!strcmp(a, "--json")) {
    s->json = 1;
    return 1;
  }
  if (strcmp(a, "--steps") && strcmp(a, "--warmup") && strcmp(a, "--out") && strcmp(a, "--machine")) return 0;
  if (!v) sf_die(SF_EXIT_USAGE, "option '%s' needs an argument", a);
  if (!strcmp(a, "--steps")) s->o.steps = int_value(a, v, 1, SF_STEPS_MAX);
  else if (!strcmp(a, "--warmup")) s->o.warmup = int_value(a, v, 0, 1000000);
  else if (!strcmp(a, "--out")) s->o.out_dir = v;
  else s->o.machine = v;
  return 2;
}

/* The keys that shape the timed steps: the network, the batch and optimizer, precision and determinism, the
 * runtime and its workers, the slab plan, traces, and the keys every command reads. */
const char *const sf_steps_config_keys[] = {
  "problem_scale", "unet_bottleneck_dim", "unet_base_channels", "n_categories", "group_norm_groups",
  "local_batch_size", "optimizer", "seed", "torch_amp", "more_determinism", "activation_checkpointing",
  "framework", "scheduler", "runtime", "ncpu", "ncuda", "nopencl", "worker_nice", "slabs", "trace",
  "dc_num_shards", "spatial_ranks", "dist", "scale", NULL};

/* Under mpirun or SMPI: MPI, the same config on every rank, the replicas x shards layout, StarPU-MPI's byte
 * counters, and out_dir/rank<r> for ranks other than 0. Returns that folder (malloc'ed) or NULL. */
static char *start_dist(const sf_config *c, sf_steps_opts *o)
{
  sf_dist_init();
  if (sf_dist_active()) {
    if (!sf_dist_simulated()) setenv("STARPU_COMM_STATS", "1", 0); /* SMPI: set by `scaffold simulate` */
    sf_dist_check_config(c);
  }
  sf_dist_configure(sf_config_spatial(c), c->spatial_ranks > 1 ? "spatial_ranks" : "dc_num_shards");
  if (sf_dist_is_root()) return NULL;
  char sub[32];
  snprintf(sub, sizeof sub, "rank%d", sf_dist_rank());
  char *d = sf_path_join(o->out_dir, sub);
  o->out_dir = d;
  return d;
}

int sf_steps_main(int argc, char **argv, int simulated)
{
  steps_cli s = {.o = {.warmup = 1, .steps = 5, .out_dir = "steps-out", .simulated = simulated},
                 .prog = simulated ? "scaffold-sim" : "scaffold steps"};
  sf_config c;
  sf_config_init(&c);
  int verbose = 0;
  int next = sf_config_from_cli(&c, argc, argv, 1, &verbose, extra_opt, &s);
  if (next < argc) sf_die(SF_EXIT_USAGE, "%s: unexpected argument '%s' (see --help)", s.prog, argv[next]);
  sf_perfmodels_set_verbose(verbose); /* -v lists the stale codelets of a shipped class */
  sf_config_refuse_unread(&c, s.prog, sf_steps_config_keys,
                          "it times training steps of the network on synthetic samples; the dataset, training-run, "
                          "bound and output keys take effect in `scaffold benchmark`", verbose);
  const char *bad_key = NULL;
  char why[512];
  if (sf_runtime_check_config(&c, &bad_key, why, sizeof why) != 0) /* before any work */
    sf_die(SF_EXIT_USAGE, "%s: config key '%s': %s", s.prog, bad_key, why);
  char *rank_dir = start_dist(&c, &s.o);
  sf_steps_result *r = sf_calloc(1, sizeof *r, "steps result");
  char err[1024];
  if (sf_steps_run(&c, &s.o, r, err, sizeof err) != 0) sf_die(SF_EXIT_FAILURE, "%s: %s", s.prog, err);
  if (sf_dist_is_root()) {
    sf_steps_print(&c, &s.o, r, stdout);
    if (c.trace) printf("trace: %s/trace.json, worker statistics in %s/worker_stats.txt\n", s.o.out_dir, s.o.out_dir);
    if (c.trace == SF_TRACE_FXT)
      printf("FxT trace: %s/paje.trace (ViTE), dag.dot, tasks.rec, data.rec, trace.html; raw trace fxt.prof\n", s.o.out_dir);
  }
  if (s.json) sf_steps_print_json(&c, &s.o, r, stdout);
  fflush(stdout);
  sf_dist_finalize();
  free(r);
  free(rank_dir);
  sf_config_free(&c);
  return 0;
}
