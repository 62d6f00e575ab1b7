/* `scaffold benchmark -c CFG [--set k=v ...] [--restart --run-dir DIR] [harness options]`
 * (spec §1.1, §6, §7): one benchmark run end to end - the run directory and its config copies,
 * StarPU, the fractal library (generated first when missing) and the cached dataset, the U-Net and
 * its task graph, training to val Dice >= target_dice (src/train/trainer.c), figures, the trace,
 * the summary lines and the harness result JSON (scaffold/bench.h). Exit status: 0, 1 (runtime
 * failure, divergence), 2 (usage, configuration, unusable checkpoint), 130 (SIGINT/SIGTERM). */
#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/bench.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/datagen.h"
#include "scaffold/dist.h"
#include "scaffold/dataset.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/kernel_tuning_setup.h"
#include "scaffold/model.h"
#include "scaffold/npy.h"
#include "scaffold/ops.h"
#include "scaffold/perfmodels.h"
#include "scaffold/progress.h"
#include "scaffold/runtime.h"
#include "scaffold/signals.h"
#include "scaffold/tasks.h"
#include "scaffold/trace.h"
#include "scaffold/trainer.h"
#include "scaffold/switches.h"

typedef struct {
  sf_bench_opts bench;
  int restart;
  char *run_dir;
} cli_opts;

static void usage(FILE *out)
{
  fprintf(out,
          "usage: scaffold benchmark -c CONFIG [--set KEY=VALUE ...] [-v] [--restart --run-dir DIR]\n"
          "                          [--max-count N] [--max-time S] [--out DIR|FILE.json] [--experiment-name N]\n"
          "                          [--job-id J] [--extra JSON] [--sample-duration S] [--datagen-only]\n"
          "\n"
          "Builds (or reuses) the dataset - generating the fractal library first when it is missing - then\n"
          "trains the 3D U-Net until validation Dice >= target_dice (or `epochs` epochs). Outputs go to a\n"
          "fresh <base_run_dir>/<job_name>_<YYYYmmdd-HHMMSS>/: a copy of CONFIG, config.yaml,\n"
          "overrides.yaml, restart.sh, train_stats.csv, checkpoints/, figures/, and with `trace: 1`\n"
          "trace.json and worker_stats.{json,txt} (training) and datagen_trace/ (data generation); with\n"
          "`bound: 1` bound.json, bound.dot, bound_deps.lp (docs/scheduling.md); `export_graph: DIR` writes\n"
          "DIR/graph.json and graph.dot (docs/tracing.md).\n"
          "\n"
          "  --run-dir DIR      resume in DIR (implies --restart and train_from_scratch: 0)\n"
          "  --restart          resume from DIR/checkpoints (needs --run-dir); with no checkpoint yet (stopped in\n"
          "                     its first epoch, or checkpoint_interval -1) the run starts over in DIR\n"
          "  --max-count N      stop after N training samples (at a step boundary)\n"
          "  --max-time S       stop once the timed training steps reach S seconds (at a step boundary; with\n"
          "                     --max-count, whichever comes first): >= S / sample-duration rate slices\n"
          "  --out P            write the result JSON into directory P, or to P when it ends in .json\n"
          "  --datagen-only     measure fractal + dataset generation (volumes/s) as the result's rate\n"
          "\n"
          "SIGINT/SIGTERM stop at the next step boundary with a checkpoint (exit status 130); during\n"
          "fractal or dataset generation they let the files in flight finish and publish nothing partial\n"
          "(rerun the same command). A second signal exits at once.\n\n");
  sf_config_print_cli_help(out);
}

static int extra_opt(void *ctx, int argc, char **argv, int i)
{
  cli_opts *o = ctx;
  if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
    usage(stdout);
    exit(0);
  }
  if (!strcmp(argv[i], "--restart")) {
    o->restart = 1;
    return 1;
  }
  if (!strncmp(argv[i], "--run-dir", 9) && (argv[i][9] == '\0' || argv[i][9] == '=')) {
    const char *v = argv[i][9] == '=' ? argv[i] + 10 : (i + 1 < argc ? argv[i + 1] : NULL);
    if (!v || !*v) sf_die(SF_EXIT_USAGE, "option '--run-dir' needs an argument: a run directory");
    free(o->run_dir);
    o->run_dir = sf_strdup(v);
    return argv[i][9] == '=' ? 1 : 2;
  }
  return sf_bench_opts_parse(&o->bench, argc, argv, i);
}

/* 1 if the first n_categories classes and all their instances exist, each instance a complete
 * float32 (point_num, 3) .npy (what sf_generate_instances keeps; anything else it regenerates).
 * Otherwise 0, with what is missing in why. */
static int fractals_complete(const sf_config *c, char *why, size_t whylen)
{
  char *pdir = sf_fractal_param_dir(c);
  char **names = NULL;
  int n = sf_fractal_list_class_files(pdir, &names);
  sf_free_names(names, n);
  if (n < c->n_categories) {
    if (!sf_dir_exists(pdir))
      snprintf(why, whylen, "%s does not exist", pdir);
    else
      snprintf(why, whylen, "%s holds %d of the %ld classes", pdir, n, c->n_categories);
    free(pdir);
    return 0;
  }
  free(pdir);
  for (int cat = 0; cat < c->n_categories; cat++)
    for (int inst = 0; inst < SF_N_INSTANCES; inst++) {
      char *p = sf_fractal_instance_path(c, cat, inst);
      sf_npy h;
      char err[1024];
      int ok = sf_npy_read_header(p, &h, err, sizeof err) == 0;
      if (ok && (h.dtype != SF_NPY_F32 || h.ndim != 2 || h.shape[0] != (size_t)c->point_num || h.shape[1] != 3)) {
        snprintf(err, sizeof err, "%s is not a float32 (%ld, 3) array", p, c->point_num);
        ok = 0;
      }
      if (!ok && !sf_file_exists(p)) snprintf(why, whylen, "%s does not exist", p);
      else if (!ok) snprintf(why, whylen, "%s", err);
      free(p);
      if (!ok) return 0;
    }
  return 1;
}

/* When fract_base_dir exists but holds no library for this variance_threshold/seed: the seed
 * directories it does hold, so that a wrong `seed` or `variance_threshold` is easy to spot. */
static void note_other_libraries(const sf_config *c)
{
  const char *base = c->fract_base_dir && c->fract_base_dir[0] ? c->fract_base_dir : ".";
  char *root = sf_fractal_root_dir(c);
  if (sf_dir_exists(root) || !sf_dir_exists(base)) {
    free(root);
    return;
  }
  char found[1024] = "";
  size_t k = 0;
  DIR *d = opendir(base);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strncmp(e->d_name, "var", 3) != 0) continue;
    char *vdir = sf_path_join(base, e->d_name);
    DIR *d2 = opendir(vdir);
    struct dirent *e2;
    while (d2 && (e2 = readdir(d2)))
      if (!strncmp(e2->d_name, "seed", 4) && k + strlen(vdir) + strlen(e2->d_name) + 8 < sizeof found)
        k += (size_t)snprintf(found + k, sizeof found - k, "%s%s/%s", k ? ", " : "", e->d_name, e2->d_name);
    if (d2) closedir(d2);
    free(vdir);
  }
  if (d) closedir(d);
  if (k)
    sf_warn("fract_base_dir %s holds fractal libraries for %s, but none at %s (variance_threshold %g, seed %ld): "
            "check those two keys if you meant to reuse one", base, found, root, c->variance_threshold, c->seed);
  free(root);
}

/* --run-dir: a checkpoint of another network or format version is refused before anything in the
 * run directory is rewritten (config.yaml, overrides.yaml, restart.sh), so that a resume refused
 * for bad overrides leaves restart.sh working. Corrupt or missing checkpoints are left to the
 * trainer (renamed *.corrupt, fallback to checkpoint_best). */
static void refuse_incompatible_checkpoint(const sf_config *c, const char *run_dir)
{
  sf_unet u;
  char err[2048];
  if (sf_unet_build(&u, (int)c->problem_scale, (int)c->unet_bottleneck_dim, (int)c->unet_base_channels,
                    (int)c->n_categories + 1, (int)c->group_norm_groups, err, sizeof err) != 0)
    return; /* reported with the model, as for a fresh run */
  sf_ckpt_topology want;
  sf_ckpt_topology_of(&u, &want);
  sf_unet_free(&u);
  char *dir = sf_path_join(run_dir, c->checkpoint_dir);
  static const char *const names[2] = {"checkpoint_last.bin", "checkpoint_best.bin"};
  for (int i = 0; i < 2; i++) {
    char *p = sf_path_join(dir, names[i]);
    sf_ckpt_state st;
    sf_ckpt_status cs = sf_checkpoint_read(p, &want, &st, NULL, NULL, NULL, err, sizeof err);
    free(p);
    if (cs == SF_CKPT_MISMATCH)
      sf_die(SF_EXIT_USAGE, "refusing to resume: %s (nothing in %s was changed)", err, run_dir);
    long was = cs == SF_CKPT_OK && st.replicas > 0 ? st.replicas : 1; /* an epoch continues with its replicas */
    if (cs == SF_CKPT_OK && st.partial_epoch && was != sf_dist_replicas())
      sf_die(SF_EXIT_USAGE,
             "refusing to resume: %s/%s stopped inside epoch %ld of a run with %ld data-parallel replica(s), and "
             "this run has %d; relaunch with %ld replica(s) (its restart.sh does) (nothing in %s was changed)",
             c->checkpoint_dir, names[i], st.partial_epoch, was, sf_dist_replicas(), was, run_dir);
    if (cs == SF_CKPT_OK) break;
  }
  free(dir);
}

/* --restart/--run-dir with neither checkpoint file (the run stopped before its first checkpoint: killed
 * in epoch 1, or checkpoint_interval -1): nothing to resume, so the run starts over in the same
 * directory, which restart.sh promises to finish. The epoch rows of the stopped attempt would be
 * stale in a new run's train_stats.csv: they are kept aside as train_stats.csv.before-restart. A
 * directory without config.yaml is not a run directory and is refused. Returns 1 to start over. */
static int start_over_without_checkpoint(const sf_config *c, const char *run_dir)
{
  int none = 0;
  if (sf_dist_is_root()) {
    char *dir = sf_path_join(run_dir, c->checkpoint_dir), *last = sf_path_join(dir, "checkpoint_last.bin"),
         *best = sf_path_join(dir, "checkpoint_best.bin"), *cfg = sf_path_join(run_dir, "config.yaml");
    none = !sf_file_exists(last) && !sf_file_exists(best);
    if (none && !sf_file_exists(cfg))
      none = 2;
    else if (none)
      sf_info("restart: no checkpoint in %s (the run stopped before its first checkpoint): starting the run over in %s",
              dir, run_dir);
    free(dir);
    free(last);
    free(best);
    free(cfg);
  }
  none = sf_dist_agree(none);
  if (none == 2)
    sf_die(SF_EXIT_USAGE, "--run-dir %s: neither a checkpoint (%s/checkpoint_last.bin) nor config.yaml: not the run "
           "directory of a scaffold benchmark run", run_dir, c->checkpoint_dir);
  if (!none || !sf_dist_is_root()) return none;
  char *csv = sf_path_join(run_dir, "train_stats.csv"), *kept = sf_path_join(run_dir, "train_stats.csv.before-restart");
  sf_epoch_row *rows = NULL;
  size_t n = 0;
  char err[1024];
  if (sf_stats_csv_load(csv, &rows, &n, err, sizeof err) == 0 && n > 0) {
    if (rename(csv, kept) != 0) sf_die(SF_EXIT_FAILURE, "cannot rename %s to %s: %s", csv, kept, strerror(errno));
    sf_info("restart: the %zu epoch row(s) of the stopped attempt moved from train_stats.csv to %s", n, kept);
  }
  free(rows);
  free(csv);
  free(kept);
  return 1;
}

/* Fractal library (when missing) and dataset. Returns 0 or an exit status; *gen_secs gets the
 * time spent generating (excluded from the time to solution). */
static int generate_data(const sf_config *c, sf_dataset *d, int force_fractals, double *gen_secs,
                         double *fract_secs)
{
  double t0 = sf_now();
  *fract_secs = 0;
  char why[2048];
  if (force_fractals || !fractals_complete(c, why, sizeof why)) {
    char *root = sf_fractal_root_dir(c);
    if (!force_fractals) {
      note_other_libraries(c);
      sf_info("fractal library missing or incomplete under %s (%s): generating it first (as `scaffold "
              "generate_fractals`)", root, why);
    }
    free(root);
    int rc = sf_generate_fractals(c);
    if (rc != 0) return rc;
    *fract_secs = sf_now() - t0;
  }
  double t1 = sf_now();
  int rc = sf_dataset_prepare(c, d);
  if (rc != 0) return rc;
  *gen_secs = *fract_secs + ((d->generated || d->repaired) ? sf_now() - t1 : 0);
  return 0;
}

/* generate_data, traced with `trace: 1` (rank 0) into <run_dir>/datagen_trace/ - trace.json and
 * worker_stats.{json,txt} with the phases "fractal classes", "fractal instances", "dataset" and
 * their utilisation - apart from the training trace in <run_dir>. */
static int prepare_data(const sf_config *c, const char *run_dir, sf_dataset *d, int force_fractals, double *gen_secs,
                        double *fract_secs)
{
  char *tdir = NULL, err[1024];
  if (c->trace && sf_dist_is_root()) {
    tdir = sf_path_join(run_dir, "datagen_trace");
    if (sf_mkdir_p(tdir) != 0) sf_die(SF_EXIT_FAILURE, "trace: cannot create directory %s: %s", tdir, strerror(errno));
    if (sf_trace_begin_as(tdir, "scaffold benchmark (data generation)", "data generation", err, sizeof err) != 0)
      sf_die(SF_EXIT_FAILURE, "trace: %s", err);
  }
  int rc = generate_data(c, d, force_fractals, gen_secs, fract_secs);
  if (tdir && sf_trace_end(err, sizeof err) != 0) {
    fprintf(stderr, "scaffold: error: trace: %s\n", err);
    if (!rc) rc = SF_EXIT_FAILURE;
  } else if (tdir) {
    sf_info("trace: data generation in %s/trace.json, phase utilisation in %s/worker_stats.txt", tdir, tdir);
  }
  free(tdir);
  return rc;
}

static void describe_workers(char *buf, size_t len)
{
  snprintf(buf, len, "%d CPU workers (%d in all)", sf_runtime_ncpu_workers(), sf_runtime_nworkers());
}

/* --datagen-only: the fractal library and a fresh dataset, timed as volumes/s. */
static int datagen_only(sf_config *c, const char *run_dir, sf_result *res, sf_bench_opts *bo)
{
  char *tmpds = sf_path_join(run_dir, "datagen-only-dataset");
  free(c->dataset_dir);
  c->dataset_dir = tmpds; /* a fresh cache root, so the volumes are really generated */
  sf_ratelog log;
  sf_ratelog_init(&log, bo->sample_duration, bo->max_count);
  sf_dataset d;
  double gen = 0, fract = 0, t0 = sf_now();
  int rc = prepare_data(c, run_dir, &d, 1, &gen, &fract);
  double secs = sf_now() - t0;
  if (rc != 0) {
    sf_result_fail(res, "dataset generation %s (status %d)", rc == SF_EXIT_INTERRUPTED ? "interrupted" : "failed", rc);
    sf_result_write(res, NULL);
    sf_ratelog_free(&log);
    sf_remove_tree(tmpds); /* the throw-away dataset root (its staging directory is already gone) */
    return rc;
  }
  int nvol = d.n_train + d.n_val;
  sf_ratelog_elapse(&log, secs, nvol, 0);
  sf_info("datagen-only: %d volumes (fractal library %.2f s + volumes %.2f s) in %.2f s: %.3f volumes/s", nvol, fract,
          secs - fract, secs, secs > 0 ? nvol / secs : 0.0);
  sf_result_set_rates(res, "train", &log);
  sf_result_set_number(res, "fractal_seconds", fract);
  sf_result_set_number(res, "dataset_seconds", secs - fract);
  sf_result_set_number(res, "volumes", nvol);
  sf_result_write(res, NULL);
  sf_ratelog_free(&log);
  sf_dataset_free(&d);
  sf_remove_tree(tmpds);
  return 0;
}

/* One benchmark run's state, filled by the steps below in order. */
typedef struct {
  double t_start;
  sf_config c;
  cli_opts o;
  int verbose, resume, start_over, status;
  sf_result *res;
  char *run_dir;
  sf_dataset data;
  double gen_secs, fract_secs;
  sf_unet u;
  float *params, *class_w;
  sf_graph *g;
  sf_ratelog log;
  sf_train_result tr;
  char err[2048];
} bench_run;

/* The configuration and the options, every refusal before any work starts. */
static void parse_and_check(bench_run *b, int argc, char **argv)
{
  sf_config *c = &b->c;
  sf_config_init(c);
  sf_bench_opts_init(&b->o.bench);
  int next = sf_config_from_cli(c, argc, argv, 1, &b->verbose, extra_opt, &b->o);
  if (next < argc) sf_die(SF_EXIT_USAGE, "benchmark: unexpected argument '%s' (--help lists the options)", argv[next]);
  sf_perfmodels_set_verbose(b->verbose); /* -v lists the stale codelets of a shipped class */
  if (!c->source_file) {
    usage(stderr);
    sf_die(SF_EXIT_USAGE, "benchmark needs a config file: -c CONFIG");
  }
  sf_progress_set_interval(c->progress_interval);
  if (b->o.restart && !b->o.run_dir) sf_die(SF_EXIT_USAGE, "--restart needs --run-dir DIR (the run directory to resume)");
  sf_dist_check_config(c); /* every rank must run the same configuration */
  /* ranks = replicas x ranks per volume (spatial_ranks, or the product of dc_num_shards) */
  const char *grid_key = c->spatial_ranks > 1 ? "spatial_ranks" : "dc_num_shards";
  if (!sf_dist_active() && sf_config_spatial(c) > 1)
    sf_config_refuse(c, grid_key, "%ld ranks per volume, but this is a single process; run it under `mpirun -np N` "
                     "with N a multiple of %ld (N = replicas x ranks per volume)", sf_config_spatial(c),
                     sf_config_spatial(c));
  sf_dist_configure(sf_config_spatial(c), grid_key);
  if (sf_dist_active() && b->o.bench.datagen_only)
    sf_die(SF_EXIT_USAGE, "--datagen-only measures one process: run it without mpirun");
  sf_benchmark_check_config(c, !b->o.bench.datagen_only); /* what this build cannot run: refused before any work */
  if (!sf_dist_is_root()) { /* only rank 0 writes outputs, the result JSON included */
    free(b->o.bench.out);
    b->o.bench.out = NULL;
  }
  b->resume = b->o.run_dir != NULL || !c->train_from_scratch;
  if (b->o.run_dir) c->train_from_scratch = 0; /* upstream: --run-dir forces train_from_scratch False */
}

/* The run directory (new, or the one to resume) with its config copies. */
static void open_run_dir(bench_run *b)
{
  sf_config *c = &b->c;
  if (b->o.run_dir) {
    if (!sf_dir_exists(b->o.run_dir)) sf_die(SF_EXIT_USAGE, "--run-dir %s: no such directory", b->o.run_dir);
    b->run_dir = sf_strdup(b->o.run_dir);
  } else {
    b->run_dir = sf_dist_is_root() ? sf_run_dir_create(c->base_run_dir, c->job_name, b->err, sizeof b->err) : NULL;
    if (sf_dist_is_root() && !b->run_dir) sf_die(SF_EXIT_FAILURE, "%s", b->err);
    if (sf_dist_active()) { /* rank 0's directory */
      char *rd = sf_dist_bcast_string(b->run_dir);
      free(b->run_dir);
      b->run_dir = rd;
    }
  }
  if (b->o.run_dir) refuse_incompatible_checkpoint(c, b->run_dir);
  b->start_over = b->o.run_dir && start_over_without_checkpoint(c, b->run_dir);
  if (b->start_over) b->resume = 0;
  if (sf_dist_is_root() && sf_run_dir_write_configs(c, b->run_dir, b->o.run_dir == NULL, b->err, sizeof b->err) != 0)
    sf_die(SF_EXIT_FAILURE, "%s", b->err);
  sf_result_set_string(b->res, "run_dir", b->run_dir);
  sf_info("benchmark: run directory %s%s", b->run_dir,
          b->start_over ? " (starting over: no checkpoint yet)" : b->o.run_dir ? " (resuming)" : "");
}

/* The CPU kernels and the precision they run in, in the header and the result. */
static void describe_cpu_kernels(const sf_config *c, sf_result *res)
{
  char kdesc[192], kwarn[640];
  sf_info("benchmark: CPU kernels: %s", sf_cpu_kernels_describe(kdesc, sizeof kdesc));
  char tdesc[PATH_MAX + 512];
  sf_info("benchmark: %s", sf_kernel_tuning_describe(tdesc, sizeof tdesc));
  if (sf_blas_generic_warning(kwarn, sizeof kwarn)) sf_warn("%s", kwarn);
  sf_result_set_string(res, "cpu_kernels", sf_cpu_isa_name(sf_cpu_isa_active()));
  sf_result_set_number(res, "conv_winograd", sf_conv_winograd_active());
  const char *bf16_engine = sf_cpu_bf16_engine();
  if (c->torch_amp && bf16_engine)
    sf_info("benchmark: torch_amp: 1: CPU workers run the 3x3x3 convolutions%s in bf16 (engine %s: bf16 "
            "operands, fp32 sums); GroupNorm, the loss, reductions, the 1x1x1 convolution%s and Adam stay fp32, "
            "OpenCL workers stay fp32 (docs/performance.md, \"bf16\")",
            strcmp(bf16_engine, "amx") ? "" : " and the transposed ones", bf16_engine,
            strcmp(bf16_engine, "amx") ? ", the transposed ones" : "");
  else if (c->torch_amp) /* upstream's CPU autocast runs the convolutions in bf16: say that ours cannot here */
    sf_warn("torch_amp: 1: this CPU has no bf16 instructions (AVX512_BF16%s), so CPU workers compute the "
            "convolutions in fp32 where upstream's CPU autocast would run them in bf16; CUDA workers run bf16",
            sf_switch("SF_CPU_BF16") ? ", or SF_CPU_BF16 turned them off" : "");
  sf_result_set_string(res, "cpu_precision", c->torch_amp && bf16_engine ? "bf16" : "fp32");
}

/* StarPU and the run header: runtime, CPU kernels, ranks, workers. */
static void start_runtime(bench_run *b)
{
  sf_runtime_init(&b->c);
  sf_signals_install(); /* starpu_init installed its own SIGINT handler */
  char desc[256], workers[128];
  sf_info("benchmark: %s", sf_runtime_describe(desc, sizeof desc));
  describe_cpu_kernels(&b->c, b->res);
  if (sf_dist_active())
    sf_info("benchmark: %d MPI ranks = %d data-parallel replica(s) x %d spatial shard(s) (StarPU-MPI); rank 0 "
            "writes the outputs; workers per rank as above", sf_dist_size(), sf_dist_replicas(), sf_dist_spatial());
  describe_workers(workers, sizeof workers);
  sf_result_set_runtime(b->res, sf_runtime_scheduler(), workers);
}

/* The dataset: rank 0 generates and fills the cache first, then the others load it. 0, or the exit
 * status (the result file already says why). */
static int load_data(bench_run *b)
{
  int rc = sf_dist_is_root() ? prepare_data(&b->c, b->run_dir, &b->data, 0, &b->gen_secs, &b->fract_secs) : 0;
  if (sf_dist_active()) {
    int first = sf_dist_agree(rc);
    if (!sf_dist_is_root()) rc = first ? first : prepare_data(&b->c, b->run_dir, &b->data, 0, &b->gen_secs, &b->fract_secs);
    int all = sf_dist_agree(rc);
    if (all && !rc) sf_dataset_free(&b->data); /* another rank failed */
    rc = all;
  }
  if (rc == 0 && sf_stop_requested()) {
    sf_dataset_free(&b->data);
    rc = SF_EXIT_INTERRUPTED;
  }
  if (rc == SF_EXIT_INTERRUPTED) {
    fprintf(stderr, "scaffold: benchmark interrupted by %s while preparing the data, before training: no "
            "checkpoint yet, so restart.sh (or the same benchmark command) starts the run over; complete files "
            "are reused\n",
            sf_signal_name(sf_stop_requested()));
    sf_result_fail(b->res, "interrupted by %s while preparing the data", sf_signal_name(sf_stop_requested()));
  } else if (rc != 0) {
    sf_result_fail(b->res, "dataset preparation failed (status %d; see stderr)", rc);
  }
  if (rc != 0) {
    sf_result_write(b->res, NULL);
    return rc;
  }
  sf_info("dataset: %s: %d training and %d validation volumes of %d^3, %d classes", b->data.dir, b->data.n_train,
          b->data.n_val, b->data.grid, b->data.n_classes);
  return 0;
}

/* The U-Net, its initial parameters, the CE class weights and the task graph. */
static void build_model(bench_run *b)
{
  const sf_config *c = &b->c;
  sf_unet *u = &b->u;
  if (sf_unet_build(u, (int)c->problem_scale, (int)c->unet_bottleneck_dim, (int)c->unet_base_channels,
                    (int)c->n_categories + 1, (int)c->group_norm_groups, b->err, sizeof b->err) != 0)
    sf_die(SF_EXIT_USAGE, "model: %s", b->err);
  if (b->verbose) sf_unet_print(u, stdout);
  sf_info("model: U-Net with %d levels, base channels %d, %zu parameters, %.3f GFLOP per forward pass", u->levels,
          u->base_channels, u->total_params, u->forward_flops * 1e-9);
  b->params = sf_aligned_alloc(u->total_params * sizeof(float), "parameters");
  sf_unet_init_params(u, b->params, (uint64_t)c->seed);
  b->class_w = sf_malloc((size_t)u->n_classes * sizeof *b->class_w, "class weights");
  uint64_t cw_bytes = 0; /* every rank reads its share of the sampled masks' planes */
  if (sf_dataset_class_weights(&b->data, c->ce_weight_sample_fraction, b->class_w, &cw_bytes, b->err,
                               sizeof b->err) != 0)
    sf_die(SF_EXIT_FAILURE, "class weights: %s", b->err);
  sf_info("CE class weights: background %.6g, foreground %.6g (%llu bytes of masks read%s)", b->class_w[0],
          u->n_classes > 1 ? b->class_w[1] : 0.0, (unsigned long long)cw_bytes,
          sf_dist_active() ? " by this rank" : "");
  b->g = sf_graph_create(u, c, b->params, b->err, sizeof b->err);
  if (!b->g) sf_die(SF_EXIT_USAGE, "task graph: %s", b->err);
}

/* Training to the target Dice (src/train/trainer.c), with the trace around it. */
static void train(bench_run *b)
{
  const sf_config *c = &b->c;
  sf_ratelog_init(&b->log, b->o.bench.sample_duration, b->o.bench.max_count);
  sf_ratelog_set_max_time(&b->log, b->o.bench.max_time);
  if (c->trace && sf_dist_is_root() && sf_trace_begin(b->run_dir, b->err, sizeof b->err) != 0)
    sf_die(SF_EXIT_FAILURE, "trace: %s", b->err);
  sf_train_install_signals();
  sf_kernel_choices_reset(); /* count the variants of this run's steps only */
  sf_conv3d_tuning_counts_reset();
  sf_train_setup ts = {.cfg = c, .data = &b->data, .unet = &b->u, .graph = b->g, .params = b->params,
                       .class_w = b->class_w, .run_dir = b->run_dir, .resume = b->resume,
                       .require_checkpoint = b->resume && (b->o.restart || b->o.run_dir != NULL),
                       .rates = &b->log, .verbose = b->verbose, .log = stdout};
  b->status = sf_train(&ts, &b->tr);
  if (b->tr.error[0]) {
    if (b->status == SF_EXIT_INTERRUPTED) fprintf(stderr, "scaffold: %s\n", b->tr.error);
    else fprintf(stderr, "scaffold: error: %s\n", b->tr.error);
  }
  char desc[256], choices[1024];
  if (b->verbose) {
    sf_graph_describe(b->g, desc, sizeof desc);
    sf_info("%s", desc);
  }
  sf_info("benchmark: CPU kernel variants run (calls per entry%s): %s", sf_dist_active() ? ", this rank" : "",
          sf_kernel_choices_describe(choices, sizeof choices));
  if (sf_trace_end(b->err, sizeof b->err) != 0) {
    fprintf(stderr, "scaffold: error: trace: %s\n", b->err);
    if (!b->status) b->status = SF_EXIT_FAILURE;
  }
  if (c->trace)
    sf_info("trace: %s/trace.json, worker statistics in %s/worker_stats.txt", b->run_dir, b->run_dir);
  if (b->tr.epochs > 0 && sf_dist_is_root()) {
    int fr = sf_write_figures(c, b->run_dir, b->err, sizeof b->err);
    if (fr == 1) sf_warn("figures skipped: %s", b->err);
    else if (fr < 0) sf_warn("figures not written: %s", b->err);
  }
}

/* Upstream's closing lines (spec §7) and our one-line summary. */
static void print_summary(const bench_run *b, double tts)
{
  const sf_config *c = &b->c;
  const sf_train_result *tr = &b->tr;
  char target[32];
  sf_format_pyfloat(c->target_dice, target, sizeof target);
  if (b->status == 0) {
    if (tr->converged)
      printf("Benchmark run at scale %ld complete. Trained to >= %s validation dice score in %.2f seconds, %ld epochs, "
             "%ld optimizer steps.\n", c->problem_scale, target, tr->sum_epoch_time, tr->epochs,
             tr->total_optimizer_steps);
    else if (!tr->stopped_max_count)
      printf("Benchmark run at scale %ld complete. Completed in %.2f seconds, %ld epochs, %ld optimizer steps.\n",
             c->problem_scale, tr->sum_epoch_time, tr->epochs, tr->total_optimizer_steps);
    if (tr->converged && c->epochs == -1 && tr->sum_epoch_time > 0)
      printf("FOM = %.6g (1 / total_train_time=%.2f seconds). This FOM is specific to problem_scale=%ld, "
             "target_dice=%s, n_categories=%ld, unet_bottleneck_dim=%ld, unet_base_channels=%ld.\n",
             1.0 / tr->sum_epoch_time, tr->sum_epoch_time, c->problem_scale, target, c->n_categories,
             c->unet_bottleneck_dim, c->unet_base_channels);
  }
  printf("summary: %s | time to solution %.2f s (wall clock incl. I/O, excl. %.2f s of dataset generation) | epochs "
         "%ld | best val Dice %.4f | final val Dice %.4f | sum of epoch times %.2f s | FOM 1/sum %.6g | %.2f samples/s "
         "(%.0f samples) | run dir %s\n",
         b->status == SF_EXIT_INTERRUPTED ? "interrupted"
         : b->status != 0                 ? "failed"
         : tr->converged                  ? "converged"
         : tr->stopped_max_count          ? (b->log.max_time > 0 ? "stopped at --max-count/--max-time" : "stopped at --max-count")
                                          : "not converged",
         tts, b->gen_secs, tr->epochs, tr->best_val_dice, tr->final_val_dice, tr->sum_epoch_time,
         tr->sum_epoch_time > 0 ? 1.0 / tr->sum_epoch_time : 0.0,
         b->log.total_time > 0 ? b->log.total_count / b->log.total_time : 0.0, tr->train_samples, b->run_dir);
  fflush(stdout);
}

/* "granularity": what the runtime granularity report needs of a run (docs/runtimes.md, docs/harness.md): the
 * shape of the task graph, the runtime and its CPU workers, the tasks of a training step, the mean wall time of
 * the timed steps (all but the first; the first alone in a run of one step, "first_step_only": true) and, under
 * the host executors, their summed task-body time per step (the sequential executor's is the report's
 * reference). Absent when no training step ran. */
static void add_granularity(bench_run *b)
{
  const sf_train_result *tr = &b->tr;
  const sf_config *c = &b->c;
  if (tr->gran_tasks_per_step < 1) return;
  int first_only = tr->gran_steps < 1;
  double steps = first_only ? 1 : (double)tr->gran_steps;
  double step_s = first_only ? tr->gran_first_step_seconds : tr->gran_step_seconds;
  double body_s = first_only ? tr->gran_first_body_seconds : tr->gran_body_seconds;
  const char *hw = sf_switch("SF_HW_BLOCKS");
  char shape[128];
  snprintf(shape, sizeof shape, "ps%ld/bn%ld/b%ld/g%ld s%d %s%s", c->problem_scale, c->unet_bottleneck_dim,
           c->unet_base_channels, c->group_norm_groups, sf_graph_nslabs(b->g), hw && *hw ? hw : "1x1",
           c->local_batch_size > 1 ? " batch>1" : "");
  cJSON *g = cJSON_AddObjectToObject(sf_result_json(b->res), "granularity");
  sf_rt_kind rt = sf_runtime_which();
  cJSON_AddStringToObject(g, "shape", shape);
  cJSON_AddStringToObject(g, "runtime", sf_runtime_kind_name(rt));
  cJSON_AddNumberToObject(g, "workers", sf_runtime_ncpu_workers());
  cJSON_AddNumberToObject(g, "tasks_per_step", (double)tr->gran_tasks_per_step);
  cJSON_AddNumberToObject(g, "steps", steps);
  if (first_only) cJSON_AddTrueToObject(g, "first_step_only");
  cJSON_AddNumberToObject(g, "step_s", step_s / steps);
  if (rt == SF_RT_STARPU)
    cJSON_AddNullToObject(g, "body_s_per_step");
  else
    cJSON_AddNumberToObject(g, "body_s_per_step", body_s / steps);
}

/* The harness result JSON (scaffold/bench.h). */
static void write_result(bench_run *b, double tts)
{
  const sf_train_result *tr = &b->tr;
  sf_result *res = b->res;
  sf_result_set_rates(res, "train", &b->log);
  sf_result_set_metric(res, "val_dice", tr->final_val_dice);
  sf_result_set_metric(res, "best_val_dice", tr->best_val_dice);
  if (tr->epochs_run > 0) {
    sf_result_set_metric(res, "train_loss", tr->final_train_loss);
    sf_result_set_metric(res, "val_loss", tr->final_val_loss);
  }
  sf_result_set_number(res, "epochs_completed", (double)tr->epochs);
  sf_result_set_number(res, "total_optimizer_steps", (double)tr->total_optimizer_steps);
  sf_result_set_number(res, "sum_epoch_time", tr->sum_epoch_time);
  sf_result_set_number(res, "fom", tr->sum_epoch_time > 0 ? 1.0 / tr->sum_epoch_time : 0.0);
  sf_result_set_number(res, "dataset_generation_seconds", b->gen_secs);
  sf_result_set_number(res, "warmup_seconds", tr->warmup_seconds);
  sf_result_set_number(res, "step_gflop", sf_graph_step_flops(b->g) * 1e-9);
  sf_result_set_string(res, "blas_core", sf_blas_core_name());
  cJSON_AddItemToObject(sf_result_json(res), "kernel_choices", sf_kernel_choices_json());
  cJSON_AddItemToObject(sf_result_json(res), "kernel_tuning", sf_kernel_tuning_json());
  if (b->c.bound && sf_dist_is_root()) { /* the bound report of step_probes.c, when the run got that far */
    char *bj = sf_path_join(b->run_dir, "bound.json");
    if (access(bj, R_OK) == 0) sf_result_add_bound(res, bj, (double)b->c.local_batch_size * sf_dist_replicas());
    free(bj);
  }
  add_granularity(b);
  cJSON_AddBoolToObject(sf_result_json(res), "converged", tr->converged);
  if (tr->converged) sf_result_set_convergence(res, tts, tr->epochs);
  if (b->status != 0) sf_result_fail(res, "%s", tr->error[0] ? tr->error : "benchmark failed");
  char *rpath = NULL;
  if (sf_result_write(res, &rpath) == 0 && rpath) sf_info("result: %s", rpath);
  free(rpath);
}

/* StarPU down, the FxT trace converted, everything freed. */
static void finish(bench_run *b, int trained)
{
  if (trained) sf_graph_destroy(b->g);
  sf_runtime_shutdown();
  if (trained && sf_runtime_fxt_finish(b->run_dir, b->err, sizeof b->err) != 0) {
    fprintf(stderr, "scaffold: error: trace: fxt: %s\n", b->err);
    if (!b->status) b->status = SF_EXIT_FAILURE;
  } else if (trained && b->c.trace == SF_TRACE_FXT) {
    sf_info("FxT trace: %s/paje.trace (ViTE), dag.dot, tasks.rec, data.rec, trace.html; raw trace fxt.prof",
            b->run_dir);
  }
  if (trained) {
    sf_dist_finalize();
    sf_ratelog_free(&b->log);
    free(b->params);
    free(b->class_w);
    sf_unet_free(&b->u);
    sf_dataset_free(&b->data);
  }
  sf_result_free(b->res);
  free(b->run_dir);
  free(b->o.run_dir);
  sf_bench_opts_free(&b->o.bench);
  sf_config_free(&b->c);
}

int sf_cmd_benchmark(int argc, char **argv)
{
  static bench_run b; /* large (the error buffer); one per process */
  memset(&b, 0, sizeof b);
  b.t_start = sf_now();
  sf_dist_init(); /* MPI when launched by mpirun with several ranks (scaffold/dist.h); else nothing */
  parse_and_check(&b, argc, argv);
  b.res = sf_result_begin(&b.o.bench, argc, argv);
  sf_signals_install(); /* SIGINT/SIGTERM: stop cleanly at the next safe point (scaffold/signals.h) */
  open_run_dir(&b);
  start_runtime(&b);
  if (b.o.bench.datagen_only) {
    b.status = datagen_only(&b.c, b.run_dir, b.res, &b.o.bench);
    finish(&b, 0);
    return b.status;
  }
  int rc = load_data(&b);
  if (rc != 0) { /* as before the split: StarPU down, nothing else to free */
    sf_runtime_shutdown();
    return rc;
  }
  build_model(&b);
  train(&b);
  double tts = sf_now() - b.t_start - b.gen_secs;
  print_summary(&b, tts);
  write_result(&b, tts);
  finish(&b, 1);
  return b.status;
}
