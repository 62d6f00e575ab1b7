/* The training step on StarPU CUDA workers (codelets/cuda_glue/, scaffold/codelets_cuda.h), two modes:
 *
 *   gpu_train check [--ps 4] [--base 8] [--steps 2] [--rtol 1e-4]
 *       The same training steps (synthetic samples of tests/graph, Adam, clipping) once on CPU workers
 *       only and once on one CUDA worker with no CPU worker, so every task of the step runs on the GPU;
 *       strict fp32 (torch_amp 0, SF_CUDA_MATH=fp32, engine per SF_CUDA_CONV, default auto). Parameters,
 *       gradients, Adam moments and per-step losses must agree within rtol relative to each array's
 *       largest value, and the CUDA run must have executed its tasks on the CUDA worker.
 *   gpu_train bench [--ps 6] [--base 64] [--ncpu -1] [--ncuda 1] [--sched NAME] [--math fp32|tf32|bf16]
 *                   [--slabs 0] [--warmup 3] [--steps 10] [--max-seconds 90] [--label NAME]
 *       Training steps on synthetic samples: prints each step's time, then the median over the timed
 *       steps, samples/s (batch 1), the tasks each kind of worker ran, and one line
 *       "SFGPU {json}" for scripts (scripts/gpu-check). --ncpu 0 --ncuda 1 = CUDA only. Warm-up steps
 *       also calibrate dmda's performance models (StarPU's STARPU_HOME, a temp dir unless set); the
 *       warm-up is cut short after 60 % of --max-seconds, and timing stops after --max-seconds once 3
 *       steps are timed.
 *
 * Exit status: 0 passed / done, 1 a check failed, 2 usage, 77 skipped (printed reason): StarPU built
 * without CUDA, the CUDA kernels not linked, or no CUDA device visible. */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_testlib.h"
#include "scaffold/codelets_cuda.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/graph.h"
#include "scaffold/runtime.h"
#include "testutil.h"

#if defined(STARPU_USE_CUDA) && defined(SF_HAVE_CUDA_CODELETS)
#include <cuda_runtime_api.h>
#define HAVE_CUDA_WORKERS 1
#endif

#define MAX_STEPS 256

typedef struct {
  const char *mode;
  int ps, base, steps, warmup, slabs;
  long ncpu, ncuda;
  double rtol, max_seconds;
  const char *sched, *math, *label;
} opts;

static char *g_home;

static int usage(const char *msg)
{
  fprintf(stderr,
          "gpu_train: %s\nusage: gpu_train check [--ps N] [--base N] [--steps N] [--rtol X]\n"
          "       gpu_train bench [--ps N] [--base N] [--ncpu N] [--ncuda N] [--sched NAME] [--math fp32|tf32|bf16]\n"
          "                       [--slabs N] [--warmup N] [--steps N] [--max-seconds S] [--label NAME]\n",
          msg);
  return SF_EXIT_USAGE;
}

/* 0 and a reason when this build / machine cannot run CUDA workers */
static int cuda_available(char *why, size_t len)
{
#ifdef HAVE_CUDA_WORKERS
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(why, len, "no CUDA device (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
    return 0;
  }
  if (n <= 0) {
    snprintf(why, len, "no CUDA device visible");
    return 0;
  }
  return n;
#else
  sf_runtime_cuda_describe(why, len);
  return 0;
#endif
}

static void start(sf_config *c, long ncpu, long ncuda, const char *sched, int torch_amp)
{
  if (!getenv("STARPU_HOME")) {
    g_home = sf_test_tmpdir("gpu-train-starpu-home");
    setenv("STARPU_HOME", g_home, 1);
  }
  sf_config_init(c);
  if (sched && *sched) {
    free(c->scheduler);
    c->scheduler = sf_strdup(sched);
  }
  c->ncpu = ncpu;
  c->ncuda = ncuda;
  c->nopencl = 0;
  c->torch_amp = torch_amp;
  sf_runtime_init(c);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) starpu_profiling_worker_get_info((int)w, NULL);
  char d[256], cd[256];
  printf("runtime: %s; %s\n", sf_runtime_describe(d, sizeof d), sf_runtime_cuda_describe(cd, sizeof cd));
  fflush(stdout);
}

/* tasks executed since start() by CPU and by CUDA workers */
static void task_counts(long *cpu, long *cuda)
{
  starpu_task_wait_for_all();
  *cpu = *cuda = 0;
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
    struct starpu_profiling_worker_info info;
    if (starpu_profiling_worker_get_info((int)w, &info) != 0) continue;
    enum starpu_worker_archtype t = starpu_worker_get_type((int)w);
    if (t == STARPU_CPU_WORKER) *cpu += info.executed_tasks;
    else if (t == STARPU_CUDA_WORKER) *cuda += info.executed_tasks;
  }
}

static void stop(sf_config *c)
{
  sf_runtime_shutdown();
  sf_config_free(c);
}

static int check(const opts *o)
{
  setenv("SF_CUDA_MATH", "fp32", 1); /* strict fp32 whatever the caller's environment says */
  gt_problem p;
  gt_problem_init(&p, o->ps, o->base, 6, 8, 42);
  const size_t n = p.u.total_params;
  printf("check: ps %d base %d (%zu parameters), %d step(s), rtol %.0e, conv engine %s\n", o->ps, o->base, n, o->steps,
         o->rtol, getenv("SF_CUDA_CONV") ? getenv("SF_CUDA_CONV") : "auto");
  sf_config c;
  gt_result cpu, gpu;
  long tc, tg;

  double t0 = sf_now();
  start(&c, -1, 0, NULL, 0);
  gt_run_graph(&p, 0, 0, o->steps, 1e-3, &cpu);
  task_counts(&tc, &tg);
  stop(&c);
  printf("CPU  run: %d slab(s), tasks cpu %ld cuda %ld, loss %.9g, %.2f s\n", cpu.nslabs, tc, tg,
         cpu.out[o->steps - 1][2], sf_now() - t0);

  t0 = sf_now();
  start(&c, 0, 1, NULL, 0);
  gt_run_graph(&p, 0, 0, o->steps, 1e-3, &gpu);
  task_counts(&tc, &tg);
  stop(&c);
  printf("CUDA run: %d slab(s), tasks cpu %ld cuda %ld, loss %.9g, %.2f s (steps:", gpu.nslabs, tc, tg,
         gpu.out[o->steps - 1][2], sf_now() - t0);
  for (int s = 0; s < o->steps; s++) printf(" %.3f", gpu.step_s[s]);
  printf(" s)\n");
  fflush(stdout);

  SF_CHECK(tg > 0 && tc == 0, "the CUDA run must execute every task on the CUDA worker: cpu %ld, cuda %ld", tc, tg);
  gt_compare("CUDA vs CPU (fp32)", &gpu, &cpu, n, o->steps, o->rtol);
  gt_result_free(&cpu);
  gt_result_free(&gpu);
  gt_problem_free(&p);
  return sf_test_end();
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int bench(const opts *o)
{
  if (o->math) setenv("SF_CUDA_MATH", o->math, 1);
  gt_problem p;
  gt_problem_init(&p, o->ps, o->base, 6, 8, 42);
  const size_t n = p.u.total_params;
  sf_config c;
  start(&c, o->ncpu, o->ncuda, o->sched, 1);
  char cudadesc[256], rtdesc[256];
  sf_runtime_cuda_describe(cudadesc, sizeof cudadesc);
  sf_runtime_describe(rtdesc, sizeof rtdesc);

  float *params = sf_malloc(n * sizeof(float), "parameters");
  memcpy(params, p.params0, n * sizeof(float));
  sf_config gc;
  sf_config_init(&gc);
  gc.slabs = o->slabs;
  char err[512];
  sf_graph *g = sf_graph_create(&p.u, &gc, params, err, sizeof err);
  if (!g) sf_die(SF_EXIT_USAGE, "sf_graph_create: %s", err);
  const int G = p.u.edge[0];
  float *x = sf_malloc(p.nvox * 3 * sizeof(float), "sample");
  uint16_t *lab = sf_malloc(p.nvox * sizeof(uint16_t), "labels");
  gt_sample(&p, 0, x, lab);
  printf("bench %s: ps %d (%d^3) base %d, %zu parameters, %d slab(s), %.1f GFLOP/step\n", o->label, o->ps, G, o->base, n,
         sf_graph_nslabs(g), sf_graph_step_flops(g) / 1e9);
  fflush(stdout);

  double times[MAX_STEPS], out[3], loss0 = 0, loss1 = 0, first = 0, t_begin = sf_now();
  int total = o->warmup + o->steps, done = 0, timed = 0;
  long tc0 = 0, tg0 = 0;
  int warmup = o->warmup;
  for (int s = 0; s < total && s < MAX_STEPS; s++) {
    if (s < warmup && sf_now() - t_begin > 0.6 * o->max_seconds) {
      printf("  warm-up cut at %d step(s): 60 %% of --max-seconds %.0f used\n", s, o->max_seconds);
      warmup = s;
      total = s + o->steps;
    }
    if (s == warmup) task_counts(&tc0, &tg0);
    double t0 = sf_now();
    sf_graph_train_step(g, x, lab, p.cw, 1e-3, s + 1, out);
    double dt = sf_now() - t0;
    if (s == 0) {
      first = dt;
      loss0 = out[2];
    }
    loss1 = out[2];
    done++;
    printf("  step %d/%d %s: %.4f s  loss %.6f\n", s + 1, total, s < warmup ? "warm-up" : "timed", dt, out[2]);
    fflush(stdout);
    if (s >= warmup) times[timed++] = dt;
    if (sf_now() - t_begin > o->max_seconds && timed >= 3 && s + 1 < total) {
      printf("  stopping: --max-seconds %.0f reached after %d step(s)\n", o->max_seconds, s + 1);
      break;
    }
  }
  long tc, tg;
  task_counts(&tc, &tg);
  double gflop = sf_graph_step_flops(g) / 1e9;
  sf_graph_destroy(g);
  sf_config_free(&gc);
  int cpu_workers = sf_runtime_ncpu_workers();
  stop(&c);

  int rc = 0;
  double med = 0, mn = 0;
  if (timed == 0) {
    fprintf(stderr, "bench %s: no timed step (warm-up took the whole --max-seconds)\n", o->label);
    rc = 1;
  } else {
    qsort(times, (size_t)timed, sizeof times[0], cmp_double);
    med = timed % 2 ? times[timed / 2] : 0.5 * (times[timed / 2 - 1] + times[timed / 2]);
    mn = times[0];
  }
  printf("bench %s: median %.4f s over %d timed step(s) (min %.4f), %.2f samples/s; tasks in timed steps: cpu %ld, "
         "cuda %ld\n",
         o->label, med, timed, mn, med > 0 ? 1.0 / med : 0.0, tc - tc0, tg - tg0);
  printf("SFGPU {\"label\": \"%s\", \"ps\": %d, \"base\": %d, \"params\": %zu, \"runtime\": \"%s\", \"cuda\": \"%s\", "
         "\"cpu_workers\": %d, \"warmup\": %d, \"timed_steps\": %d, \"median_step_s\": %.6f, \"min_step_s\": %.6f, "
         "\"samples_per_s\": %.4f, \"first_step_s\": %.4f, \"step_gflop\": %.3f, \"tasks_cpu\": %ld, "
         "\"tasks_cuda\": %ld, \"loss_first\": %.6f, \"loss_last\": %.6f, \"steps_run\": %d}\n",
         o->label, o->ps, o->base, n, rtdesc, cudadesc, cpu_workers, warmup, timed, med, mn,
         med > 0 ? 1.0 / med : 0.0, first, gflop, tc - tc0, tg - tg0, loss0, loss1, done);
  fflush(stdout);
  free(x);
  free(lab);
  free(params);
  gt_problem_free(&p);
  return rc;
}

static int parse(opts *o, int argc, char **argv)
{
  for (int i = 2; i < argc; i++) {
    const char *k = argv[i];
    if (i + 1 >= argc) return usage("missing value");
    const char *v = argv[++i];
    if (!strcmp(k, "--ps")) o->ps = atoi(v);
    else if (!strcmp(k, "--base")) o->base = atoi(v);
    else if (!strcmp(k, "--steps")) o->steps = atoi(v);
    else if (!strcmp(k, "--warmup")) o->warmup = atoi(v);
    else if (!strcmp(k, "--slabs")) o->slabs = atoi(v);
    else if (!strcmp(k, "--ncpu")) o->ncpu = atol(v);
    else if (!strcmp(k, "--ncuda")) o->ncuda = atol(v);
    else if (!strcmp(k, "--rtol")) o->rtol = atof(v);
    else if (!strcmp(k, "--max-seconds")) o->max_seconds = atof(v);
    else if (!strcmp(k, "--sched")) o->sched = v;
    else if (!strcmp(k, "--math")) o->math = v;
    else if (!strcmp(k, "--label")) o->label = v;
    else {
      char m[160];
      snprintf(m, sizeof m, "unknown option '%s'", k);
      return usage(m);
    }
  }
  if (o->ps < 4 || o->ps > 8 || o->base < 1 || o->steps < 1 || o->steps > (o->mode[0] == 'c' ? GT_MAX_STEPS : MAX_STEPS) ||
      o->warmup < 0 || o->warmup + o->steps > MAX_STEPS || o->rtol <= 0 || o->max_seconds <= 0)
    return usage("an option is out of range (ps 4..8, base >= 1, steps >= 1, warmup + steps <= 256, rtol > 0)");
  if (o->math && strcmp(o->math, "fp32") && strcmp(o->math, "tf32") && strcmp(o->math, "bf16"))
    return usage("--math takes fp32, tf32 or bf16");
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2 || (strcmp(argv[1], "check") && strcmp(argv[1], "bench"))) return usage("expected 'check' or 'bench'");
  opts o = {.mode = argv[1], .ps = 4, .base = 8, .steps = 2, .warmup = 3, .slabs = 0, .ncpu = -1, .ncuda = 1,
            .rtol = 1e-4, .max_seconds = 90, .sched = NULL, .math = NULL, .label = "run"};
  if (!strcmp(o.mode, "bench")) {
    o.ps = 6;
    o.base = 64;
    o.steps = 10;
  }
  int rc = parse(&o, argc, argv);
  if (rc) return rc;
  char why[256];
  if (!cuda_available(why, sizeof why)) {
    printf("SKIPPED: %s\n", why);
    return 77;
  }
  rc = !strcmp(o.mode, "check") ? check(&o) : bench(&o);
  if (g_home) {
    sf_rm_rf(g_home);
    free(g_home);
  }
  return rc;
}
