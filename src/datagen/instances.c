/* Fractal instances as StarPU tasks (spec §3; task_farm.h): 145 weighted point clouds per class, a few
 * consecutive (category, instance) pairs per task. Each instance's points come from its own RNG
 * stream, with the attenuation retries f = 0.5, 0.25, 0.1 and the unweighted fallback, and are
 * stored as float32 (point_num, 3) .npy files, written atomically without fsync and flushed while
 * the tasks run and at the end (flush.h). A rerun keeps complete files, deletes and regenerates
 * truncated or corrupt ones, so an interrupted run resumes to identical bytes. */
#pragma GCC optimize("fp-contract=off") /* attenuated weights 1 + (w - 1)*f without FMA: same bytes on every machine */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/npy.h"
#include "scaffold/rng.h"
#include "scaffold/runtime.h"
#include "scaffold/signals.h"
#include "scaffold/trace.h"

#include "flush.h"
#include "task_farm.h"

#define SF_STREAM_INSTANCE 0x5346494e53544e43ULL /* "SFINSTNC" */

uint64_t sf_instance_stream(long cat, long inst)
{
  return sf_rng_mix(sf_rng_mix(SF_STREAM_INSTANCE, (uint64_t)cat), (uint64_t)inst);
}

static int all_finite(const double *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

/* One attempt into pd or pf; 1 if valid (no runaway, all finite). */
static int attempt(double *pd, float *pf, size_t N, const sf_fractal_class *cls, const double *w, uint64_t seed,
                   uint64_t stream)
{
  if (pd) return !sf_ifs_points(pd, N, cls->p, w, seed, stream) && all_finite(pd, 3 * N);
  int nonfinite;
  int runaway = sf_ifs_points_f32(pf, N, cls->p, w, seed, stream, &nonfinite);
  return !runaway && !nonfinite;
}

/* Spec §3.2 step 4: full weights, then 1 + (w - 1)*f for f = 0.5, 0.25, 0.1, then unweighted. */
static double instance_points(double *pd, float *pf, size_t N, const sf_fractal_class *cls, long cat, int inst,
                              uint64_t seed)
{
  static const double factors[] = {1.0, 0.5, 0.25, 0.1};
  const double(*W)[12] = sf_weights145();
  uint64_t stream = sf_instance_stream(cat, inst);
  for (size_t k = 0; k < sizeof factors / sizeof factors[0]; k++) {
    double w[12];
    for (int j = 0; j < 12; j++) w[j] = k == 0 ? W[inst][j] : 1.0 + (W[inst][j] - 1.0) * factors[k];
    if (attempt(pd, pf, N, cls, w, seed, stream)) return factors[k];
  }
  return attempt(pd, pf, N, cls, NULL, seed, stream) ? 0.0 : -1.0;
}

double sf_instance_points(double *pts, size_t N, const sf_fractal_class *cls, long cat, int inst, uint64_t seed)
{
  return instance_points(pts, NULL, N, cls, cat, inst, seed);
}

double sf_instance_points_f32(float *pts, size_t N, const sf_fractal_class *cls, long cat, int inst, uint64_t seed)
{
  return instance_points(NULL, pts, N, cls, cat, inst, seed);
}

/* ---- the task graph ------------------------------------------------------------------------- */

typedef struct {
  const sf_fractal_class *cls;
  long cat;
  int inst;
  size_t N;
  uint64_t seed;
  char *path;
  double factor;  /* weight attenuation used (1 = full weights, 0 = unweighted) */
  int status;     /* 0 ok, -1 failed (err), 1 skipped (SIGINT/SIGTERM before it started) */
  char err[384];
} inst_job;

static atomic_long g_done;

/* Instances per task: at most MAX_INSTANCES_PER_TASK, and few enough that every worker gets about
 * TASKS_PER_WORKER tasks. One task per instance made the submission the bottleneck when instances
 * are cheap (~50 us each at problem_scale 6: about what starpu_task_submit costs, so one worker
 * waited for tasks; docs/datagen-performance.md). */
#define MAX_INSTANCES_PER_TASK 8
#define TASKS_PER_WORKER 8

typedef struct {
  inst_job *jobs;
  int n;
} inst_batch;

static void instance_one(inst_job *j)
{
  if (sf_stop_requested()) { /* abandon the instances not started yet; the ones running finish */
    j->status = 1;
    atomic_fetch_add(&g_done, 1);
    return;
  }
  float *out = sf_malloc(j->N * 3 * sizeof(float), "instance points (float32)");
  j->factor = sf_instance_points_f32(out, j->N, j->cls, j->cat, j->inst, j->seed);
  if (j->factor < 0) {
    j->status = -1;
    snprintf(j->err, sizeof j->err,
             "category %ld instance %d: the point cloud runs away or is not finite even with the unweighted class", j->cat,
             j->inst);
  } else {
    size_t shape[2] = {j->N, 3};
    /* No per-file fsync (4-8 ms each here, far more than the points cost): syncfs passes while the
     * tasks run and one at the end make the library durable, and a rerun re-validates every file. */
    if (sf_npy_write_flags(j->path, SF_NPY_F32, 2, shape, out, SF_NPY_NO_FSYNC, j->err, sizeof j->err) != 0)
      j->status = -1;
  }
  free(out);
  atomic_fetch_add(&g_done, 1);
}

static void instance_run(void *arg)
{
  const inst_batch *b = arg;
  for (int i = 0; i < b->n; i++) instance_one(&b->jobs[i]);
}

static void instance_footprint(const void *arg, uint64_t key[2])
{
  const inst_batch *b = arg;
  key[0] = (uint64_t)b->jobs[0].N;
  key[1] = (uint64_t)b->n;
}

static sf_farm_kind instance_kind = {
    .name = "ifs_instance", .model = "sf_ifs_instance", .run = instance_run, .footprint = instance_footprint};

/* A reusable file: complete, float32, shape (N, 3). */
static int instance_file_ok(const char *path, size_t N)
{
  sf_npy h;
  if (sf_npy_read_header(path, &h, NULL, 0) != 0) return 0;
  return h.dtype == SF_NPY_F32 && h.ndim == 2 && h.shape[0] == N && h.shape[1] == 3;
}

void sf_generate_instances(const sf_config *c, sf_instance_stats *stats_out)
{
  sf_instance_stats st;
  memset(&st, 0, sizeof st);
  if (c->n_categories > 999999) sf_die(SF_EXIT_USAGE, "n_categories %ld exceeds the 6-digit class names", c->n_categories);
  double tr0 = sf_trace_now();
  sf_fractal_class *cls = sf_fractal_load_classes(c);
  size_t N = (size_t)c->point_num;
  long ncat = c->n_categories;
  st.total = ncat * SF_N_INSTANCES;
  char *root = sf_fractal_instance_dir(c);

  inst_job *jobs = sf_calloc((size_t)st.total, sizeof *jobs, "instance jobs");
  long njobs = 0;
  for (long cat = 0; cat < ncat; cat++) {
    char *dir = sf_fractal_class_instance_dir(c, (int)cat);
    if (sf_mkdir_p(dir) != 0) sf_die(SF_EXIT_FAILURE, "cannot create directory %s: %s", dir, strerror(errno));
    sf_datagen_sweep_tmp(dir);
    free(dir);
    for (int inst = 0; inst < SF_N_INSTANCES; inst++) {
      char *path = sf_fractal_instance_path(c, (int)cat, inst);
      if (sf_file_exists(path)) {
        if (instance_file_ok(path, N)) {
          st.reused++;
          free(path);
          continue;
        }
        if (unlink(path) != 0) sf_die(SF_EXIT_FAILURE, "cannot remove incomplete instance %s: %s", path, strerror(errno));
        st.removed++;
      }
      inst_job *j = &jobs[njobs++];
      j->cls = &cls[cat];
      j->cat = cat;
      j->inst = inst;
      j->N = N;
      j->seed = (uint64_t)c->seed;
      j->path = path;
    }
  }

  sf_trace_span("instances: load classes, scan files", "main", tr0, sf_trace_now()); /* trace: 1 */
  atomic_store(&g_done, 0);
  if (njobs) sf_trace_phase_begin("fractal instances"); /* trace: 1 (scaffold/trace.h); no-op otherwise */
  double t0 = sf_now();
  sf_progress prog;
  sf_progress_begin(&prog, "fractal instances", njobs);
  int nworkers = sf_runtime_nworkers();
  long per_task = njobs / ((long)(nworkers > 0 ? nworkers : 1) * TASKS_PER_WORKER);
  if (per_task > MAX_INSTANCES_PER_TASK) per_task = MAX_INSTANCES_PER_TASK;
  if (per_task < 1) per_task = 1;
  long ntasks = (njobs + per_task - 1) / per_task;
  inst_batch *batches = sf_calloc((size_t)ntasks + 1, sizeof *batches, "instance batches");
  sf_task_farm *farm = sf_farm_begin(&instance_kind);
  for (long t = 0; t < ntasks; t++) {
    batches[t].jobs = &jobs[t * per_task];
    batches[t].n = (int)(t + 1 < ntasks ? per_task : njobs - t * per_task);
    int ret = sf_farm_submit(farm, &batches[t]);
    if (ret != 0)
      sf_die(SF_EXIT_FAILURE, "submitting a fractal instance task failed: %s (is there a CPU worker?)", strerror(-ret));
  }
  /* While the workers write, this thread flushes what they have written so far (flush.h), so the
   * final flush has only the last files left: done once at the end, it was a serial tail of ~18% of
   * the phase with both workers idle (docs/datagen-performance.md). */
  if (sf_datagen_wait_flushing(root, &g_done, njobs, &prog) != 0)
    sf_warn("cannot flush %s to disk (syncfs): %s", root, strerror(errno));
  if (sf_farm_wait(farm) != 0) SF_ABORT("waiting for the fractal instance tasks failed");
  free(batches);
  st.seconds = sf_now() - t0;
  if (njobs) {
    sf_trace_phase_end();
    sf_trace_collect();
  }
  if (njobs) sf_progress_end(&prog, njobs);

  long failed = 0, skipped = 0;
  const char *first_err = NULL;
  for (long k = 0; k < njobs; k++) {
    if (jobs[k].status == 1) {
      skipped++;
      continue;
    }
    if (jobs[k].status != 0) {
      if (!failed) first_err = jobs[k].err;
      failed++;
      continue;
    }
    st.written++;
    if (jobs[k].factor == 0.0)
      st.unweighted++;
    else if (jobs[k].factor < 1.0)
      st.attenuated++;
  }
  if (failed) {
    char *pdir = sf_fractal_param_dir(c);
    sf_die(SF_EXIT_FAILURE, "%ld of %ld fractal instances failed; first: %s. The classes in %s should stay finite at "
           "np%ld (the search there tested them with this point count): if they were copied there or made by another "
           "version, delete %s and %s or set datagen_from_scratch: 1 to search them again; otherwise try another seed",
           failed, njobs, first_err, pdir, c->point_num, pdir, root);
  }

  if (skipped) {
    sf_info("fractal instances: interrupted by %s: %ld written this run (%ld reused), %ld not started, in %s; "
            "every file there is complete (a rerun writes the rest)",
            sf_signal_name(sf_stop_requested()), st.written, st.reused, skipped, root);
  } else if (njobs == 0) {
    sf_info("fractal instances: all %ld present in %s, nothing to do", st.total, root);
  } else {
    sf_info("fractal instances: %ld written (%ld reused, %ld incomplete removed) in %s, %.3f s, %.1f instances/s; "
            "attenuated weights %ld, unweighted fallback %ld",
            st.written, st.reused, st.removed, root, st.seconds,
            st.seconds > 0 ? (double)st.written / st.seconds : 0.0, st.attenuated, st.unweighted);
  }
  for (long k = 0; k < njobs; k++) free(jobs[k].path);
  free(jobs);
  free(cls);
  free(root);
  if (stats_out) *stats_out = st;
}
