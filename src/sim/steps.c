/* Timed training steps of a config's task graph on synthetic samples (scaffold/steps.h): builds the U-Net
 * and the graph from the config, runs warm-up + timed steps (one optimizer step on a local batch each),
 * traces the timed ones for the worker and bus statistics, and shuts the runtime down. The same code
 * runs for real (`scaffold steps`) and under StarPU's SimGrid mode (`scaffold-sim`). */
#include "scaffold/steps.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/kernel_tuning.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph.h"
#include "scaffold/model.h"
#include "scaffold/rng.h"
#include "scaffold/runtime.h"
#include "scaffold/tasks.h"

/* Sample i of edge G: uniform input in [0, 1), 3 channels; labels 0 except three boxes of edge G/4..G/2
 * with foreground classes 1..K-1 (K >= 2; with K = 1 everything is background). */
static void synthetic_sample(int G, int K, uint64_t seed, int i, float *x, uint16_t *lab)
{
  size_t nvox = (size_t)G * G * G;
  sf_rng r;
  sf_rng_seed(&r, seed, (uint64_t)i);
  sf_rng_fill_uniform(x, nvox * 3, 0.0f, 1.0f, &r);
  memset(lab, 0, nvox * sizeof *lab);
  for (int b = 0; b < 3 && K > 1; b++) {
    int cls = 1 + (int)sf_rng_below(&r, (uint64_t)(K - 1));
    int e = G / 4 + (int)sf_rng_below(&r, (uint64_t)(G / 4 + 1));
    if (e < 1) e = 1;
    int z0 = (int)sf_rng_below(&r, (uint64_t)(G - e + 1)), y0 = (int)sf_rng_below(&r, (uint64_t)(G - e + 1));
    int x0 = (int)sf_rng_below(&r, (uint64_t)(G - e + 1));
    for (int z = z0; z < z0 + e; z++)
      for (int y = y0; y < y0 + e; y++)
        for (int xx = x0; xx < x0 + e; xx++) lab[((size_t)z * G + y) * G + xx] = (uint16_t)cls;
  }
}

static double thread_cpu_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void summarise_times(sf_steps_result *r, int n)
{
  double s[SF_STEPS_MAX];
  memcpy(s, r->step_s, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, cmp_double);
  r->median_s = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  r->min_s = s[0];
  r->max_s = s[n - 1];
  r->samples_per_s = r->median_s > 0 ? (double)r->batch * r->replicas / r->median_s : 0; /* every replica's */
}

typedef struct {
  int B;
  float **x;
  uint16_t **lab;
  float *cw;
} batch_bufs;

static void batch_alloc(batch_bufs *b, const sf_unet *u, int B)
{
  size_t nvox = (size_t)u->edge[0] * u->edge[0] * u->edge[0];
  b->B = B;
  b->x = sf_calloc((size_t)B, sizeof *b->x, "sample pointers");
  b->lab = sf_calloc((size_t)B, sizeof *b->lab, "label pointers");
  for (int i = 0; i < B; i++) {
    b->x[i] = sf_malloc(nvox * 3 * sizeof(float), "synthetic sample");
    b->lab[i] = sf_malloc(nvox * sizeof(uint16_t), "synthetic labels");
  }
  b->cw = sf_malloc((size_t)u->n_classes * sizeof(float), "class weights");
  for (int k = 0; k < u->n_classes; k++) b->cw[k] = 1.0f;
}

static void batch_free(batch_bufs *b)
{
  for (int i = 0; i < b->B; i++) {
    free(b->x[i]);
    free(b->lab[i]);
  }
  free(b->x);
  free(b->lab);
  free(b->cw);
}

/* The bytes this rank sent to each rank over the timed steps (from the counts at their start), per step. */
static void per_step_sent(double *sent0, int steps, sf_steps_result *r)
{
  int n = sf_dist_size();
  double *now = sf_calloc((size_t)n, sizeof *now, "bytes sent");
  sf_dist_comm_sent(now);
  for (int q = 0; q < n && q < SF_STEPS_MAX_RANKS; q++) r->sent_per_step[q] = (now[q] - sent0[q]) / steps;
  free(now);
  free(sent0);
}

/* The warm-up and timed steps; the timed ones traced into o->out_dir. */
static int run_steps(sf_graph *g, const sf_unet *u, const sf_config *c, const sf_steps_opts *o, sf_steps_result *r,
                     char *err, size_t errlen)
{
  batch_bufs b;
  batch_alloc(&b, u, r->batch);
  double out[3], cpu0 = 0, *sent0 = sf_calloc((size_t)sf_dist_size(), sizeof *sent0, "bytes sent");
  int rc = 0, traced = sf_runtime_which() == SF_RT_STARPU; /* the statistics come from StarPU's profiling */
  for (int s = 0; s < o->warmup + o->steps && rc == 0; s++) {
    for (int i = 0; i < b.B && !o->simulated; i++) /* simulated: no codelet reads them; untouched pages cost nothing */
      synthetic_sample(u->edge[0], u->n_classes, (uint64_t)c->seed, s * b.B + i, b.x[i], b.lab[i]);
    if (s == o->warmup && traced && sf_trace_begin(o->out_dir, err, errlen) != 0) rc = -1;
    if (rc) break;
    if (s == o->warmup) {
      sf_dist_comm_sent(sent0);
      cpu0 = thread_cpu_s();
      sf_kernel_choices_reset(); /* the timed steps' variants */
      sf_conv3d_tuning_counts_reset();
    }
    double t0 = sf_now();
    sf_graph_train_batch(g, b.B, (const float *const *)b.x, (const uint16_t *const *)b.lab, b.cw, 1e-4, s + 1, out);
    double dt = sf_now() - t0; /* the batch call waits for its tasks */
    if (s >= o->warmup) {
      r->step_s[s - o->warmup] = dt;
      r->tasks_per_step = sf_tasks_count_counter();
      if (traced) sf_trace_collect();
    }
  }
  if (!o->simulated) r->main_cpu_s = (thread_cpu_s() - cpu0) / o->steps;
  per_step_sent(sent0, o->steps, r);
  if (rc == 0 && traced && sf_trace_end(err, errlen) != 0) rc = -1;
  batch_free(&b);
  return rc;
}

int sf_steps_run(const sf_config *c, const sf_steps_opts *o, sf_steps_result *r, char *err, size_t errlen)
{
  memset(r, 0, sizeof *r);
  if (o->steps < 1 || o->steps > SF_STEPS_MAX || o->warmup < 0) {
    snprintf(err, errlen, "steps must be in [1, %d] and warmup >= 0 (got %d and %d)", SF_STEPS_MAX, o->steps,
             o->warmup);
    return -1;
  }
  if (sf_mkdir_p(o->out_dir) != 0) {
    snprintf(err, errlen, "cannot create the output directory '%s'", o->out_dir);
    return -1;
  }
  sf_unet u;
  if (sf_unet_build(&u, (int)c->problem_scale, (int)c->unet_bottleneck_dim, (int)c->unet_base_channels,
                    (int)c->n_categories + 1, (int)c->group_norm_groups, err, errlen) != 0)
    return -1;
  float *params = sf_aligned_alloc(u.total_params * sizeof(float), "parameters");
  /* simulated: no codelet reads the parameters, and pages never written cost nothing (written, every rank
   * of a many-rank simulation would hold them: 4 bytes a parameter, 344 MiB a rank at ps 7, base 64) */
  if (!o->simulated) sf_unet_init_params(&u, params, (uint64_t)c->seed);
  sf_runtime_init(c);
  int on_starpu = sf_runtime_which() == SF_RT_STARPU;
  r->batch = (int)c->local_batch_size;
  r->rank = sf_dist_rank();
  r->ranks = sf_dist_size();
  r->replicas = sf_dist_replicas();
  r->shards = sf_dist_spatial();
  int rc = -1;
  sf_graph *g = sf_graph_create(&u, c, params, err, errlen);
  if (g) {
    sf_runtime_describe(r->runtime, sizeof r->runtime);
    r->nslabs = sf_graph_nslabs(g);
    rc = run_steps(g, &u, c, o, r, err, errlen);
    r->step_gflop = sf_graph_step_flops(g) * 1e-9;
    sf_graph_destroy(g);
  }
  sf_runtime_shutdown();
  if (rc == 0 && sf_runtime_fxt_finish(o->out_dir, err, errlen) != 0) rc = -1; /* trace: fxt */
  free(params);
  sf_unet_free(&u);
  if (!c->trace) { /* the statistics were the point; the files stay only with trace: 1 */
    static const char *const files[] = {"trace.json", "worker_stats.json", "worker_stats.txt"};
    for (int i = 0; i < 3; i++) {
      char *p = sf_path_join(o->out_dir, files[i]);
      unlink(p);
      free(p);
    }
  }
  if (rc != 0) return -1;
  if (on_starpu) sf_trace_last_summary(&r->stats); /* else no StarPU profiling: no per-worker figures */
  summarise_times(r, o->steps);
  return 0;
}
