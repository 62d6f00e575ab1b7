/* The training step on StarPU CUDA workers (codelets/cuda_glue/, scaffold/codelets_cuda.h), two modes:
 *
 *   gpu_train check [--ps 4] [--base 8] [--steps 2] [--rtol 1e-4]
 *       The same training steps (synthetic samples of tests/graph, Adam, clipping) once on CPU workers
 *       only and once on one CUDA worker with no CPU worker, so every task of the step runs on the GPU;
 *       strict fp32 (torch_amp 0, SF_CUDA_MATH=fp32, engine per SF_CUDA_CONV, default auto). Gradients,
 *       Adam moments and per-step losses must agree within rtol relative to each array's largest value;
 *       the parameters' updates within 1e-3 lr per step wherever the CPU run's gradient was
 *       well-conditioned at every step (the golden step test's criterion, tests/common/golden.h: a
 *       tiny gradient whose sign differs moves a weight by about 2 lr in Adam's first step); and the
 *       CUDA run must have executed its tasks on the CUDA worker.
 *   gpu_train bench [--ps 6] [--base 64] [--ncpu -1] [--ncuda 1] [--nopencl 0] [--sched NAME]
 *                   [--math fp32|tf32|bf16] [--slabs 0] [--warmup 3] [--steps 10] [--max-seconds 90]
 *                   [--label NAME]
 *       Training steps on synthetic samples: prints each step's time and the tasks each kind of worker
 *       ran in it, then the median over the timed steps, samples/s (batch 1), the tasks of the timed
 *       steps per kind of worker, and one line "SFGPU {json}" for scripts (scripts/gpu-check).
 *       --ncpu 0 --ncuda 1 = CUDA only; --ncuda 0 runs without a GPU (CPU and, with --nopencl 1, an
 *       OpenCL worker: the CTests of the counting path). The executed tasks of every step must equal
 *       the tasks the graph submitted in it, or the bench fails. Warm-up steps also calibrate dmda's
 *       performance models (StarPU's STARPU_HOME, a temp dir unless set; lws records none); the
 *       warm-up is cut short after 60 % of --max-seconds, timing stops after --max-seconds once 3 steps
 *       are timed, and a warning says when the timed steps vary more than 2x (still calibrating).
 *
 * Exit status: 0 passed / done, 1 a check failed, 2 usage, 77 skipped (printed reason): CUDA workers
 * wanted but StarPU built without CUDA, the CUDA kernels not linked or no CUDA device visible; an
 * OpenCL worker wanted but no OpenCL in StarPU or no OpenCL device. */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "graph_testlib.h"
#include "scaffold/codelets_cuda.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/graph.h"
#include "scaffold/runtime.h"
#include "scaffold/tasks.h"
#include "testutil.h"

#if defined(STARPU_USE_CUDA) && defined(SF_HAVE_CUDA_CODELETS)
#include <cuda_runtime_api.h>
#define HAVE_CUDA_WORKERS 1
#endif

#define MAX_STEPS 256

typedef struct {
  const char *mode;
  int ps, base, steps, warmup, slabs;
  long ncpu, ncuda, nopencl;
  double rtol, max_seconds;
  const char *sched, *math, *label;
} opts;

static char *g_home;

static int usage(const char *msg)
{
  fprintf(stderr,
          "gpu_train: %s\nusage: gpu_train check [--ps N] [--base N] [--steps N] [--rtol X]\n"
          "       gpu_train bench [--ps N] [--base N] [--ncpu N] [--ncuda N] [--nopencl N] [--sched NAME]\n"
          "                       [--math fp32|tf32|bf16] [--slabs N] [--warmup N] [--steps N] [--max-seconds S]\n"
          "                       [--label NAME]\n",
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

/* 0 and a reason when StarPU cannot have an OpenCL worker here (a GPU, or a CPU device such as PoCL) */
static int opencl_available(char *why, size_t len)
{
#ifdef STARPU_USE_OPENCL
  cl_platform_id plat[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plat, &np) != CL_SUCCESS || np == 0) {
    snprintf(why, len, "no OpenCL platform (Debian: pocl-opencl-icd)");
    return 0;
  }
  if (np > 16) np = 16;
  for (cl_uint i = 0; i < np; i++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) == CL_SUCCESS && nd > 0) return 1;
  }
  snprintf(why, len, "no OpenCL device");
  return 0;
#else
  snprintf(why, len, "OpenCL workers wanted but StarPU was built without OpenCL");
  return 0;
#endif
}

static void start(sf_config *c, long ncpu, long ncuda, long nopencl, const char *sched, int torch_amp)
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
  c->nopencl = nopencl;
  c->torch_amp = torch_amp;
  sf_runtime_init(c);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) starpu_profiling_worker_get_info((int)w, NULL);
  char d[256], cd[256];
  printf("runtime: %s; %s\n", sf_runtime_describe(d, sizeof d), sf_runtime_cuda_describe(cd, sizeof cd));
  fflush(stdout);
}

typedef struct {
  long cpu, cuda, opencl;
} counts;

static long counts_total(const counts *k) { return k->cpu + k->cuda + k->opencl; }

static void counts_add(counts *acc, const counts *k)
{
  acc->cpu += k->cpu;
  acc->cuda += k->cuda;
  acc->opencl += k->opencl;
}

/* Tasks executed by each kind of worker since the previous call (or since start()): reading a
 * worker's profiling info resets its counters (starpu_profiling_worker_get_info), so each call
 * returns a new interval and intervals add up; they must never be subtracted. */
static counts take_counts(void)
{
  starpu_task_wait_for_all();
  counts k = {0, 0, 0};
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
    struct starpu_profiling_worker_info info;
    if (starpu_profiling_worker_get_info((int)w, &info) != 0) continue;
    enum starpu_worker_archtype t = starpu_worker_get_type((int)w);
    if (t == STARPU_CPU_WORKER) k.cpu += info.executed_tasks;
    else if (t == STARPU_CUDA_WORKER) k.cuda += info.executed_tasks;
    else if (t == STARPU_OPENCL_WORKER) k.opencl += info.executed_tasks;
  }
  return k;
}

/* " cpu N cuda N opencl N", the kinds of worker this run has */
static char *counts_str(const counts *k, char *buf, size_t len)
{
  size_t o = 0;
  buf[0] = '\0';
  if (starpu_cpu_worker_get_count() > 0) o += (size_t)snprintf(buf + o, len - o, " cpu %ld", k->cpu);
  if (o < len && starpu_cuda_worker_get_count() > 0) o += (size_t)snprintf(buf + o, len - o, " cuda %ld", k->cuda);
  if (o < len && starpu_opencl_worker_get_count() > 0) snprintf(buf + o, len - o, " opencl %ld", k->opencl);
  return buf;
}

typedef struct {
  const gt_problem *p;
  unsigned char *ill;
} ill_ctx;

/* After a step: marks the weights whose gradient is not well-conditioned. */
static void mark_ill(sf_graph *g, int step, void *ctx)
{
  const ill_ctx *c = ctx;
  (void)step;
  sf_graph_acquire_state(g, 0);
  sf_golden_mark_ill_conditioned(&c->p->u, sf_graph_grads(g), c->ill);
  sf_graph_release_state(g);
}

/* nsteps training steps through the task graph (gt_run_graph), sample s at step s; with ill
 * non-NULL, marks after every step the weights whose gradient is not well-conditioned
 * (sf_golden_mark_ill_conditioned); k receives the tasks executed per kind of worker. */
static void run_steps(const gt_problem *p, int nsteps, double lr, gt_result *r, unsigned char *ill, counts *k)
{
  ill_ctx c = {p, ill};
  gt_run_graph_hook(p, 0, 0, nsteps, lr, r, ill ? mark_ill : NULL, &c);
  *k = take_counts();
}

static void stop(sf_config *c)
{
  sf_runtime_shutdown();
  sf_config_free(c);
}

static int check(const opts *o)
{
  setenv("SF_CUDA_MATH", "fp32", 1); /* strict fp32 whatever the caller's environment says */
  const double lr = 1e-3;
  gt_problem p;
  gt_problem_init(&p, o->ps, o->base, 6, 8, 42);
  const size_t n = p.u.total_params;
  printf("check: ps %d base %d (%zu parameters), %d step(s), rtol %.0e, conv engine %s\n", o->ps, o->base, n, o->steps,
         o->rtol, getenv("SF_CUDA_CONV") ? getenv("SF_CUDA_CONV") : "auto");
  sf_config c;
  gt_result cpu, gpu;
  counts kc, kg;
  unsigned char *ill = sf_calloc(n, 1, "conditioning marks");

  double t0 = sf_now();
  start(&c, -1, 0, 0, NULL, 0);
  run_steps(&p, o->steps, lr, &cpu, ill, &kc);
  stop(&c);
  printf("CPU  run: %d slab(s), tasks cpu %ld cuda %ld, loss %.9g, %.2f s\n", cpu.nslabs, kc.cpu, kc.cuda,
         cpu.out[o->steps - 1][2], sf_now() - t0);

  t0 = sf_now();
  start(&c, 0, 1, 0, NULL, 0);
  run_steps(&p, o->steps, lr, &gpu, NULL, &kg);
  stop(&c);
  printf("CUDA run: %d slab(s), tasks cpu %ld cuda %ld, loss %.9g, %.2f s (steps:", gpu.nslabs, kg.cpu, kg.cuda,
         gpu.out[o->steps - 1][2], sf_now() - t0);
  for (int s = 0; s < o->steps; s++) printf(" %.3f", gpu.step_s[s]);
  printf(" s)\n");
  fflush(stdout);

  SF_CHECK(kg.cuda > 0 && kg.cpu == 0, "the CUDA run must execute every task on the CUDA worker: cpu %ld, cuda %ld",
           kg.cpu, kg.cuda);
  char name[160];
  const char *names[3] = {"grads", "m", "v"};
  const float *xg[3] = {gpu.grads, gpu.m, gpu.v}, *xc[3] = {cpu.grads, cpu.m, cpu.v};
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof name, "CUDA vs CPU (fp32): %s", names[i]);
    sf_check_close_f(name, xg[i], xc[i], n, o->rtol);
  }
  for (int s = 0; s < o->steps; s++) {
    snprintf(name, sizeof name, "CUDA vs CPU (fp32): step %d [ce, dice, loss]", s + 1);
    sf_check_close_d(name, gpu.out[s], cpu.out[s], 3, o->rtol);
  }
  size_t w = 0;
  double e = sf_max_rel_err_f(gpu.params, cpu.params, n, &w);
  printf("info CUDA vs CPU (fp32): params, all weights: max relative error %.3e at [%zu] (%.9g vs %.9g): not a "
         "criterion, see the update check\n",
         e, w, gpu.params[w], cpu.params[w]);
  snprintf(name, sizeof name, "CUDA vs CPU (fp32): params, Adam update over %d step(s)", o->steps);
  sf_golden_check_update(name, &p.u, p.params0, gpu.params, cpu.params, ill, lr, 1e-3 * o->steps);
  free(ill);
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
  start(&c, o->ncpu, o->ncuda, o->nopencl, o->sched, 1);
  char cudadesc[256], rtdesc[256], kb[96];
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
  /* the step's flops are known once a step has been submitted: printed after step 1 */
  printf("bench %s: ps %d (%d^3) base %d, %zu parameters, %d slab(s)\n", o->label, o->ps, G, o->base, n,
         sf_graph_nslabs(g));
  fflush(stdout);

  double times[MAX_STEPS], out[3], loss0 = 0, loss1 = 0, first = 0, t_begin = sf_now();
  int total = o->warmup + o->steps, done = 0, timed = 0, mismatches = 0;
  counts ktimed = {0, 0, 0}, kwarm = {0, 0, 0};
  long submitted_timed = 0;
  int warmup = o->warmup;
  (void)take_counts(); /* the graph's set-up tasks are not part of any step */
  for (int s = 0; s < total && s < MAX_STEPS; s++) {
    if (s < warmup && sf_now() - t_begin > 0.6 * o->max_seconds) {
      printf("  warm-up cut at %d step(s): 60 %% of --max-seconds %.0f used\n", s, o->max_seconds);
      warmup = s;
      total = s + o->steps;
    }
    double t0 = sf_now();
    sf_graph_train_step(g, x, lab, p.cw, 1e-3, s + 1, out);
    double dt = sf_now() - t0;
    long submitted = sf_tasks_count_counter(); /* reset by every step: this step's tasks */
    counts k = take_counts();
    if (counts_total(&k) != submitted) {
      mismatches++;
      fprintf(stderr, "FAIL bench %s: step %d: workers executed %ld task(s) (%s), the graph submitted %ld\n", o->label,
              s + 1, counts_total(&k), counts_str(&k, kb, sizeof kb), submitted);
    }
    if (s == 0) {
      first = dt;
      loss0 = out[2];
      printf("  per step: %ld tasks, %.1f GFLOP\n", submitted, sf_graph_step_flops(g) / 1e9);
    }
    loss1 = out[2];
    done++;
    printf("  step %d/%d %s: %.4f s  loss %.6f  tasks%s\n", s + 1, total, s < warmup ? "warm-up" : "timed", dt, out[2],
           counts_str(&k, kb, sizeof kb));
    fflush(stdout);
    if (s >= warmup) {
      times[timed++] = dt;
      counts_add(&ktimed, &k);
      submitted_timed += submitted;
    } else {
      counts_add(&kwarm, &k);
    }
    if (sf_now() - t_begin > o->max_seconds && timed >= 3 && s + 1 < total) {
      printf("  stopping: --max-seconds %.0f reached after %d step(s)\n", o->max_seconds, s + 1);
      break;
    }
  }
  double gflop = sf_graph_step_flops(g) / 1e9;
  sf_graph_destroy(g);
  sf_config_free(&gc);
  int cpu_workers = sf_runtime_ncpu_workers();
  stop(&c);

  int rc = mismatches ? 1 : 0;
  double med = 0, mn = 0, mx = 0;
  if (timed == 0) {
    fprintf(stderr, "bench %s: no timed step (warm-up took the whole --max-seconds)\n", o->label);
    rc = 1;
  } else {
    qsort(times, (size_t)timed, sizeof times[0], cmp_double);
    med = timed % 2 ? times[timed / 2] : 0.5 * (times[timed / 2 - 1] + times[timed / 2]);
    mn = times[0];
    mx = times[timed - 1];
  }
  printf("bench %s: median %.4f s over %d timed step(s) (min %.4f, max %.4f), %.2f samples/s, %.1f GFLOP/step; tasks "
         "in timed steps:%s (submitted %ld)\n",
         o->label, med, timed, mn, mx, med > 0 ? 1.0 / med : 0.0, gflop, counts_str(&ktimed, kb, sizeof kb),
         submitted_timed);
  if (timed > 0 && mx > 2 * med)
    printf("bench %s: WARNING: the timed steps vary more than 2x (max %.4f s, median %.4f s): under dmda the "
           "performance models may still be calibrating; run more warm-up steps or a calibration run first\n",
           o->label, mx, med);
  if (mismatches)
    fprintf(stderr, "FAIL bench %s: %d step(s) where the executed tasks differ from the submitted ones\n", o->label,
            mismatches);
  printf("SFGPU {\"label\": \"%s\", \"ps\": %d, \"base\": %d, \"params\": %zu, \"runtime\": \"%s\", \"cuda\": \"%s\", "
         "\"cpu_workers\": %d, \"warmup\": %d, \"timed_steps\": %d, \"median_step_s\": %.6f, \"min_step_s\": %.6f, "
         "\"max_step_s\": %.6f, \"samples_per_s\": %.4f, \"first_step_s\": %.4f, \"step_gflop\": %.3f, "
         "\"tasks_cpu\": %ld, \"tasks_cuda\": %ld, \"tasks_opencl\": %ld, \"tasks_submitted\": %ld, "
         "\"warmup_tasks_cpu\": %ld, \"warmup_tasks_cuda\": %ld, \"warmup_tasks_opencl\": %ld, \"loss_first\": %.6f, "
         "\"loss_last\": %.6f, \"steps_run\": %d, \"count_mismatches\": %d}\n",
         o->label, o->ps, o->base, n, rtdesc, cudadesc, cpu_workers, warmup, timed, med, mn, mx,
         med > 0 ? 1.0 / med : 0.0, first, gflop, ktimed.cpu, ktimed.cuda, ktimed.opencl, submitted_timed, kwarm.cpu,
         kwarm.cuda, kwarm.opencl, loss0, loss1, done, mismatches);
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
    else if (!strcmp(k, "--nopencl")) o->nopencl = atol(v);
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
      o->warmup < 0 || o->warmup + o->steps > MAX_STEPS || o->rtol <= 0 || o->max_seconds <= 0 || o->nopencl < 0)
    return usage("an option is out of range (ps 4..8, base >= 1, steps >= 1, warmup + steps <= 256, rtol > 0, "
                 "nopencl >= 0)");
  if (o->mode[0] == 'c' && (o->ncpu != -1 || o->ncuda != 1 || o->nopencl != 0 || o->sched || o->math || o->slabs))
    return usage("check takes --ps, --base, --steps and --rtol only");
  if (o->math && strcmp(o->math, "fp32") && strcmp(o->math, "tf32") && strcmp(o->math, "bf16"))
    return usage("--math takes fp32, tf32 or bf16");
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2 || (strcmp(argv[1], "check") && strcmp(argv[1], "bench"))) return usage("expected 'check' or 'bench'");
  opts o = {.mode = argv[1], .ps = 4, .base = 8, .steps = 2, .warmup = 3, .slabs = 0, .ncpu = -1, .ncuda = 1,
            .nopencl = 0, .rtol = 1e-4, .max_seconds = 90, .sched = NULL, .math = NULL, .label = "run"};
  if (!strcmp(o.mode, "bench")) {
    o.ps = 6;
    o.base = 64;
    o.steps = 10;
  }
  int rc = parse(&o, argc, argv);
  if (rc) return rc;
  char why[256];
  /* check always needs CUDA; bench only when CUDA workers are asked for (--ncuda -1: StarPU's choice) */
  if ((!strcmp(o.mode, "check") || o.ncuda > 0) && !cuda_available(why, sizeof why)) {
    printf("SKIPPED: %s\n", why);
    return 77;
  }
  if (o.nopencl > 0 && !opencl_available(why, sizeof why)) {
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
