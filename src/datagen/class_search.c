/* Fractal class search as a StarPU task graph (spec §2.5): rounds of candidate attempts sized by
 * sf_compute_round_attempts; each round is split into batch tasks (up to 64 attempts each) that
 * evaluate candidates into a per-attempt results array; after the round the main thread accepts
 * them in attempt order, saving each new class at the lowest free 6-digit index (exact duplicates
 * skipped, nothing overwritten) until n_categories exist, without an fsync each: one syncfs per
 * round makes them durable before the attempt counter is persisted in <param_dir>/.rng_attempt
 * (through .rng_attempt.pending, so a kill between the two resumes to the same files). The result
 * depends only on (seed, attempt, point_num), never on worker count or scheduler; point_num keys the
 * directory (scaffold/datagen.h). Callers serialise searches of one library (generate_fractals.c). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/runtime.h"
#include "scaffold/signals.h"
#include "scaffold/trace.h"

#include "flush.h"
#include "task_farm.h"

#define MAX_ATTEMPTS_PER_TASK 64

typedef struct {
  sf_fractal_class cls;
  double var[3];
  int verdict;
} class_result;

typedef struct {
  uint64_t seed;
  uint64_t first;   /* attempt index of res[0] */
  int n;            /* attempts in this batch */
  size_t N;         /* points per candidate */
  double normalize, threshold;
  class_result *res;
} class_batch;

static void class_batch_run(void *arg)
{
  const class_batch *b = arg;
  if (sf_stop_requested()) return; /* SIGINT/SIGTERM: the round is abandoned, see below */
  double *pts = sf_malloc(b->N * 3 * sizeof(double), "class candidate points");
  for (int i = 0; i < b->n; i++) {
    class_result *r = &b->res[i];
    uint64_t a = b->first + (uint64_t)i;
    sf_class_candidate(b->seed, a, &r->cls);
    if (!(isfinite(r->cls.p[0][12]) && isfinite(r->cls.p[1][12]))) { /* both determinants 0 */
      r->verdict = SF_IFS_INVALID;
      r->var[0] = r->var[1] = r->var[2] = NAN;
      continue;
    }
    int runaway = sf_ifs_points(pts, b->N, r->cls.p, NULL, b->seed, sf_class_point_stream(a));
    r->verdict = sf_ifs_check(pts, b->N, runaway, b->normalize, b->threshold, r->var);
  }
  free(pts);
}

static void class_batch_footprint(const void *arg, uint64_t key[2])
{
  const class_batch *b = arg;
  key[0] = (uint64_t)b->n;
  key[1] = (uint64_t)b->N;
}

static sf_farm_kind class_batch_kind = {
    .name = "ifs_class_batch", .model = "sf_ifs_class_batch", .run = class_batch_run,
    .footprint = class_batch_footprint};

/* ---- attempt counter ------------------------------------------------------------------------ */

static uint64_t read_attempt_counter(const char *path)
{
  if (!sf_file_exists(path)) return 0;
  char *text = sf_read_file(path, NULL);
  if (!text) sf_die(SF_EXIT_FAILURE, "cannot read %s: %s", path, strerror(errno));
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  while (*end == '\n' || *end == ' ' || *end == '\r') end++;
  if (end == text || *end || errno)
    sf_die(SF_EXIT_FAILURE, "%s: expected one non-negative integer (the next candidate attempt index), found '%.40s'",
           path, text);
  free(text);
  return (uint64_t)v;
}

static void write_attempt_counter(const char *path, uint64_t v)
{
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRIu64 "\n", v);
  if (sf_datagen_write_nosync(path, buf, (size_t)n) != 0)
    sf_die(SF_EXIT_FAILURE, "cannot write %s: %s", path, strerror(errno));
}

/* A round's end goes through <param_dir>/.rng_attempt.pending ("<next attempt> <classes after the
 * round>"), written before the round's classes; once they are saved and flushed, .rng_attempt gets
 * the new value and the pending file goes. A run killed in between leaves the pending file: the
 * rerun finishes the round's bookkeeping when every class of the round is there, else drops it and
 * repeats the round from the old counter (the classes it had saved are then exact duplicates,
 * skipped): the same library, counter included, as an uninterrupted run. */
static void write_pending(const char *path, uint64_t next, int classes_after)
{
  char buf[64];
  int n = snprintf(buf, sizeof buf, "%" PRIu64 " %d\n", next, classes_after);
  if (sf_datagen_write_nosync(path, buf, (size_t)n) != 0)
    sf_die(SF_EXIT_FAILURE, "cannot write %s: %s", path, strerror(errno));
}

static void resolve_pending(const char *pending, const char *counter, int classes_now)
{
  if (!sf_file_exists(pending)) return;
  char *text = sf_read_file(pending, NULL);
  unsigned long long next = 0;
  int after = 0;
  if (text && sscanf(text, "%llu %d", &next, &after) == 2 && classes_now >= after) {
    write_attempt_counter(counter, (uint64_t)next); /* the interrupted round had saved all its classes */
  } else if (!text || sscanf(text, "%llu %d", &next, &after) != 2) {
    sf_warn("ignoring %s: expected '<next attempt> <classes>', found '%.40s'", pending, text ? text : "");
  }
  free(text);
  if (unlink(pending) != 0 && errno != ENOENT) sf_die(SF_EXIT_FAILURE, "cannot remove %s: %s", pending, strerror(errno));
}

void sf_datagen_sweep_tmp(const char *dir)
{
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, ".tmp-", 5) != 0) continue;
    char *p = sf_path_join(dir, e->d_name);
    if (unlink(p) != 0 && errno != ENOENT) sf_warn("cannot remove stale temporary file %s: %s", p, strerror(errno));
    free(p);
  }
  closedir(d);
}

/* ---- the search ----------------------------------------------------------------------------- */

typedef struct {
  char *dir;
  int n;              /* classes present (6-digit names) */
  int cap;
  int *index;         /* their numeric indices */
  sf_fractal_class *cls;
} library;

static void library_add(library *L, int idx, const sf_fractal_class *c)
{
  if (L->n == L->cap) {
    L->cap = L->cap ? 2 * L->cap : 16;
    L->index = realloc(L->index, (size_t)L->cap * sizeof *L->index);
    L->cls = realloc(L->cls, (size_t)L->cap * sizeof *L->cls);
    if (!L->index || !L->cls) sf_die(SF_EXIT_FAILURE, "out of memory (class library)");
  }
  L->index[L->n] = idx;
  L->cls[L->n] = *c;
  L->n++;
}

static int library_has_duplicate(const library *L, const sf_fractal_class *c)
{
  for (int i = 0; i < L->n; i++)
    if (!memcmp(L->cls[i].p, c->p, sizeof c->p)) return 1;
  return 0;
}

static int library_lowest_free(const library *L)
{
  for (int idx = 0;; idx++) {
    int used = 0;
    for (int i = 0; i < L->n && !used; i++) used = L->index[i] == idx;
    if (!used) return idx;
  }
}

static void library_load(library *L, const char *dir)
{
  memset(L, 0, sizeof *L);
  L->dir = sf_strdup(dir);
  char **names;
  int n = sf_fractal_list_class_files(dir, &names);
  for (int i = 0; i < n; i++) {
    char *path = sf_path_join(dir, names[i]);
    char err[512];
    sf_fractal_class c;
    if (sf_fractal_class_load(path, &c, err, sizeof err) != 0)
      sf_die(SF_EXIT_FAILURE, "%s (delete the file, or set datagen_from_scratch: 1, to regenerate)", err);
    library_add(L, atoi(names[i]), &c);
    free(path);
  }
  sf_free_names(names, n);
}

static void library_free(library *L)
{
  free(L->dir);
  free(L->index);
  free(L->cls);
}

/* Class files directly in <root>/3DIFS_param: an older version's library, searched at whichever
 * problem scale came first and shared by all of them (another scale's instances could run away). */
static void warn_flat_classes(const sf_config *c, const char *dir)
{
  char *r = sf_fractal_root_dir(c), *flat = sf_path_join(r, "3DIFS_param");
  char **names;
  int n = sf_fractal_list_class_files(flat, &names);
  sf_free_names(names, n);
  if (n > 0)
    sf_warn("%d fractal class file(s) directly in %s come from an older version that shared one class library "
            "between problem scales; they are ignored (this point count's classes are in %s); delete them",
            n, flat, dir);
  free(flat);
  free(r);
}

static double pct(long a, long b) { return b > 0 ? 100.0 * (double)a / (double)b : 0.0; }

void sf_generate_classes(const sf_config *c, sf_class_search_stats *stats_out)
{
  sf_class_search_stats st;
  memset(&st, 0, sizeof st);
  if (c->n_categories < 1) sf_die(SF_EXIT_USAGE, "n_categories must be >= 1 (got %ld)", c->n_categories);
  if (c->datagen_batch_size < 1)
    sf_die(SF_EXIT_USAGE, "datagen_batch_size must be >= 1 (got %ld)", c->datagen_batch_size);
  if (c->point_num < 2) sf_die(SF_EXIT_USAGE, "point_num must be >= 2 (got %ld; check problem_scale)", c->point_num);
  if (c->n_categories > 999999) sf_die(SF_EXIT_USAGE, "n_categories %ld exceeds the 6-digit class names", c->n_categories);

  char *dir = sf_fractal_param_dir(c);
  if (sf_mkdir_p(dir) != 0) sf_die(SF_EXIT_FAILURE, "cannot create directory %s: %s", dir, strerror(errno));
  sf_datagen_sweep_tmp(dir);
  char *counter_path = sf_path_join(dir, ".rng_attempt"), *pending_path = sf_path_join(dir, ".rng_attempt.pending");

  warn_flat_classes(c, dir);
  library L;
  library_load(&L, dir);
  if (L.n == 0) {
    /* instances without their classes (removed by hand, or an older version's library, whose
     * classes were shared between scales) were made from other classes: not reusable */
    char *idir = sf_fractal_instance_dir(c);
    if (sf_dir_exists(idir)) {
      sf_info("fractal classes: none in %s, so the instances in %s were made from other classes: removing them",
              dir, idir);
      if (sf_remove_tree(idir) != 0) sf_die(SF_EXIT_FAILURE, "cannot remove %s: %s", idir, strerror(errno));
    }
    free(idir);
  }
  resolve_pending(pending_path, counter_path, L.n);
  st.existing = L.n;
  double t0 = sf_now();
  uint64_t attempt = read_attempt_counter(counter_path);
  st.first_attempt = (long)attempt;
  int nworkers = sf_runtime_nworkers();
  if (nworkers < 1) nworkers = 1;
  sf_progress prog;
  sf_progress_begin(&prog, "fractal classes", c->n_categories);
  int traced = L.n < c->n_categories;
  if (traced) sf_trace_phase_begin("fractal classes"); /* trace: 1 (scaffold/trace.h); no-op otherwise */

  while (L.n < c->n_categories) {
    long remaining = c->n_categories - L.n;
    long round = sf_compute_round_attempts(c->datagen_batch_size, remaining, st.accepted, st.attempts, 1);
    class_result *res = sf_calloc((size_t)round, sizeof *res, "class candidate results");
    long per_task = (round + 4L * nworkers - 1) / (4L * nworkers);
    if (per_task > MAX_ATTEMPTS_PER_TASK) per_task = MAX_ATTEMPTS_PER_TASK;
    if (per_task < 1) per_task = 1;
    long ntasks = (round + per_task - 1) / per_task;
    class_batch *batches = sf_calloc((size_t)ntasks, sizeof *batches, "class batches");
    sf_task_farm *farm = sf_farm_begin(&class_batch_kind);
    for (long t = 0; t < ntasks; t++) {
      class_batch *b = &batches[t];
      b->seed = (uint64_t)c->seed;
      b->first = attempt + (uint64_t)(t * per_task);
      b->n = (int)sf_min_sz((size_t)per_task, (size_t)(round - t * per_task));
      b->N = (size_t)c->point_num;
      b->normalize = c->normalize;
      b->threshold = c->variance_threshold;
      b->res = res + t * per_task;
      int ret = sf_farm_submit(farm, b);
      if (ret != 0) sf_die(SF_EXIT_FAILURE, "submitting a class batch task failed: %s (is there a CPU worker?)",
                           strerror(-ret));
    }
    if (sf_farm_wait(farm) != 0) SF_ABORT("waiting for the class batch tasks failed");
    sf_trace_collect();
    if (sf_stop_requested()) {
      /* Abandon the round: nothing of it is saved and the attempt counter stays, so a rerun
       * evaluates the same attempts and writes the same classes. */
      free(res);
      free(batches);
      sf_info("fractal classes: interrupted by %s; %d of %ld classes in %s, the round of attempts #%llu.. is "
              "abandoned (a rerun repeats it)", sf_signal_name(sf_stop_requested()), L.n, c->n_categories, dir,
              (unsigned long long)attempt);
      break;
    }

    /* accept in attempt order (in memory), then the pending counter, the classes, one flush for
     * them (an fsync each was most of the serial time between two rounds) and the counter */
    long *save_at = sf_calloc((size_t)round, sizeof *save_at, "class saves"), nsave = 0;
    int *save_idx = sf_calloc((size_t)round, sizeof *save_idx, "class saves");
    for (long i = 0; i < round; i++) {
      st.attempts++;
      switch (res[i].verdict) {
      case SF_IFS_INVALID: st.invalid++; break;
      case SF_IFS_VARIANCE: st.variance_fail++; break;
      case SF_IFS_RUNAWAY: st.runaway++; break;
      default: break;
      }
      if (res[i].verdict != SF_IFS_ACCEPT) continue;
      st.accepted++;
      if (L.n >= c->n_categories) continue;
      if (library_has_duplicate(&L, &res[i].cls)) {
        st.duplicates++;
        continue;
      }
      int idx = library_lowest_free(&L);
      library_add(&L, idx, &res[i].cls);
      save_at[nsave] = i;
      save_idx[nsave++] = idx;
    }
    attempt += (uint64_t)round;
    if (nsave) write_pending(pending_path, attempt, L.n);
    for (long k = 0; k < nsave; k++) {
      char name[32], err[512];
      snprintf(name, sizeof name, "%06d.csv", save_idx[k]);
      char *path = sf_path_join(dir, name);
      if (sf_fractal_class_save_flags(path, &res[save_at[k]].cls, SF_CLASS_NO_FSYNC, err, sizeof err) != 0)
        sf_die(SF_EXIT_FAILURE, "%s", err);
      free(path);
      st.saved++;
    }
    /* the classes reach the disk before the counter that says they exist */
    if (nsave && sf_datagen_syncfs(dir) != 0)
      sf_die(SF_EXIT_FAILURE, "cannot flush %s to disk (syncfs): %s", dir, strerror(errno));
    write_attempt_counter(counter_path, attempt);
    if (nsave && unlink(pending_path) != 0)
      sf_die(SF_EXIT_FAILURE, "cannot remove %s: %s", pending_path, strerror(errno));
    free(save_at);
    free(save_idx);
    free(res);
    free(batches);
    sf_progress_update(&prog, L.n);
  }
  st.seconds = sf_now() - t0;
  if (traced) sf_trace_phase_end();
  if (st.attempts) sf_progress_end(&prog, L.n);

  if (st.attempts == 0) {
    sf_info("fractal classes: %ld present in %s (n_categories %ld), no search needed", st.existing, dir,
            c->n_categories);
  } else {
    sf_info("fractal classes: %ld new (%ld already present) in %s after %ld attempts (#%ld..#%ld), %.3f s, "
            "%.0f attempts/s",
            st.saved, st.existing, dir, st.attempts, st.first_attempt, st.first_attempt + st.attempts - 1, st.seconds,
            st.seconds > 0 ? (double)st.attempts / st.seconds : 0.0);
    sf_info("fractal classes: accepted %ld (%.1f%%), duplicates %ld; rejected: invalid values %ld (%.1f%%), "
            "variance <= %g %ld (%.1f%%), runaway %ld (%.1f%%)",
            st.accepted, pct(st.accepted, st.attempts), st.duplicates, st.invalid, pct(st.invalid, st.attempts),
            c->variance_threshold, st.variance_fail, pct(st.variance_fail, st.attempts), st.runaway,
            pct(st.runaway, st.attempts));
  }
  library_free(&L);
  free(counter_path);
  free(pending_path);
  free(dir);
  if (stats_out) *stats_out = st;
}
