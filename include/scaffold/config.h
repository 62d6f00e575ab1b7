/* Benchmark configuration: every upstream key (spec §1.3) with its default, plus our own keys
 * (docs/architecture.md §4). Precedence: defaults < `-c` YAML file < `--set key=value` overrides.
 * Every error (unknown key, wrong type, out-of-range value, list where a scalar is expected,
 * malformed YAML, missing file, ...) names the file and line, the key, the value and what was
 * expected, and exits with status 2 (SF_EXIT_USAGE). */
#ifndef SF_CONFIG_H
#define SF_CONFIG_H

#include <stdio.h>

typedef enum { SF_ORIGIN_DEFAULT = 0, SF_ORIGIN_FILE, SF_ORIGIN_OVERRIDE } sf_origin;

/* trace: fxt = our trace plus StarPU's FxT trace (paje.trace, dag.dot, tasks.rec ...: docs/tracing.md). */
#define SF_TRACE_FXT 2

typedef struct sf_config {
  /* ---- upstream: external / user-facing ---- */
  char *base_run_dir;               /* "benchmark_runs" */
  char *dataset_dir;                /* "datasets" */
  char *fract_base_dir;             /* "fractals" */
  long seed;                        /* 42 */
  long dataloader_num_workers;      /* 1 (accepted; loading is a StarPU task) */
  long dc_num_shards[3];            /* [1,1,1] */
  long dc_shard_dims[3];            /* [2,3,4] */
  long checkpoint_interval;         /* -1 */
  /* ---- upstream: problem ---- */
  long n_categories;                /* 5 */
  long n_instances_used_per_fractal;/* 145 */
  long problem_scale;               /* 7 */
  long unet_bottleneck_dim;         /* 3 */
  double target_dice;               /* 0.95 */
  /* ---- upstream: learning rate ---- */
  long local_batch_size;            /* 1 */
  char *optimizer;                  /* "ADAM" | "SGD" | anything else = RMSprop */
  double starting_learning_rate;    /* 0.001 */
  double min_learning_rate;         /* 0.0001 */
  long T_0;                         /* 10 */
  long T_mult;                      /* 2 */
  long disable_scheduler;           /* 0 */
  /* ---- upstream: internal / dev ---- */
  double variance_threshold;        /* 0.15 */
  long n_fracts_per_vol;            /* 3 */
  double val_split;                 /* 30 (percent, in (0,100)) */
  long epochs;                      /* -1 = until target_dice */
  long more_determinism;            /* 0 */
  long datagen_from_scratch;        /* 0 */
  long train_from_scratch;          /* 1 */
  long torch_amp;                   /* 1: bf16 convolutions on CPU (AVX512_BF16/AMX) and CUDA workers */
  char *framework;                  /* "torch" (accepted for compatibility) */
  char *checkpoint_dir;             /* "checkpoints" */
  long loss_freq;                   /* 1 (accepted, unused, as upstream) */
  double normalize;                 /* 1 */
  long group_norm_groups;           /* 8 */
  long warmup_batches;              /* 64 */
  long activation_checkpointing;    /* 0 */
  double ce_weight_sample_fraction; /* 0.1 */
  long dataset_reuse_enforce_commit_id; /* 0 */
  char *job_name;                   /* "benchmark" */
  long async_save;                  /* 0 */
  long dist;                        /* 1; must be true if present */
  long scale;                       /* 1; nothing else is valid */
  long datagen_batch_size;          /* 10000 (generate_fractals --datagen-batch-size) */
  /* ---- ours (docs/architecture.md §4) ---- */
  long unet_base_channels;          /* 64, as upstream */
  char *scheduler;                  /* "" = StarPU's default (STARPU_SCHED or lws) */
  char *runtime;                    /* "starpu" (default), "openmp", "sequential" (scaffold/runtime.h) */
  long ncpu;                        /* -1 = StarPU's choice */
  long ncuda;                       /* -1 = StarPU's choice (0 on a CPU-only StarPU) */
  long nopencl;                     /* 0 */
  long worker_nice;                 /* -1 = auto (5, 0 under mpirun): nice increment of the CPU worker threads */
  long slabs;                       /* 0 = automatic depth-slab count per layer */
  long trace;                       /* 0; 1; SF_TRACE_FXT (trace: fxt, an FxT-enabled StarPU) */
  long bound;                       /* 0 (docs/scheduling.md) */
  double bound_lp_timeout;          /* 120 s */
  char *export_graph;               /* "" = off (docs/tracing.md) */
  long spatial_ranks;               /* 1 */
  double max_memory_gib;            /* 0 = the machine's available memory */
  double progress_interval;         /* 30 s: progress lines off a terminal; 0 = none */
  /* ---- derived (recomputed by sf_config_finalize) ---- */
  long unet_layers;                 /* problem_scale - unet_bottleneck_dim */
  long vol_size;                    /* 2^problem_scale */
  long point_num;                   /* vol_size^3 / 256 */

  /* provenance: the file that was loaded, and per-key origin/line (indexed by key table order) */
  char *source_file;
  void *meta;                       /* private to src/config/config.c */
} sf_config;

/* Fill every key with its default. */
void sf_config_init(sf_config *c);
/* Load a YAML mapping of key: scalar. Dies (status 2) with file:line, key, value and expectation. */
void sf_config_load_file(sf_config *c, const char *path);
/* Apply "key=value" (value parsed as a YAML scalar or flow list). Dies (status 2) on error. */
void sf_config_apply_override(sf_config *c, const char *key_eq_value);
/* Cross-key checks (e.g. problem_scale >= unet_bottleneck_dim + 1) and derived keys. Dies (status 2). */
void sf_config_finalize(sf_config *c);
/* The spatial shard grid per volume along depth, rows, columns (grid[0..2]): dc_num_shards placed by
 * dc_shard_dims (2 = D, 3 = H, 4 = W), with spatial_ranks (the depth-only shorthand) multiplying the
 * depth count; and the ranks per volume, their product. */
void sf_config_shard_grid(const sf_config *c, int grid[3]);
long sf_config_spatial(const sf_config *c);
/* Refuses (exit 2, before any work) every key set on the command line that `cmd` does not read: reads is the
 * NULL-terminated list of the keys it honours, instead says where the others take effect. With verbose, names
 * the keys the config file sets that the command does not read. */
void sf_config_refuse_unread(const sf_config *c, const char *cmd, const char *const *reads, const char *instead,
                             int verbose);
/* Refusals made outside the config module (what a command can run, checked before any work), worded
 * like the loader's own: "FILE:LINE: key 'K' has value 'V': <fmt...>" (or "override --set k=v: ...",
 * or "key 'K' has its default value 'V': ..."). sf_config_refuse2 names two keys with their values
 * and origins, starting at the one that was set. Both exit with status 2. */
__attribute__((noreturn, format(printf, 3, 4))) void sf_config_refuse(const sf_config *c, const char *key,
                                                                      const char *fmt, ...);
__attribute__((noreturn, format(printf, 4, 5))) void sf_config_refuse2(const sf_config *c, const char *a,
                                                                       const char *b, const char *fmt, ...);
/* Print the effective configuration, one key per line with its origin (default, file:line, override). */
void sf_config_print(const sf_config *c, FILE *out);
/* Write the effective configuration as YAML that sf_config_load_file reads back identically.
 * Written atomically (temporary file, then rename). Returns 0 or -1 with errno set. */
int sf_config_write_yaml(const sf_config *c, const char *path);
/* Write only the keys whose origin is an override, as YAML (upstream's overrides.yaml). */
int sf_config_write_overrides_yaml(const sf_config *c, const char *path);
void sf_config_free(sf_config *c);

/* The common CLI options of config-driven subcommands: -c FILE, --set key=value (repeatable),
 * -v. Parses argv[first..], fills c (defaults < file < overrides), finalizes it, and returns the
 * index of the first unparsed argument. Unknown options die with status 2. `extra` may be NULL;
 * otherwise it is called for each option that this parser does not know, and returns the number
 * of arguments it consumed (0 = unknown). */
typedef int (*sf_cli_extra_fn)(void *ctx, int argc, char **argv, int i);
int sf_config_from_cli(sf_config *c, int argc, char **argv, int first, int *verbose,
                       sf_cli_extra_fn extra, void *ctx);

/* ---- added by the config module: introspection, comparison, help and docs -------------------- */
/* Notes on sf_config_from_cli: `-c` is optional (defaults alone are a valid configuration; check
 * c->source_file if a command requires one) and repeatable (later files override earlier ones,
 * c->source_file is the first); parsing stops at the first argument that is not an option, or at
 * "--" (not consumed), whose index it returns. With -v it prints the effective configuration to
 * stdout. -h/--help is offered to `extra` first (so a command can print its own usage and then
 * sf_config_print_cli_help); otherwise it prints sf_config_print_cli_help and exits 0. */
void sf_config_print_cli_help(FILE *out);
/* Classifies argv[i] as sf_config_from_cli would, without reading or applying anything: the number
 * of arguments the option occupies (1 + its separate values), 0 when it is not one of the shared
 * config options, -1 when its values are missing. For --set, *set_kv receives the KEY=VALUE text
 * (else NULL). `scaffold rerun` checks a result file's recorded arguments with it. */
int sf_config_cli_option(int argc, char **argv, int i, const char **set_kv);

int sf_config_nkeys(void);
const char *sf_config_key_name(int i); /* table order; NULL when out of range */
int sf_config_key_index(const char *name); /* -1 when unknown */
/* Origin of a key (derived keys report SF_ORIGIN_DEFAULT); SF_ORIGIN_DEFAULT for an unknown key. */
sf_origin sf_config_origin_of(const sf_config *c, const char *key);
/* As printed by sf_config_print: "default", "FILE:LINE", "override --set k=v" (or
 * "override --flag v") or "derived". Malloc'ed; NULL for an unknown key. */
char *sf_config_origin_string(const sf_config *c, const char *key);
/* The value in YAML flow form (as sf_config_write_yaml writes it). Malloc'ed; NULL if unknown. */
char *sf_config_value_string(const sf_config *c, const char *key);
/* Number of keys whose values differ (doubles bitwise); each difference is printed to report
 * (may be NULL) as "key: A != B". */
int sf_config_compare(const sf_config *a, const sf_config *b, FILE *report);
/* The table of every key (meaning, type, default, allowed values, flag, ours or upstream) as
 * Markdown; docs/config.md embeds it between generated-block markers. Returns 0 or -1. */
int sf_config_write_markdown(FILE *out);

#endif
