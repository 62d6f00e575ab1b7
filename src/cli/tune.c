/* `scaffold tune`'s work (tune.h): one training step of the config lists the 3x3x3 convolution's call shapes
 * (the kernels record them); each shape's candidate variants are timed in turn in this thread, after the
 * runtime has stopped; the fastest becomes the record's entry for that shape. */
#include "tune.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "class_folder.h"
#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/fsutil.h"
#include "scaffold/kernel_tuning.h"
#include "scaffold/kernel_tuning_setup.h"
#include "scaffold/progress.h"
#include "scaffold/runtime.h"
#include "scaffold/steps.h"

#include <sf_git_commit.h> /* SF_GIT_COMMIT: generated (cmake/GitCommit.cmake) */

#define MAX_SHAPES 1024
#define ROUNDS 3 /* candidates take turns, so a slow moment of the machine hits all of them */

/* The shapes one step of c asks for */
static int list_shapes(const sf_config *c, sf_conv3d_shape *shapes, char *err, size_t errlen)
{
  char tmp[] = "/tmp/sf-tune.XXXXXX";
  if (!mkdtemp(tmp)) {
    snprintf(err, errlen, "cannot create a temporary folder: %s", strerror(errno));
    return -1;
  }
  sf_steps_opts so = {.warmup = 0, .steps = 1, .out_dir = tmp};
  sf_steps_result *r = sf_calloc(1, sizeof *r, "steps result");
  sf_conv3d_shapes_seen(shapes, 0, 1);
  sf_conv3d_shapes_record(1);
  int rc = sf_steps_run(c, &so, r, err, errlen);
  sf_conv3d_shapes_record(0);
  free(r);
  sf_remove_tree(tmp);
  if (rc) return -1;
  int n = sf_conv3d_shapes_seen(shapes, MAX_SHAPES, 1);
  return n < MAX_SHAPES ? n : MAX_SHAPES;
}

static const char *dir_name(sf_conv3d_direction d)
{
  static const char *const names[] = {"forward", "dX", "dW", "dW taps"};
  return names[d];
}

/* Times the candidates of s; returns the winner, *best its fastest call (s), *builtin the built-in choice's */
static sf_conv3d_variant tune_shape(const sf_conv3d_shape *s, const sf_conv3d_variant *cand, int nc, double budget_s,
                                    double *best, double *builtin)
{
  double t[8];
  for (int i = 0; i < nc; i++) t[i] = 1e30;
  for (int round = 0; round < ROUNDS; round++)
    for (int i = 0; i < nc; i++) {
      double x = sf_conv3d_time_variant(cand[i], s, budget_s / ROUNDS);
      if (x < t[i]) t[i] = x;
    }
  sf_conv3d_variant rule = sf_conv3d_choose(s->dir, s->bf16, s->nd, s->H, s->W, s->Cin, s->Cout);
  int w = 0;
  for (int i = 0; i < nc; i++) {
    if (t[i] < t[w]) w = i;
    if (cand[i] == rule) *builtin = t[i];
  }
  *best = t[w];
  return cand[w];
}

static void log_shape(FILE *f, const sf_conv3d_shape *s, sf_conv3d_variant v, double best, double builtin)
{
  sf_conv3d_variant rule = sf_conv3d_choose(s->dir, s->bf16, s->nd, s->H, s->W, s->Cin, s->Cout);
  fprintf(f, "tune: %s%s %dx%dx%d %d->%d: %s %.1f us (built-in rules: %s %.1f us)\n", dir_name(s->dir),
          s->bf16 ? " bf16" : "", s->nd, s->H, s->W, s->Cin, s->Cout, sf_conv3d_variant_name(v), best * 1e6,
          sf_conv3d_variant_name(rule), builtin * 1e6);
}

/* Entries of the old record for shapes not tuned now, then the new ones */
static void merge(sf_tuning_record *rec, const char *path, const sf_conv3d_tuned *fresh, const double *us, int n)
{
  sf_tuning_record old;
  char err[PATH_MAX + 256];
  int nold = 0;
  if (sf_file_exists(path)) {
    if (sf_tuning_record_read(path, &old, err, sizeof err) == 0) nold = old.n;
    else sf_warn("tune: %s; it is replaced", err);
  }
  rec->entries = sf_calloc((size_t)(nold + n + 1), sizeof *rec->entries, "tuning record");
  rec->best_us = sf_calloc((size_t)(nold + n + 1), sizeof *rec->best_us, "tuning record");
  for (int i = 0; i < nold; i++) {
    int replaced = 0;
    for (int j = 0; j < n && !replaced; j++) replaced = !memcmp(&old.entries[i].shape, &fresh[j].shape, sizeof fresh[j].shape);
    if (!replaced) rec->entries[rec->n] = old.entries[i], rec->best_us[rec->n++] = old.best_us[i];
  }
  for (int j = 0; j < n; j++) rec->entries[rec->n] = fresh[j], rec->best_us[rec->n++] = us[j];
  if (nold) sf_tuning_record_free(&old);
}

static int save(const char *path, const sf_conv3d_tuned *fresh, const double *us, int n, char *err, size_t errlen)
{
  char lock[PATH_MAX + 8];
  snprintf(lock, sizeof lock, "%s.lock", path);
  int fd = sf_lock_acquire(lock, "writing this tuning record");
  if (fd < 0) {
    snprintf(err, errlen, "cannot lock %s: %s", lock, strerror(errno));
    return -1;
  }
  sf_tuning_record rec = {0};
  merge(&rec, path, fresh, us, n);
  sf_class_utc_now(rec.date, sizeof rec.date);
  snprintf(rec.commit, sizeof rec.commit, "%s", SF_GIT_COMMIT[0] ? SF_GIT_COMMIT : "no-commit-id");
  sf_class_machine_line(rec.cpu, sizeof rec.cpu);
  snprintf(rec.kernel_set, sizeof rec.kernel_set, "%s", sf_cpu_isa_name(sf_cpu_isa_active()));
  int rc = sf_tuning_record_write(path, &rec, err, errlen);
  sf_tuning_record_free(&rec);
  sf_lock_release(fd);
  return rc;
}

int sf_steps_command_config(sf_config *c, int argc, char **argv, const char *cmd, sf_cli_extra_fn extra, void *ctx)
{
  sf_config_init(c);
  int verbose = 0;
  int next = sf_config_from_cli(c, argc, argv, 1, &verbose, extra, ctx);
  if (next < argc) sf_die(SF_EXIT_USAGE, "%s: unexpected argument '%s' (see --help)", cmd, argv[next]);
  char prog[64], why[512];
  snprintf(prog, sizeof prog, "scaffold %s", cmd);
  sf_config_refuse_unread(c, prog, sf_steps_config_keys,
                          "it measures the network's training step; the dataset, training-run, bound and output keys "
                          "take effect in `scaffold benchmark`", verbose);
  const char *bad_key = NULL;
  if (sf_runtime_check_config(c, &bad_key, why, sizeof why) != 0)
    sf_die(SF_EXIT_USAGE, "%s: config key '%s': %s", cmd, bad_key, why);
  return verbose;
}

int sf_tune_config(const sf_config *c, const char *record_path, const sf_tune_opts *o, sf_tune_summary *sum,
                   char *err, size_t errlen)
{
  memset(sum, 0, sizeof *sum);
  double t0 = sf_now();
  sf_conv3d_shape *shapes = sf_calloc(MAX_SHAPES, sizeof *shapes, "tuning shapes");
  int n = list_shapes(c, shapes, err, errlen);
  if (n < 0) return free(shapes), -1;
  sf_conv3d_tuned *fresh = sf_calloc((size_t)n + 1, sizeof *fresh, "tuning entries");
  double *us = sf_calloc((size_t)n + 1, sizeof *us, "tuning times");
  sf_progress p;
  sf_progress_begin(&p, "tune: call shapes", n);
  int kept = 0;
  for (int i = 0; i < n; i++) {
    sf_conv3d_variant cand[8];
    int nc = sf_conv3d_candidates(&shapes[i], cand, 8);
    if (nc > 1) { /* one candidate: nothing to choose */
      double best = 0, builtin = 0;
      sf_conv3d_variant v = tune_shape(&shapes[i], cand, nc, o->budget_s, &best, &builtin);
      fresh[kept] = (sf_conv3d_tuned){shapes[i], v};
      us[kept++] = best * 1e6;
      sum->builtin_us += builtin * 1e6;
      sum->tuned_us += best * 1e6;
      if (builtin > best) sum->differ++;
      if (o->log && o->verbose) log_shape(o->log, &shapes[i], v, best, builtin);
    }
    sf_progress_update(&p, i + 1);
  }
  sf_progress_end(&p, n);
  sum->shapes = n;
  sum->timed = kept;
  int rc = save(record_path, fresh, us, kept, err, errlen);
  sum->seconds = sf_now() - t0;
  free(shapes);
  free(fresh);
  free(us);
  return rc;
}
