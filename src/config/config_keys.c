/* The one table of configuration keys: name, type, struct field, default, range check, upstream-style
 * CLI flag and meaning. Defaults, YAML reading and writing, --set overrides, the -v listing, the
 * --help text and docs/config.md are all generated from it, so adding a key is one line here plus
 * its field in scaffold/config.h. Upstream keys and defaults: spec §1.3 (newest, 11e97acb); ours:
 * docs/architecture.md §4. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config_internal.h"

/* ---- range checks: each gets a pointer to the struct field ----------------------------------- */
#define L(p) (*(const long *)(p))
#define D(p) (*(const double *)(p))
#define S(p) (*(const char *const *)(p))
static int ge0(const void *p) { return L(p) >= 0; }
static int ge1(const void *p) { return L(p) >= 1; }
static int gem1(const void *p) { return L(p) >= -1; }
static int m1_or_ge1(const void *p) { return L(p) == -1 || L(p) >= 1; }
static int eq1(const void *p) { return L(p) == 1; }
static int nice_range(const void *p) { return L(p) >= -1 && L(p) <= 19; }
static int ps_range(const void *p) { return L(p) >= 1 && L(p) <= 20; } /* 2^(3*20) still fits */
static int is_true(const void *p) { return L(p) == 1; }
static int positive(const void *p) { return D(p) > 0; }
static int ge0f(const void *p) { return D(p) >= 0; }
static int open_0_100(const void *p) { return D(p) > 0 && D(p) < 100; }
static int half_open_0_1(const void *p) { return D(p) > 0 && D(p) <= 1; }
static int nonempty(const void *p) { return S(p)[0] != '\0'; }
static int is_torch(const void *p) { return strcmp(S(p), "torch") == 0; }
static int is_runtime(const void *p)
{
  return !strcmp(S(p), "starpu") || !strcmp(S(p), "openmp") || !strcmp(S(p), "sequential");
}
static int each_ge1(const void *p)
{
  const long *v = p;
  return v[0] >= 1 && v[1] >= 1 && v[2] >= 1;
}
static int dims_234(const void *p)
{
  const long *v = p;
  for (int i = 0; i < 3; i++)
    if (v[i] < 2 || v[i] > 4) return 0;
  return v[0] != v[1] && v[0] != v[2] && v[1] != v[2];
}

#define F(field) offsetof(sf_config, field)
#define KEY_INT(n, g, d, chk, al, fl, h) \
  {#n, SF_KT_INT, F(n), g, .def_i = (d), .ok = chk, .allowed = al, .flag = fl, .help = h}
#define KEY_BOOL(n, g, d, chk, al, fl, h) \
  {#n, SF_KT_BOOL, F(n), g, .def_i = (d), .ok = chk, .allowed = al, .flag = fl, .help = h}
#define KEY_FLT(n, g, d, chk, al, fl, h) \
  {#n, SF_KT_FLOAT, F(n), g, .def_f = (d), .ok = chk, .allowed = al, .flag = fl, .help = h}
#define KEY_STR(n, g, d, chk, al, fl, h) \
  {#n, SF_KT_STRING, F(n), g, .def_s = (d), .ok = chk, .allowed = al, .flag = fl, .help = h}
#define KEY_INT3(n, g, a, b, c, chk, al, fl, h) \
  {#n, SF_KT_INT3, F(n), g, .def_i3 = {a, b, c}, .ok = chk, .allowed = al, .flag = fl, .help = h}

#define EXT SF_KG_EXTERNAL
#define PRB SF_KG_PROBLEM
#define LR SF_KG_LR
#define DEV SF_KG_INTERNAL
#define AUX SF_KG_AUX
#define OUR SF_KG_OURS
#define DER SF_KG_DERIVED

const sf_key sf_keys[] = {
  /* ---- upstream: external / user-facing ---- */
  KEY_STR(base_run_dir, EXT, "benchmark_runs", nonempty, "a non-empty path", "--base-run-dir",
          "Parent directory of the timestamped run directories."),
  KEY_STR(dataset_dir, EXT, "datasets", nonempty, "a non-empty path", NULL,
          "Root of the generated-volume cache."),
  KEY_STR(fract_base_dir, EXT, "fractals", nonempty, "a non-empty path", "--fract-base-dir",
          "Root of the IFS category and instance library."),
  KEY_INT(seed, EXT, 42, ge0, ">= 0", "--seed", "Seed of every data-generation and training RNG."),
  KEY_INT(dataloader_num_workers, EXT, 1, ge0, ">= 0", "--dataloader-num-workers",
          "Upstream DataLoader workers per rank; accepted, loading is a StarPU task here."),
  KEY_INT3(dc_num_shards, EXT, 1, 1, 1, each_ge1, "3 integers, each >= 1", "--dc-num-shards",
           "Spatial shard count per sharded dim; the product is the ranks per sample (under mpirun: ranks = "
           "replicas x product). Every activation splits into blocks along depth, rows and columns (at most the "
           "bottleneck edge per dimension), each rank reads only its box of each sample (docs/scaling.md)."),
  KEY_INT3(dc_shard_dims, EXT, 2, 3, 4, dims_234, "3 distinct integers in {2, 3, 4}",
           "--dc-shard-dims", "Sharded tensor dims, NCDHW numbering: 2 = D, 3 = H, 4 = W."),
  KEY_INT(checkpoint_interval, EXT, -1, m1_or_ge1, "-1 or >= 1", NULL,
          "Checkpoint every N epochs; -1 disables checkpointing."),
  /* ---- upstream: external problem specification ---- */
  KEY_INT(n_categories, PRB, 5, ge1, ">= 1", "--n-categories",
          "Number of fractal classes; the model has n_categories + 1 outputs (with background)."),
  KEY_INT(n_instances_used_per_fractal, PRB, 145, ge1, ">= 1 and >= n_fracts_per_vol",
          "--n-instances-used-per-fractal",
          "Instances drawn per class, rounded down to a multiple of n_fracts_per_vol (145 -> 144)."),
  KEY_INT(problem_scale, PRB, 7, ps_range,
          "1..20 and >= unet_bottleneck_dim + 1; `benchmark`: within max_memory_gib (the memory plan)",
          "--problem-scale",
          "Volume edge is 2^problem_scale; a non-integer is floored with a warning, as upstream."),
  KEY_INT(unet_bottleneck_dim, PRB, 3, ge0, ">= 0 and <= problem_scale - 1", "--unet-bottleneck-dim",
          "Bottleneck edge is 2^unet_bottleneck_dim; U-Net depth is problem_scale - this."),
  KEY_FLT(target_dice, PRB, 0.95, half_open_0_1, "in (0, 1]", NULL,
          "Training stops once validation Dice reaches this."),
  /* ---- upstream: external learning-rate specification ---- */
  KEY_INT(local_batch_size, LR, 1, ge1, ">= 1", "--local-batch-size",
          "Samples per data-parallel replica per step."),
  KEY_STR(optimizer, LR, "ADAM", NULL,
          "`benchmark`: an optimizer the training graph implements: ADAM, SGD, RMSProp, RMSprop", "--optimizer",
          "Upstream: ADAM, SGD, any other string RMSprop. `benchmark` takes RMSprop under its two names only."),
  KEY_FLT(starting_learning_rate, LR, 0.001, positive, "> 0", "--starting-learning-rate",
          "Initial (maximum) learning rate."),
  KEY_FLT(min_learning_rate, LR, 0.0001, positive, "> 0 and <= starting_learning_rate",
          "--min-learning-rate", "eta_min of the cosine warm-restart schedule."),
  KEY_INT(T_0, LR, 10, ge1, ">= 1", "--T-0", "First cosine cycle length, in epochs."),
  KEY_INT(T_mult, LR, 2, ge1, ">= 1", "--T-mult", "Cycle length growth factor."),
  KEY_BOOL(disable_scheduler, LR, 0, NULL, "0/1, true/false, yes/no", NULL, "1 keeps the learning rate constant."),
  /* ---- upstream: internal / dev ---- */
  KEY_FLT(variance_threshold, DEV, 0.15, positive, "> 0", NULL,
          "Category acceptance: per-axis variance must exceed this."),
  KEY_INT(n_fracts_per_vol, DEV, 3, ge1, ">= 1", NULL, "Fractals overlaid per volume."),
  KEY_FLT(val_split, DEV, 30, open_0_100, "in (0, 100)", NULL,
          "Percent of the volumes used for validation."),
  KEY_INT(epochs, DEV, -1, m1_or_ge1, "-1 or >= 1", "--epochs",
          "-1 trains until target_dice; N caps the number of epochs."),
  KEY_BOOL(more_determinism, DEV, 0, NULL, "0/1, true/false, yes/no", NULL,
           "1: fixed-order reductions, bitwise-reproducible whatever the scheduler."),
  KEY_BOOL(datagen_from_scratch, DEV, 0, NULL, "0/1, true/false, yes/no", NULL,
           "1 deletes the category and instance directories before generating."),
  KEY_BOOL(train_from_scratch, DEV, 1, NULL, "0/1, true/false, yes/no", NULL,
           "1 deletes old checkpoints and train_stats.csv."),
  KEY_BOOL(torch_amp, DEV, 1, NULL, "0/1, true/false, yes/no", NULL,
           "bf16 compute with fp32 accumulation, as upstream's autocast: the 3x3x3 convolutions on CPU workers "
           "(AMX tiles where the CPU has AMX-BF16, else AVX512_BF16 VDPBF16PS; SF_CPU_BF16=none|vdpbf16ps|amx caps "
           "it; fp32 with a warning on CPUs without bf16 instructions), with AMX the transposed convolutions too, "
           "the convolutions and GEMMs on CUDA workers. Weights stay fp32 (Adam updates the fp32 master copy; on AMX "
           "CPU-only runs their bf16 copies are packed once per forward, SF_BF16_PREPACK=0 packs per task); "
           "GroupNorm, the loss, reductions, the 1x1x1 convolution, biases and OpenCL workers stay fp32."),
  KEY_STR(framework, DEV, "torch", is_torch, "\"torch\"", NULL,
          "Accepted for compatibility; \"torch\" is the only valid value."),
  KEY_STR(checkpoint_dir, DEV, "checkpoints", nonempty, "a non-empty path", NULL,
          "Checkpoint subdirectory of the run directory."),
  KEY_INT(loss_freq, DEV, 1, NULL, "any integer", NULL, "Accepted but unused, as upstream."),
  KEY_FLT(normalize, DEV, 1, positive, "> 0", NULL,
          "Half-range used to normalise candidate point clouds."),
  KEY_INT(group_norm_groups, DEV, 8, ge1, ">= 1, divides unet_base_channels", "--group-norm-groups",
          "GroupNorm group count; must divide every channel count."),
  KEY_INT(warmup_batches, DEV, 64, ge0, ">= 0", "--warmup-batches",
          "Warm-up steps per rank, rolled back afterwards."),
  KEY_BOOL(activation_checkpointing, DEV, 0, NULL, "0/1, true/false, yes/no", NULL,
           "1: the encoder and decoder blocks of a level keep their activations in two buffers and the level's "
           "two gradient buffers, and the backward recomputes (as tasks) what it needs from the concatenation or "
           "max-pool output the forward kept: less memory, about one more forward pass of compute per step, "
           "bitwise the same training."),
  KEY_FLT(ce_weight_sample_fraction, DEV, 0.1, half_open_0_1, "in (0, 1]", NULL,
          "Fraction of training masks used to estimate the CE class weights."),
  KEY_BOOL(dataset_reuse_enforce_commit_id, DEV, 0, NULL, "0/1, true/false, yes/no", NULL,
           "Require the same git commit to reuse a cached dataset (the commit the binary was built from, "
           "embedded at build time; no-commit-id outside a checkout)."),
  /* ---- upstream: accepted but not in the YAML ---- */
  KEY_STR(job_name, AUX, "benchmark", NULL, "any string", NULL, "Prefix of the run-directory name."),
  KEY_BOOL(async_save, AUX, 0, NULL, "0/1, true/false, yes/no", NULL,
           "1 writes checkpoints on a background thread that overlaps the next epoch (a snapshot is taken at "
           "the epoch's end; at most one write in flight), as upstream; the files are the same as with 0."),
  KEY_BOOL(dist, AUX, 1, is_true, "true (1)", NULL, "If present it must be true, as upstream."),
  KEY_INT(scale, AUX, 1, eq1, "1", NULL, "Fractal scale in the volume; only 1 is valid, as upstream."),
  KEY_INT(datagen_batch_size, AUX, 10000, ge1, ">= 1", "--datagen-batch-size",
          "generate_fractals: maximum category attempts per rank per round."),
  /* ---- ours ---- */
  KEY_INT(unet_base_channels, OUR, 64, ge1, ">= 1, a multiple of group_norm_groups", NULL,
          "Channels of the first U-Net level (upstream: 64); doubles per level."),
  KEY_STR(scheduler, OUR, "", NULL, "any string", "--scheduler",
          "StarPU scheduling policy; \"\" = StarPU's default (STARPU_SCHED, else lws)."),
  KEY_STR(runtime, OUR, "starpu", is_runtime, "starpu, openmp, sequential", NULL,
          "Task runtime under the same graph (docs/runtimes.md): starpu (everything: schedulers, MPI, CUDA, "
          "OpenCL, traces); openmp (libgomp tasks with depend/priority, ncpu threads, CPU only, one process); "
          "sequential (each task runs at submission in the calling thread)."),
  KEY_INT(ncpu, OUR, -1, gem1, ">= -1", "--ncpu", "CPU workers; -1 = StarPU's choice."),
  KEY_INT(ncuda, OUR, -1, gem1, ">= -1", NULL,
          "CUDA workers; -1 = StarPU's choice (0 on a CPU-only StarPU)."),
  KEY_INT(nopencl, OUR, 0, ge0, ">= 0", NULL, "OpenCL workers."),
  KEY_INT(worker_nice, OUR, -1, nice_range, "-1 (auto) or 0 to 19", NULL,
          "Nice increment of the CPU worker threads over the process (StarPU's CPU workers; runtime openmp: its "
          "worker threads; sequential has none). StarPU's idle workers spin, so with a worker per core the thread "
          "that submits each step and waits for it waits for a time slice; lowered workers give it the core at "
          "once. -1 = 5 in one process, 0 under mpirun (StarPU-MPI's progress thread polls on the workers' cores "
          "and would win them); 0 = the process's priority (docs/performance.md)."),
  KEY_INT(slabs, OUR, 0, ge0, ">= 0", NULL,
          "Depth slabs per activation; 0 = automatic: one per worker (a power of two), two per worker when each "
          "slab keeps >= 2^18 top-level floats, at most the bottleneck edge."),
  KEY_BOOL(trace, OUR, 0, NULL, "0/1, true/false, yes/no, or fxt", NULL,
           "1 writes trace.json and per-worker statistics: training in the run directory; data generation, with "
           "the utilisation of each phase, in datagen_trace/ of the run directory (benchmark) or of the fractal "
           "library (generate_fractals). fxt (benchmark, steps; a StarPU built with FxT: scripts/build-fxt) also "
           "records StarPU's FxT trace of the whole process and converts it with starpu_fxt_tool into paje.trace, "
           "dag.dot, tasks.rec, data.rec and trace.html in the run directory (docs/tracing.md)."),
  KEY_BOOL(bound, OUR, 0, NULL, "0/1, true/false, yes/no", NULL,
           "1 records the first training step after warm-up (its task graph) and, when training ends, prints its "
           "measured time against lower bounds from the perfmodels (critical path, work / workers); writes "
           "bound.json, graph.json, graph.dot and the scheduling MILP bound_deps.lp into the run directory. Needs "
           "calibrated perfmodels (docs/scheduling.md)."),
  KEY_FLT(progress_interval, OUR, 30, ge0f, ">= 0 seconds", NULL,
          "Off a terminal (a job's log file), seconds between the plain progress lines of the long phases: "
          "fractal classes and instances, volumes, warm-up, training steps and validation (phase, count, rate, "
          "elapsed time, ETA); 0 prints none. On a terminal one line is updated in place instead."),
  KEY_FLT(bound_lp_timeout, OUR, 120, positive, "> 0 seconds", NULL,
          "bound: 1: time limit for writing the dependency-aware MILP bound_deps.lp (quadratic in the tasks of a "
          "step); past it the file is not written (the bounds are reported all the same)."),
  KEY_STR(export_graph, OUR, "", NULL, "a directory path, or \"\" (off)", NULL,
          "A directory: the first training step after warm-up is recorded as its task graph, written there as "
          "graph.json (tasks, data accesses, predecessors, handles) and graph.dot (docs/tracing.md)."),
  KEY_INT(spatial_ranks, OUR, 1, ge1, ">= 1, dividing the mpirun rank count", NULL,
          "Ranks sharing one volume under mpirun: its depth slabs are split over them (StarPU-MPI owners; halo "
          "planes, GroupNorm, loss and Dice sums exchanged, exact). Ranks = replicas x spatial_ranks; at most the "
          "bottleneck edge. The depth-only shorthand of dc_num_shards [n,1,1] (set one of the two)."),
  KEY_FLT(max_memory_gib, OUR, 0, ge0f, ">= 0", NULL,
          "`benchmark`: memory one rank may use, in GiB; 0 = the machine's available memory (MemAvailable of "
          "/proc/meminfo, else MemTotal, else sysconf physical pages). The run prints its memory plan before any work "
          "and refuses (exit 2), naming the setting that would fit, when the plan exceeds this."),
  /* ---- derived ---- */
  KEY_INT(unet_layers, DER, 4, NULL, "derived", NULL, "problem_scale - unet_bottleneck_dim"),
  KEY_INT(vol_size, DER, 128, NULL, "derived", NULL, "2^problem_scale"),
  KEY_INT(point_num, DER, 8192, NULL, "derived", NULL, "int(vol_size^3 / 256)"),
};
const int sf_nkeys = (int)(sizeof sf_keys / sizeof sf_keys[0]);

int sf_key_find(const char *name)
{
  for (int k = 0; k < sf_nkeys; k++)
    if (!strcmp(sf_keys[k].name, name)) return k;
  return -1;
}

/* ---- keys of older upstream versions (spec §1.2, §1.3, §13) ------------------------------------ */
static const sf_old_key old_keys[] = {
  {"batch_size", "local_batch_size", "samples per data-parallel replica per step"},
  {"learning_rate", "starting_learning_rate",
   "the initial rate of the cosine warm-restart schedule; add disable_scheduler: 1 to keep it constant, as the "
   "old learning_rate was"},
  {"warmup_epochs", "warmup_batches", "warm-up now counts steps and is rolled back afterwards"},
  {"num_shards", "dc_num_shards", "3 integers, one shard count per sharded dim"},
  {"shard_dim", "dc_shard_dims", "3 distinct tensor dims in {2, 3, 4}"},
  {"ce_weight_num_samples", "ce_weight_sample_fraction", "a fraction of the training masks, in (0, 1]"},
  {"dataset_num_shards", "dc_num_shards", "the dataset is sharded as training is"},
  {"dataset_shard_dims", "dc_shard_dims", "the dataset is sharded as training is"},
};

const sf_old_key *sf_old_key_find(const char *name)
{
  for (size_t i = 0; i < sizeof old_keys / sizeof old_keys[0]; i++)
    if (!strcmp(old_keys[i].name, name)) return &old_keys[i];
  return NULL;
}

void sf_old_key_message(const sf_old_key *o, const char *value, char *buf, size_t n)
{
  char val[300] = "";
  if (value) snprintf(val, sizeof val, " (value '%s')", value);
  snprintf(buf, n, "key '%s'%s is from older ScaFFold versions and no longer read: use '%s' instead (%s)", o->name,
           val, o->use, o->why);
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
static int edit_distance(const char *a, const char *b)
{
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 64 || lb > 64) return 99;
  int d[65][65];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int cost = a[i - 1] != b[j - 1];
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[la][lb];
}

const char *sf_key_suggest(const char *name)
{
  const char *best = NULL;
  int bd = 3;
  for (int k = 0; k < sf_nkeys; k++) {
    int dist = edit_distance(name, sf_keys[k].name);
    if (dist < bd) bd = dist, best = sf_keys[k].name;
  }
  return best;
}

const char *sf_key_group_title(sf_key_group g)
{
  switch (g) {
  case SF_KG_EXTERNAL: return "External / user-facing (upstream)";
  case SF_KG_PROBLEM: return "External problem specification (upstream)";
  case SF_KG_LR: return "External learning-rate specification (upstream)";
  case SF_KG_INTERNAL: return "Internal / dev use only (upstream)";
  case SF_KG_AUX: return "Accepted by upstream but not in its YAML";
  case SF_KG_OURS: return "Ours (ScaFFold-StarPU only)";
  case SF_KG_DERIVED: return "Derived (recomputed from other keys)";
  default: return "?";
  }
}

const char *sf_key_type_name(sf_key_type t)
{
  switch (t) {
  case SF_KT_INT: return "int";
  case SF_KT_FLOAT: return "float";
  case SF_KT_BOOL: return "flag";
  case SF_KT_STRING: return "string";
  case SF_KT_INT3: return "3 ints";
  }
  return "?";
}
