/* The milabench-style measurement and scoring model (spec milabench.md, docs/architecture.md §8).
 *
 * Part 1 is what `scaffold benchmark` calls while it trains:
 *   sf_bench_opts  the harness options of `scaffold benchmark` (--max-count, --max-time, --out, ...);
 *   sf_ratelog     throughput in 0.5 s slices (samples/s and GFLOP/s), milarun's RateLogger
 *                  (scaffold/ratelog.h, src/util: training feeds it too);
 *   sf_result      the result JSON of one run, written atomically as
 *                  <name>[.J<job_id>][.FAIL].<UTC %Y%m%d-%H%M%S-%f>.json.
 * Part 2 is the harness side used by `scaffold jobs/run/rerun/report/summary` and the tests:
 * result collection and grouping, per-group statistics, the report table and its score.
 * docs/harness.md describes the commands and the JSON formats. */
#ifndef SF_BENCH_H
#define SF_BENCH_H

#include <cjson/cJSON.h>

#include "scaffold/json.h"
#include <stddef.h>
#include <stdio.h>

#include "scaffold/ratelog.h" /* sf_ratelog, sf_steady (src/util) */

/* ============================== Part 1: measurement API ================================== */

/* Harness options of `scaffold benchmark`. Typical use in the benchmark command:
 *   sf_bench_opts bo; sf_bench_opts_init(&bo);
 *   int first = sf_config_from_cli(&cfg, argc, argv, 1, &verbose, sf_bench_opts_parse, &bo);
 *   sf_result *res = sf_result_begin(&bo, argc, argv);
 *   sf_ratelog_set_max_time(&log, bo.max_time);
 *   ... train; stop when sf_ratelog_done(&log) ...
 *   sf_result_set_rates(res, "train", &log); sf_result_write(res, NULL); sf_result_free(res);
 * A benchmark with its own extra options chains: its sf_cli_extra_fn first tries
 * sf_bench_opts_parse and falls back to its own options when that returns 0. */
typedef struct sf_bench_opts {
  long long max_count;     /* --max-count N: stop after N samples (checked after each step); -1 = none */
  double max_time;         /* --max-time S: stop once the timed steps reach S seconds (checked after each
                            * step, like max_count; whichever comes first); 0 = none. A run stopped by it
                            * holds >= floor(S / sample_duration) rate slices on any machine. */
  double sample_duration;  /* --sample-duration S: slice length in seconds, default 0.5 */
  int datagen_only;        /* --datagen-only: measure dataset generation (volumes/s) as "train", then stop */
  char *out;               /* --out DIR (result directory) or FILE.json (exact path); NULL = no result file */
  char *experiment_name;   /* --experiment-name N: result "name"; default "scaffold.benchmark" */
  char *job_id;            /* --job-id J: "<run>.<device>"; NULL for stand-alone runs and reruns */
  cJSON *extra;            /* --extra JSON: an object merged into the result's top level (job, device,
                            * devices); NULL when absent */
} sf_bench_opts;

void sf_bench_opts_init(sf_bench_opts *o);
/* An sf_cli_extra_fn (config.h): ctx is an sf_bench_opts*. Consumes one harness option at argv[i]
 * (forms "--opt VALUE" and "--opt=VALUE") and returns how many arguments it used, or 0 when argv[i]
 * is not one of them. A bad value (not a positive integer, invalid JSON, ...) exits with status 2
 * naming the option, the value and what was expected. */
int sf_bench_opts_parse(void *ctx, int argc, char **argv, int i);
void sf_bench_opts_free(sf_bench_opts *o);
/* 1 if argv[i] is a harness option that identifies the run rather than the test (--out,
 * --experiment-name, --job-id, --extra); *nargs gets how many arguments it spans (1 or 2).
 * These are left out of the recorded call.argv, so that `scaffold rerun` reproduces only the test. */
int sf_bench_opt_is_identity(int argc, char **argv, int i, int *nargs);
/* 1 when name is a plain experiment name: letters, digits, '.', '_' and '-', not starting with '.',
 * at most 200 bytes (result files are named after it, so it must never reach outside OUT). */
int sf_bench_name_ok(const char *name);

/* 1 when a result file may record the environment variable name=value and `scaffold rerun` may
 * apply it again (src/bench/environ_policy.c); else 0 with the reason in why. */
int sf_environ_replayable(const char *name, const char *value, char *why, size_t n);

/* One result JSON. */
typedef struct sf_result sf_result;

/* Starts the "program" timer and records name, job_id, outdir, the --extra fields, call
 * {function: "scaffold benchmark", argv: argv[1..] without the identity options}, and the
 * environment subset (STARPU_*, OMP_*, OPENBLAS_*, SF_*, CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES).
 * argv[0] is the subcommand name. If the process exits (e.g. through sf_die) before
 * sf_result_write, an exit hook writes the result with success false and the exit status. */
sf_result *sf_result_begin(const sf_bench_opts *o, int argc, char **argv);
/* StarPU description strings, e.g. ("dmda", "2 CPU, 1 CUDA (CPU 0, CPU 1, CUDA 0)"). */
void sf_result_set_runtime(sf_result *r, const char *scheduler, const char *workers);
/* Copies a finished logger into timings[key] {start, end, wall_time, time, overhead,
 * sample_duration, count, gflop, rates, gflops_rates, metrics} and its metrics into "metrics".
 * The measured throughput must be under a key starting with "train" (the report uses those);
 * other phases (e.g. "datagen" during a training run) under other keys. Finishes the logger. */
void sf_result_set_rates(sf_result *r, const char *key, sf_ratelog *log);
void sf_result_set_metric(sf_result *r, const char *key, double value);
/* Convergence runs: time to solution (s, wall clock) and epochs. */
void sf_result_set_convergence(sf_result *r, double time_to_solution, long epochs);
void sf_result_set_number(sf_result *r, const char *key, double value);
void sf_result_set_string(sf_result *r, const char *key, const char *value);
/* Marks the run failed (success false) with the error text; the last call wins. */
__attribute__((format(printf, 2, 3))) void sf_result_fail(sf_result *r, const char *fmt, ...);
/* The top-level object, for fields not covered above (owned by r). */
cJSON *sf_result_json(sf_result *r);
/* `bound: 1`: adds the run directory's bound.json as "bound" with samples_per_s, the throughput its
 * tightest bound allows for steps of step_samples samples (null when uncalibrated). Returns 0, or -1
 * after a warning (file missing or unreadable). */
int sf_result_add_bound(sf_result *r, const char *bound_json, double step_samples);
/* Stops the program timer, adds hostname, machine (hwloc summary), peak_rss_mib, success/error,
 * metrics and timings, and writes the file atomically with 4-space indentation. With no --out
 * nothing is written. Only the first call writes. Returns 0, or -1 after printing the error.
 * *path_out (if non-NULL) gets the malloc'ed path written, or NULL. */
int sf_result_write(sf_result *r, char **path_out);
void sf_result_free(sf_result *r);

/* "<name>[.J<job_id>][.FAIL].<UTC %Y%m%d-%H%M%S-%f>.json" for the epoch time `when`. */
char *sf_result_filename(const char *name, const char *job_id, int success, double when);
/* Local time "YYYY-MM-DD HH:MM:SS.ffffff" of an epoch time (buf >= 32 bytes). */
void sf_format_local_time(double when, char *buf, size_t n);

/* ============================== Part 2: harness side ===================================== */

/* Helpers shared by the commands: JSON (scaffold/json.h, from the util layer), the machine description. */
/* A YAML file (libyaml) as JSON (scalars typed as YAML 1.1 core: null/bool/int/float/string).
 * On failure returns NULL and *err names file:line and the problem. */
cJSON *sf_yaml_load_json(const char *path, char **err);

/* hwloc: the cores this process may use, in logical order (first PU of each core). */
typedef struct {
  int ncores;
  int *pu_logical;   /* logical index of each core's first PU (STARPU_WORKERS_CPUID) */
  int *pu_os;        /* OS index of each core's first PU */
  int **core_pus_os; /* all PUs of each core (OS indexes), -1 terminated */
  int npackages, nnuma;
} sf_machine_cores;
void sf_machine_cores_get(sf_machine_cores *m);
void sf_machine_cores_free(sf_machine_cores *m);
/* {cpu_model, packages, numa_nodes, cores, pus, allowed_pus, l3_caches, l3_kib} */
cJSON *sf_machine_json(void);
/* 1 when CUDA workers can exist (a CUDA-enabled StarPU and an NVIDIA device); else 0 and why.
 * SF_HAVE_CUDA=0/1 in the environment overrides the detection. */
int sf_machine_has_cuda(char *why, size_t n);
/* The most CPU workers this StarPU build supports (STARPU_MAXCPUS; 4 in Debian's build). */
int sf_machine_max_cpu_workers(void);

/* Statistics {n, min, max, mean, std} with population std; NaN fields when n = 0. */
typedef struct {
  double n, min, max, mean, std;
} sf_stats;
void sf_stats_compute(sf_stats *s, const double *x, size_t n);

/* One group of results (spec §4 Steps A-B). */
typedef struct {
  char *name;
  long n, failures;
  sf_stats total, train, gflops, tts;  /* program time; steady samples/s; steady GFLOP/s; time to solution */
  size_t ndev;
  long *dev_ids;                       /* sorted device ids */
  sf_stats *per_device;
  double peak_memory;                  /* max peak_rss_mib over good runs (MiB) */
  sf_stats bound_rate;                 /* samples/s the lower bound allows (runs with `bound: 1`) */
  long short_runs;                     /* good runs' train timings with < SF_STEADY_MIN_SLICES rate slices:
                                        * no steady rate, left out of train/gflops/per_device, not failures */
  long short_slices;                   /* the most slices any of those had */
  cJSON *granularity;                  /* the good runs' "granularity" records pooled (sf_granularity_pool), or
                                        * NULL; "granularity" in a summary JSON */
} sf_group;

/* "too few samples (N < 3)" for a group with short runs (N = g->short_slices); "" when it has none. */
const char *sf_group_too_few(const sf_group *g, char *buf, size_t n);
/* What to do about it, for the notes under the report and in the summary JSON's perf_note. */
#define SF_TOO_FEW_FIX "a longer run: raise --max-time (or --max-count), or lower --sample-duration"
/* 1 when the group has good runs but none with a steady rate: its perf is "too few samples", not a
 * number and not a failure. */
int sf_group_unmeasured(const sf_group *g);

typedef struct {
  sf_group *g;
  size_t n;
  cJSON *machine;                      /* the first good result's machine record (+ hostname,
                                        * blas_core), or NULL; "_machine" in a summary JSON */
  cJSON *commits;                      /* the sorted distinct "commit" of every result (an array of
                                        * strings), or NULL when none records one; "_commits" */
  char *kernel_identity;               /* the first result's "kernel_identity" ("conv3d=1a2b3c4d ..."),
                                        * or NULL; "_kernel_identity" */
} sf_summary;

/* The one warning line (no newline) when BASE was measured on another commit or another machine
 * (CPU model or core count) than S, naming both; NULL when they match or neither records it.
 * base_label/label name the two sets. malloc'ed. */
char *sf_summary_identity_warning(const sf_summary *s, const char *label, const sf_summary *base,
                                  const char *base_label);

/* Step A+B on a results directory (walked recursively, every *.json). Files that do not parse, or
 * are not result objects, are reported on `diag` (file name and reason) and skipped. Results with
 * job_id null or sub_job true are left out. Returns the number of results used (0 = nothing to
 * report: the caller decides), or -1 if the directory cannot be read (message on diag). */
long sf_summary_from_dir(sf_summary *s, const char *dir, FILE *diag);
/* Reads a summary JSON (from sf_summary_to_json / `scaffold summary`). Returns 0 or -1 (*err set). */
int sf_summary_from_json(sf_summary *s, const cJSON *j, char **err);
/* A directory, or a summary JSON file. Returns the group count, or -1 after printing why. */
long sf_summary_load(sf_summary *s, const char *path, FILE *diag);
cJSON *sf_summary_to_json(const sf_summary *s);
const sf_group *sf_summary_find(const sf_summary *s, const char *name);
void sf_summary_free(sf_summary *s);
/* The group key of one result: name, or name.<device_count> for the progression scheme. */
char *sf_result_group_key(const cJSON *result);

/* ---- runtime granularity (src/bench/granularity.c; docs/runtimes.md "Granularity", docs/harness.md) ----------
 * Each result of `scaffold benchmark` has "granularity": {shape, runtime, workers, tasks_per_step, steps, step_s,
 * [first_step_only],
 * body_s_per_step (host executors; null under StarPU)}. A group pools its good runs' records: {shape, runtime,
 * workers, tasks_per_step, runs, step_s, body_s_per_step (medians over the runs), step_s_runs}; NULL when none
 * has one or they disagree on shape, runtime, workers or tasks. Takes `records` (an array; deleted). */
cJSON *sf_granularity_pool(cJSON *records);
/* A pooled record read back from a summary JSON: a copy when it has the pooled fields, else NULL */
cJSON *sf_granularity_check(const cJSON *pooled);
/* One point of an efficiency curve: mean task duration (us) and efficiency (1 = 100 %) */
typedef struct {
  double x_us, eff;
} sf_gran_pt;
/* METG(level) of a curve, as scripts/runtimes_sweep.py's metg(): on the points sorted by duration, the smallest
 * duration still at >= level (hi) and the next smaller one (lo) bracket the crossing, interpolated linearly in
 * log(duration). side 0: bracketed (metg_us); +1: above the sweep (no point reaches level; lo = the longest
 * tasks); -1: below the sweep (the shortest tasks still reach it; hi = that point, extrapolated_us = where a
 * constant cost per task c = d (1/e - 1) would put it: c level / (1 - level), NAN when e >= 1); 2: no point. */
typedef struct {
  int side;
  double metg_us, extrapolated_us;
  int has_hi, has_lo;
  sf_gran_pt hi, lo;
} sf_metg;
void sf_metg_compute(const sf_gran_pt *pts, size_t n, double level, sf_metg *m);
/* The METG cell: "0.213", or "above the sweep: even 0.2 us tasks stay below 50 %", "below the sweep: ..." */
void sf_metg_describe(const sf_metg *m, double level, char *buf, size_t n);
/* The curves of a summary: one series per runtime/workers ("openmp/2"), a point per group of a shape that has a
 * sequential-executor group (the reference: its task-body time per step; efficiency = reference / (workers x
 * step_s), duration = reference / tasks_per_step); series sorted by name, points by duration; each with its
 * METG(50 %). no_reference: groups left out for want of a sequential run of their shape. */
typedef struct {
  char series[48];
  size_t n;
  sf_gran_pt *pts;
  sf_metg metg;
} sf_gran_series;
typedef struct {
  sf_gran_series *s;
  size_t n;
  long no_reference;
} sf_granularity;
void sf_granularity_compute(const sf_summary *s, sf_granularity *out);
void sf_granularity_free(sf_granularity *g);
/* 1 when some series has two points or more: a curve (the report shows the section only then, so a profile
 * of one shape per runtime reports as before) */
int sf_granularity_curves(const sf_granularity *g);
/* The METG(50 %) table as text, when there are curves */
void sf_granularity_print_text(const sf_summary *s, FILE *out);

/* The report (spec §4 Steps C-D). Weights: a mapping "<group>: {weight: w}" or "<group>: w". */
typedef struct {
  char *name;
  double weight, n, fail, perf, perf_base, perf_ratio, std_pct, perf_adj, perf_base_adj,
      perf_ratio_adj;
  /* Successful runs with too few rate slices for a steady rate (sf_group short_runs/short_slices), of
   * the results and of the baseline; *_unmeasured: none of the group's good runs has one, so perf
   * (perf_base) is shown as "too few samples (N < 3)" and the figures derived from it as "-". */
  long short_runs, short_slices, base_short_runs, base_short_slices;
  int unmeasured, base_unmeasured;
} sf_report_row;

typedef struct {
  int penalize_variance;
  int has_weights, has_base, has_price;
  double price;
  sf_report_row *rows;
  size_t nrows;
  double failure_rate, score, score_base, ratio, rpp;
} sf_report;

typedef struct {
  char **names;
  double *w;
  size_t n;
} sf_weights;
/* Loads a weights file (YAML or JSON). Returns 0 or -1 after printing file:line and the problem. */
int sf_weights_load(sf_weights *w, const char *path);
void sf_weights_free(sf_weights *w);

/* Rows are the sorted union of the group names of s, base and w; base/w may be NULL. */
void sf_report_compute(sf_report *r, const sf_summary *s, const sf_summary *base, const sf_weights *w,
                       int penalize_variance, int has_price, double price);
void sf_report_print_text(const sf_report *r, const sf_summary *s, const char *title, int compare_devices,
                          FILE *out);
int sf_report_write_html(const sf_report *r, const sf_summary *s, const char *title, int compare_devices,
                         const char *path);
void sf_report_free(sf_report *r);

/* `scaffold compare A B` (compare.c): per test of either set, the steady samples/s of each side
 * (n, mean, population std), the ratio B/A and a verdict: within spread when
 * |mean_B - mean_A| <= std_A + std_B, else faster/slower; a side with a single run has no spread. */
typedef enum {
  SF_CMP_WITHIN = 0, SF_CMP_FASTER, SF_CMP_SLOWER, SF_CMP_SINGLE, SF_CMP_ONLY_A, SF_CMP_ONLY_B, SF_CMP_NO_DATA,
  SF_CMP_TOO_FEW /* a side whose runs succeeded but were too short for a steady rate (not a failure) */
} sf_compare_verdict;
typedef struct {
  const char *name; /* owned by the summaries */
  double na, perf_a, std_a, nb, perf_b, std_b, ratio;
  sf_compare_verdict verdict;
  long slices_a, slices_b; /* SF_CMP_TOO_FEW: the slices of that side's short runs, -1 when it has a perf */
} sf_compare_row;
sf_compare_verdict sf_compare_judge(double na, double ma, double sa, double nb, double mb, double sb);
const char *sf_compare_verdict_name(sf_compare_verdict v);
/* Rows sorted by name (malloc'ed; free it); returns the count. */
size_t sf_compare_rows(const sf_summary *a, const sf_summary *b, sf_compare_row **rows);
void sf_compare_print(const sf_compare_row *rows, size_t n, const char *label_a, const char *label_b, FILE *f);

/* A profile (configs/profiles/<suite>.yml): a mapping of test name -> entry; the "*" entry holds
 * defaults merged shallowly into each test (the test's own keys win). Entry fields: config, set,
 * args, partition_scheme {type: per-device|progression|normal, devices, min, max}, requires,
 * description. */
typedef enum { SF_PART_NORMAL = 0, SF_PART_PER_DEVICE, SF_PART_PROGRESSION } sf_part_type;

typedef struct {
  char *name;            /* test name; results are named <suite>.<name> */
  int line;              /* line of the entry in the profile */
  char *config;          /* resolved scaffold config path, or NULL */
  int config_line;
  char **set;            /* "key=value" overrides (--set) */
  size_t nset;
  char **args;           /* extra benchmark arguments */
  size_t nargs;
  sf_part_type part;
  int devices;           /* per-device: copies (0 = auto: max(packages, NUMA nodes)) */
  int min_workers, max_workers; /* progression: worker counts min..max (max 0 = all cores) */
  int requires_cuda;
  char *description;
  cJSON *job;            /* the merged entry as JSON, recorded in each result as "job" */
} sf_profile_test;

typedef struct {
  char *path, *suite;
  sf_profile_test *tests;
  size_t n;
} sf_profile;

/* Loads and validates a profile. Any error names file:line and exits with status 2. */
void sf_profile_load(sf_profile *p, const char *path);
void sf_profile_free(sf_profile *p);
const char *sf_part_name(sf_part_type t);

/* Formatting shared by the text and HTML renderings: the table's columns in milarun's order,
 * cell values and their Python-style formats, the Scores lines, the device-comparison matrix. */
typedef enum {
  SF_COL_WEIGHT = 0, SF_COL_N, SF_COL_FAIL, SF_COL_PERF, SF_COL_PERF_BASE, SF_COL_PERF_RATIO,
  SF_COL_STD_PCT, SF_COL_PERF_ADJ, SF_COL_PERF_BASE_ADJ, SF_COL_PERF_RATIO_ADJ, SF_NCOLS
} sf_report_col;
size_t sf_report_columns(const sf_report *r, sf_report_col *cols);
const char *sf_report_col_name(sf_report_col c);
double sf_report_cell(const sf_report_row *row, sf_report_col c);
void sf_report_fmt(sf_report_col c, double v, char *buf, size_t n);
/* A cell as the text and HTML tables show it: sf_report_fmt of the value, except "too few samples
 * (N < 3)" for the perf (perf_base) of an unmeasured group and "-" for the figures derived from it. */
void sf_report_cell_text(const sf_report_row *row, sf_report_col c, char *buf, size_t n);
/* The notes under the table (rows with too-few-samples runs, and the fix). Returns the count; *lines
 * gets malloc'ed strings, freed with sf_report_notes_free. */
size_t sf_report_notes(const sf_report *r, char ***lines);
void sf_report_notes_free(char **lines, size_t n);
void sf_report_fmt_pct0(double v, char *buf, size_t n);
/* Up to 8 "key: value" lines; klass[i] is the HTML class (PASS, FAIL, score, rpp) or NULL. */
void sf_report_score_lines(const sf_report *r, char keys[][32], char vals[][64], const char **klass, size_t *n);
/* Groups whose per-device ids are exactly 0..G-1 (G = the most devices of any group); cells
 * (row-major, rows x G) hold each device's measure ("mean", "min", "max") over the row's best.
 * rows/cells must have room for s->n rows. Returns the row count; *ndev gets G. */
size_t sf_report_device_matrix(const sf_summary *s, const char *measure, const sf_group **rows, double *cells,
                               size_t *ndev);

/* Child processes of the launchers (`run`, `jobs`): each child runs in its own process group;
 * SIGINT/SIGTERM/SIGHUP to the launcher are forwarded as SIGTERM to every tracked group, then
 * SIGKILL after a grace period (as milabench does, its GitHub #15: no dangling children). */
typedef struct {
  char *const *argv;      /* argv[0] is the program path; NULL-terminated */
  char *const *env;       /* "KEY=VALUE" to set (or "KEY" to unset) in the child; NULL-terminated or NULL */
  const int *cpus;        /* OS indexes of the PUs to bind the child to (-1 terminated), or NULL */
  const char *cgroup;     /* a cgroup v2 directory for the child to join, or NULL */
  int pipe_stderr;        /* 1: the child's stderr is read through a pipe (forwarded, tail kept) */
} sf_spawn_opts;

typedef struct {
  int pid;                /* also the process group id */
  int err_fd;             /* read end of the stderr pipe, or -1 */
  int done, status;       /* wait status once done */
  double maxrss_mib;      /* the child's peak RSS */
  char tail[8192];        /* last bytes of its stderr (pipe_stderr) */
  size_t tail_len;
} sf_proc;

/* Installs the forwarding signal handlers (once). */
void sf_launch_signals_install(void);
/* Seconds between the forwarded SIGTERM and SIGKILL (default 5). `jobs` waits longer than the
 * `run` processes it launches, so each `run` can still stop its own benchmark's group. */
void sf_launch_set_grace(double seconds);
/* The signal that interrupted the launcher, or 0. */
int sf_launch_interrupted(void);
/* Forks and execs; the child is tracked for signal forwarding. Returns 0 or -1 (errno). */
int sf_spawn(sf_proc *p, const sf_spawn_opts *o);
/* Waits for all n children (forwarding stderr pipes); after a child exits, what is left of its
 * process group is killed. Untracks them. */
void sf_wait_procs(sf_proc *p, size_t n);
/* "exited with status 3", "killed by signal 11 (Segmentation fault)" */
void sf_describe_status(int status, char *buf, size_t n);

/* Resolves a name given on the command line: an existing path as is, otherwise
 * <configs>/<subdir>/<name>.yml where <configs> is $SF_CONFIG_DIR or the source tree's configs/.
 * Returns a malloc'ed path (which may not exist). */
char *sf_resolve_config_path(const char *subdir, const char *name);
const char *sf_config_dir(void);

#endif
