/* Training-step benchmark of the task graph for scripts/bench-train and scripts/bench-runtimes (not a
 * CTest): builds the U-Net, runs warm-up + timed sf_graph_train_step calls on synthetic samples
 * (tests/graph's gt_sample) and prints one line "SFBENCH {json}": median step time, samples/s,
 * effective GFLOP/s (3 x the model's forward conv flops / median step), peak RSS of the process
 * (getrusage), the CPU kernel set and the OpenBLAS kernel in use (also on stderr at start, with a
 * warning when OpenBLAS runs generic kernels). --trace DIR traces the timed steps only
 * (scaffold/trace.h: DIR/trace.json, DIR/worker_stats.{json,txt}). --export-graph DIR writes the first
 * timed step's task graph (scaffold/graph_record.h: DIR/graph.json, DIR/graph.dot). --bound DIR
 * records the timed steps for the area bound, then runs one more step recorded with dependencies
 * (scaffold/bound.h: "bound:" lines, DIR/bound.json, bound.dot, bound_deps.lp; docs/scheduling.md).
 * --runtime starpu|openmp|sequential picks the task runtime (scaffold/runtime.h; --sched and --bound
 * are StarPU's only); the line then also carries the tasks per step and, under openmp / sequential,
 * the summed kernel (task run) seconds per timed step (scaffold/host_exec.h), for scripts/bench-runtimes.
 *   bench_train_step [--ps 5] [--base 8] [--groups 8] [--bottleneck 3] [--ncpu 2] [--sched lws] [--slabs 0]
 *                    [--warmup 2] [--steps 5] [--determinism 0] [--trace DIR] [--export-graph DIR]
 *                    [--bound DIR] [--bound-lp-timeout 120] [--runtime starpu] [--amp 0] [--worker-nice N]
 * --amp 1 sets torch_amp: 1 (bf16 3x3x3 convolutions on the CPU's bf16 engine, scaffold/cpu_isa.h; refused
 * without one); the default 0 keeps the step fp32 whatever the CPU, so figures compare across machines.
 * The JSON's "precision" says which ("fp32", or "bf16 <engine>"). --worker-nice N sets config worker_nice
 * (default: the config's), the nice increment of the worker threads; "runtime" in the JSON reports it.
 * --groups G: GroupNorm groups (must divide --base), so that the smallest channel counts build too;
 * --bottleneck B: unet_bottleneck_dim (problem scale - B U-Net levels, at least 1), for the smallest
 * problems. The
 * JSON's "submit_s_per_step" is the application thread's time inside sf_submit per timed step (every
 * runtime), "spawn_s_per_step" the OpenMP submitter thread's time creating tasks (-1 elsewhere); with
 * the SF_HW_BLOCKS switch the graph splits rows and columns as well (scripts/bench-runtimes' sweep). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "graph_testlib.h"
#include "scaffold/bound.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph.h"
#include "scaffold/graph_record.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/host_exec.h"
#include "scaffold/ops.h"

#include "../../src/kernels/conv3d/conv3d_variants.h"
#include "scaffold/runtime.h"
#include "scaffold/tasks.h"
#include "scaffold/trace.h"

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int int_arg(const char *key, const char *v, int lo, int hi)
{
  char *end = NULL;
  long x = v ? strtol(v, &end, 10) : 0;
  if (!v || *end || x < lo || x > hi)
    sf_die(SF_EXIT_USAGE, "bench_train_step: %s expects an integer in [%d, %d], got '%s'", key, lo, hi, v ? v : "");
  return (int)x;
}

/* --bound: the timed steps were the area window; one more step is recorded with dependencies. */
static void run_bound_step(sf_graph *g, gt_problem *p, float *x, uint16_t *lab, int step, const double *t, int timed,
                           const char *dir, double lp_timeout)
{
  char err[512];
  sf_bound_stop();
  double area_ms = sf_bound_area_ms(), area_s = 0, out[3];
  for (int i = 0; i < timed; i++) area_s += t[i];
  gt_sample(p, step % 4, x, lab);
  sf_bound_start(1, 1); /* StarPU's DAG too: the tests compare ours with it */
  double t0 = sf_now();
  sf_graph_train_step(g, x, lab, p->cw, 1e-3, step + 1, out);
  double dt = sf_now() - t0;
  sf_bound_stop();
  sf_bound_deps d;
  if (sf_bound_deps_compute(dir, lp_timeout, &d, err, sizeof err) != 0 ||
      sf_bound_report(dir, timed, area_s, area_ms, &d, dt, err, sizeof err) != 0)
    sf_die(SF_EXIT_FAILURE, "bound: %s", err);
}

int main(int argc, char **argv)
{
  int ps = 5, base = 8, groups = 8, bneck = 3, ncpu = 2, slabs = 0, warm = 2, timed = 5, det = 0, amp = 0;
  const char *sched = "lws", *trace_dir = NULL, *graph_dir = NULL, *bound_dir = NULL, *runtime = "starpu";
  double lp_timeout = 120;
  sf_runtime_prepare_process(argv); /* OMP_MAX_TASK_PRIORITY for --runtime openmp */
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(k, "--ps")) ps = int_arg(k, v, 2, 9);
    else if (!strcmp(k, "--base")) base = int_arg(k, v, 1, 1024);
    else if (!strcmp(k, "--groups")) groups = int_arg(k, v, 1, 1024);
    else if (!strcmp(k, "--bottleneck")) bneck = int_arg(k, v, 0, 8);
    else if (!strcmp(k, "--ncpu")) ncpu = int_arg(k, v, 1, 1024);
    else if (!strcmp(k, "--slabs")) slabs = int_arg(k, v, 0, 1024);
    else if (!strcmp(k, "--warmup")) warm = int_arg(k, v, 0, GT_MAX_STEPS);
    else if (!strcmp(k, "--steps")) timed = int_arg(k, v, 1, GT_MAX_STEPS);
    else if (!strcmp(k, "--determinism")) det = int_arg(k, v, 0, 1);
    else if (!strcmp(k, "--amp")) amp = int_arg(k, v, 0, 1);
    else if (!strcmp(k, "--sched") && v) sched = v;
    else if (!strcmp(k, "--trace") && v) trace_dir = v;
    else if (!strcmp(k, "--runtime") && v) runtime = v;
    else if (!strcmp(k, "--export-graph") && v) graph_dir = v;
    else if (!strcmp(k, "--bound") && v) bound_dir = v;
    else if (!strcmp(k, "--bound-lp-timeout")) lp_timeout = int_arg(k, v, 1, 86400);
    else if (!strcmp(k, "--worker-nice")) gt_runtime_set_worker_nice(int_arg(k, v, 0, 19));
    else sf_die(SF_EXIT_USAGE, "bench_train_step: unknown or incomplete argument '%s' (see the header comment)", k);
    i++;
  }
  if (base % groups)
    sf_die(SF_EXIT_USAGE, "bench_train_step: --groups %d must divide --base %d (GroupNorm groups of equal size)", groups,
           base);
  if (ps - bneck < 1)
    sf_die(SF_EXIT_USAGE, "bench_train_step: --ps %d with --bottleneck %d leaves no U-Net level (ps - bottleneck >= 1)",
           ps, bneck);
  if (warm + timed + (bound_dir != NULL) > GT_MAX_STEPS) sf_die(SF_EXIT_USAGE, "bench_train_step: warmup + steps must be <= %d", GT_MAX_STEPS);

  const char *dirs[3] = {trace_dir, graph_dir, bound_dir};
  for (int i = 0; i < 3; i++)
    if (dirs[i] && sf_mkdir_p(dirs[i]) != 0) sf_die(SF_EXIT_FAILURE, "bench_train_step: cannot create directory '%s'", dirs[i]);
  gt_problem p;
  gt_problem_init_bn(&p, ps, bneck, base, 6, groups, 42); /* 5 categories + background */
  sf_rt_kind rk;
  if (sf_runtime_parse(runtime, &rk) != 0)
    sf_die(SF_EXIT_USAGE, "bench_train_step: --runtime expects starpu, openmp or sequential, got '%s'", runtime);
  if (rk == SF_RT_SEQUENTIAL && ncpu != 1) sf_die(SF_EXIT_USAGE, "bench_train_step: --runtime sequential runs on 1 thread: --ncpu 1");
  if (rk != SF_RT_STARPU && bound_dir) sf_die(SF_EXIT_USAGE, "bench_train_step: --bound uses StarPU's bound recorder: --runtime starpu");
  if (rk != SF_RT_STARPU) sched = runtime;
  gt_runtime_start_on(runtime, sched, ncpu);
  char kdesc[192], kwarn[640];
  fprintf(stderr, "bench_train_step: CPU kernels: %s\n", sf_cpu_kernels_describe(kdesc, sizeof kdesc));
  if (sf_blas_generic_warning(kwarn, sizeof kwarn)) fprintf(stderr, "bench_train_step: warning: %s\n", kwarn);
  sf_config c;
  sf_config_init(&c);
  c.slabs = slabs;
  c.more_determinism = det;
  c.torch_amp = amp;
  if (amp && !sf_cpu_bf16_engine())
    sf_die(SF_EXIT_USAGE, "bench_train_step: --amp 1 needs a bf16 engine: this CPU has no AVX512_BF16 (or SF_CPU_BF16=none)");
  char err[512], desc[256], gdesc[512];
  sf_graph *g = sf_graph_create(&p.u, &c, p.params0, err, sizeof err); /* params0 is the arena */
  if (!g) sf_die(SF_EXIT_FAILURE, "sf_graph_create: %s", err);
  sf_runtime_describe(desc, sizeof desc);
  float *x = sf_malloc(p.nvox * 3 * sizeof(float), "sample");
  uint16_t *lab = sf_malloc(p.nvox * sizeof(uint16_t), "labels");
  double t[GT_MAX_STEPS], out[3], loss0 = 0, loss1 = 0, kern = 0, subm = 0, spawn = 0;
  long ntasks = 0;
  for (int s = 0; s < warm + timed; s++) {
    gt_sample(&p, s % 4, x, lab);
    if (s == warm && trace_dir && sf_trace_begin(trace_dir, err, sizeof err) != 0)
      sf_die(SF_EXIT_FAILURE, "trace: %s", err);
    if (s == warm && graph_dir) sf_graph_record_begin();
    if (s == warm && bound_dir) sf_bound_start(0, 0);
    if (s == warm) sf_kernel_choices_reset(); /* the timed steps' variants */
    double t0 = sf_now(), tt0 = trace_dir && s >= warm ? sf_trace_now() : 0, k0 = sf_host_kernel_seconds();
    double sp0 = sf_host_spawn_seconds();
    sf_graph_train_step(g, x, lab, p.cw, 1e-3, s + 1, out);
    double dt = sf_now() - t0;
    if (s >= warm) {
      kern += sf_host_kernel_seconds() - k0;
      spawn += sf_host_spawn_seconds() - sp0;
      subm += sf_tasks_submit_seconds_counter(); /* this step's (reset by every step) */
    }
    ntasks = sf_tasks_count_counter(); /* this step's (reset by every step) */
    if (s == warm && graph_dir && sf_graph_record_write(graph_dir, err, sizeof err) != 0)
      sf_die(SF_EXIT_FAILURE, "export-graph: %s", err);
    if (trace_dir && s >= warm) {
      char name[32];
      snprintf(name, sizeof name, "step %d", s + 1);
      sf_trace_span(name, "step", tt0, sf_trace_now());
      sf_trace_collect();
    }
    if (s == 0) loss0 = out[2];
    loss1 = out[2];
    if (s >= warm) t[s - warm] = dt;
  }
  if (trace_dir && sf_trace_end(err, sizeof err) != 0) sf_die(SF_EXIT_FAILURE, "trace: %s", err);
  if (bound_dir) run_bound_step(g, &p, x, lab, warm + timed, t, timed, bound_dir, (double)lp_timeout);
  char choices[1024];
  fprintf(stderr, "bench_train_step: CPU kernel variants run in the timed steps (calls per entry): %s\n",
          sf_kernel_choices_describe(choices, sizeof choices));
  cJSON *cj = sf_kernel_choices_json();
  char *choices_json = cJSON_PrintUnformatted(cj);
  cJSON_Delete(cj);
  int nslabs = sf_graph_nslabs(g);
  sf_graph_describe(g, gdesc, sizeof gdesc); /* after a step: it reports the tasks per step */
  sf_graph_destroy(g);
  gt_runtime_stop();

  double steps_sorted[GT_MAX_STEPS];
  memcpy(steps_sorted, t, (size_t)timed * sizeof(double));
  qsort(steps_sorted, (size_t)timed, sizeof(double), cmp_d);
  double med = timed % 2 ? steps_sorted[timed / 2]
                         : 0.5 * (steps_sorted[timed / 2 - 1] + steps_sorted[timed / 2]);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const char *ct = getenv("OPENBLAS_CORETYPE");
  char conv_kernels[128];
  if (sf_conv3d_direct_available())
    snprintf(conv_kernels, sizeof conv_kernels, "%sdirect %s where it wins, else im2col + sgemm",
             sf_conv_winograd_active() ? "Winograd F(2,3) on wide layers, " : "",
             sf_cpu_isa_name(sf_cpu_isa_active()));
  else
    snprintf(conv_kernels, sizeof conv_kernels, "im2col + sgemm");
  printf("SFBENCH {\"tool\": \"bench_train_step\", \"problem_scale\": %d, \"base_channels\": %d, \"ncpu\": %d, "
         "\"sched\": \"%s\", \"nslabs\": %d, \"more_determinism\": %d, \"nparams\": %zu, \"fwd_gflop\": %.9g, "
         "\"warmup\": %d, \"steps\": %d, \"median_step_s\": %.6g, \"min_step_s\": %.6g, \"max_step_s\": %.6g, "
         "\"samples_per_s\": %.6g, \"eff_gflops\": %.6g, \"peak_rss_mib\": %.1f, \"openblas_core\": \"%s\", "
         "\"openblas_coretype_env\": \"%s\", \"cpu_kernels\": \"%s\", \"conv3d_kernels\": \"%s\", \"loss_first\": %.6g, "
         "\"loss_last\": %.6g, \"runtime\": \"%s\", \"runtime_kind\": \"%s\", \"tasks_per_step\": %ld, "
         "\"kernel_s_per_step\": %.6g, \"submit_s_per_step\": %.6g, \"spawn_s_per_step\": %.6g, "
         "\"groups\": %d, \"graph\": \"%s\", \"precision\": \"%s%s\", \"kernel_choices\": %s, "
         "\"step_s\": [",
         ps, base, ncpu, sched, nslabs, det, p.u.total_params, p.u.forward_flops * 1e-9, warm, timed, med,
         steps_sorted[0], steps_sorted[timed - 1], 1.0 / med, 3.0 * p.u.forward_flops / med * 1e-9,
         (double)ru.ru_maxrss / 1024.0, openblas_get_corename(), ct ? ct : "", sf_cpu_isa_name(sf_cpu_isa_active()),
         conv_kernels,
         loss0, loss1, desc, sf_runtime_kind_name(rk), ntasks, rk == SF_RT_STARPU ? -1.0 : kern / timed, subm / timed,
         rk == SF_RT_OPENMP ? spawn / timed : -1.0, groups, gdesc,
         amp ? "bf16 " : "fp32", amp ? sf_cpu_bf16_engine() : "", choices_json);
  free(choices_json);
  for (int i = 0; i < timed; i++) printf("%s%.6g", i ? ", " : "", t[i]);
  printf("]}\n");
  free(x);
  free(lab);
  sf_config_free(&c);
  gt_problem_free(&p);
  gt_cleanup();
  return 0;
}
