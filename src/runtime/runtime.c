/* Runtime start-up and shut-down for every subcommand (scaffold/runtime.h). Under runtime starpu
 * (the default): builds a starpu_conf from the config (scheduler, worker counts), lets StarPU's
 * environment variables rule wherever the config leaves the choice to StarPU. Under openmp and
 * sequential: starts the host executor (exec_openmp.c, exec_host.c) instead, StarPU stays off.
 * Every runtime pins OpenBLAS to one thread per worker. */
#include "scaffold/runtime.h"

#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <starpu.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/opencl_devices.h"
#include "scaffold/kernel_tuning_setup.h"
#include "scaffold/perfmodels.h"
#include "scaffold/runtime_cuda.h"
#include "scaffold/tensor.h"
#include "worker_priority.h"

static int g_initialized = 0;
static char g_sched[64] = "";
static sf_rt_kind g_kind = SF_RT_STARPU;
static int g_host_workers; /* openmp / sequential */

static const char *const kind_names[] = {"starpu", "openmp", "sequential"};

sf_rt_kind sf_runtime_which(void) { return g_kind; }

const char *sf_runtime_kind_name(sf_rt_kind k)
{
  return (unsigned)k < sizeof kind_names / sizeof kind_names[0] ? kind_names[k] : "?";
}

int sf_runtime_parse(const char *name, sf_rt_kind *out)
{
  for (int i = 0; i < (int)(sizeof kind_names / sizeof kind_names[0]); i++)
    if (name && !strcmp(name, kind_names[i])) {
      *out = (sf_rt_kind)i;
      return 0;
    }
  return -1;
}

int sf_runtime_check_config(const sf_config *c, const char **key, char *err, size_t errlen)
{
  sf_rt_kind k = SF_RT_STARPU;
  if (sf_runtime_parse(c->runtime, &k) != 0) {
    *key = "runtime";
    snprintf(err, errlen, "unknown runtime; expected starpu, openmp or sequential");
    return -1;
  }
  if (c->trace == SF_TRACE_FXT && k == SF_RT_STARPU) {
    *key = "trace";
    if (!sf_runtime_fxt_available()) {
      snprintf(err, errlen, "fxt needs a StarPU built with FxT, and this one is not; expected trace: 0 or 1, or build "
               "the project against an FxT StarPU (scripts/build-fxt)");
      return -1;
    }
    if (sf_dist_launcher_size() > 1) {
      snprintf(err, errlen, "fxt records one process; under mpirun (%d ranks) expected trace: 0 or 1",
               sf_dist_launcher_size());
      return -1;
    }
  }
  if (k == SF_RT_STARPU) return 0;
  const char *name = kind_names[k];
  if (sf_dist_launcher_size() > 1) {
    *key = "runtime";
    snprintf(err, errlen, "runtime %s runs in one process; under mpirun (%d ranks) expected runtime: starpu", name,
             sf_dist_launcher_size());
    return -1;
  }
  if (c->ncuda > 0) {
    *key = "ncuda";
    snprintf(err, errlen, "runtime %s has CPU workers only; expected ncuda: -1 or 0, or runtime: starpu", name);
    return -1;
  }
  if (c->nopencl > 0) {
    *key = "nopencl";
    snprintf(err, errlen, "runtime %s has CPU workers only; expected nopencl: 0, or runtime: starpu", name);
    return -1;
  }
  if (c->trace) {
    *key = "trace";
    snprintf(err, errlen, "traces come from StarPU's task profiling; expected trace: 0 under runtime %s", name);
    return -1;
  }
  if (c->scheduler && c->scheduler[0]) {
    *key = "scheduler";
    snprintf(err, errlen, "a StarPU scheduling policy; expected scheduler: \"\" under runtime %s", name);
    return -1;
  }
  if (c->bound) {
    *key = "bound";
    snprintf(err, errlen, "the bound comes from StarPU's perfmodels; expected bound: 0 under runtime %s", name);
    return -1;
  }
  if (c->export_graph[0]) {
    *key = "export_graph";
    snprintf(err, errlen, "the graph recorder reads StarPU's data handles; expected export_graph: \"\" under runtime %s "
             "(docs/tracing.md)", name);
    return -1;
  }
  if (k == SF_RT_SEQUENTIAL && c->ncpu > 1) {
    *key = "ncpu";
    snprintf(err, errlen, "the sequential runtime runs every task in the calling thread; expected ncpu: -1 or 1");
    return -1;
  }
  return 0;
}

void sf_runtime_prepare_process(char **argv)
{
  if (getenv("OMP_MAX_TASK_PRIORITY")) return;
  setenv("OMP_MAX_TASK_PRIORITY", "2", 1); /* the graph's priorities are 0..2 (scaffold/tasks.h) */
  execv("/proc/self/exe", argv);
  /* exec failed: go on without task priorities under openmp */
}

/* openmp / sequential: the host executor; no StarPU. */
static int host_init(const sf_config *c)
{
  const char *key = NULL;
  char err[512];
  if (sf_runtime_check_config(c, &key, err, sizeof err) != 0) sf_die(SF_EXIT_USAGE, "%s: %s", key, err);
  openblas_set_num_threads(1);
  /* openmp: one process, so auto is the single-process value; sequential has no worker threads */
  sf_worker_priority_prepare(g_kind == SF_RT_OPENMP ? c->worker_nice : 0, 0);
  if (g_kind == SF_RT_SEQUENTIAL) {
    g_host_workers = 1;
  } else {
    long n = c->ncpu;
    if (n < 0) {
      const char *e = getenv("STARPU_NCPU");
      n = e && *e ? strtol(e, NULL, 10) : omp_get_num_procs();
    }
    if (n < 1) sf_die(SF_EXIT_USAGE, "ncpu: runtime openmp needs at least one CPU thread, got %ld", n);
    g_host_workers = (int)n;
    sf_omp_start(g_host_workers);
  }
  snprintf(g_sched, sizeof g_sched, "%s", kind_names[g_kind]);
  g_initialized = 1;
  return g_host_workers;
}

const char *sf_runtime_resolve_scheduler(const char *name, char *valid, size_t valid_len)
{
  const char *want = !strcmp(name, "heft") ? "modular-heft" : name;
  struct starpu_sched_policy **pols = starpu_sched_get_predefined_policies();
  const char *found = NULL;
  size_t k = 0;
  if (valid && valid_len) valid[0] = '\0';
  for (int i = 0; pols && pols[i]; i++) {
    const char *pn = pols[i]->policy_name;
    if (!pn) continue;
    if (!strcmp(pn, want)) found = pn;
    if (valid && valid_len && k < valid_len) {
      int w = snprintf(valid + k, valid_len - k, "%s%s", k ? ", " : "", pn);
      if (w > 0) k += (size_t)w;
    }
  }
  if (valid && valid_len && k < valid_len) snprintf(valid + k, valid_len - k, " (and heft = modular-heft)");
  return found;
}

/* The config value wins over the environment variable when the config sets one. */
static void set_count_env(const char *var, const char *alias, long value)
{
  char buf[32];
  snprintf(buf, sizeof buf, "%ld", value);
  setenv(var, buf, 1);
  if (alias) unsetenv(alias);
}

#ifdef STARPU_SIMGRID
static double simulated_clock_s(void) { return starpu_timing_now() * 1e-6; }
#endif

int sf_runtime_init(const sf_config *c)
{
  if (g_initialized) SF_ABORT("sf_runtime_init called twice");
  g_kind = SF_RT_STARPU;
  if (sf_runtime_parse(c->runtime, &g_kind) != 0)
    sf_die(SF_EXIT_USAGE, "runtime: unknown runtime '%s'; expected starpu, openmp or sequential", c->runtime);
  sf_kernel_tuning_setup(); /* the machine's kernel choices (scaffold/kernel_tuning_setup.h), every runtime */
  if (g_kind != SF_RT_STARPU) return host_init(c);
  struct starpu_conf conf;
  if (starpu_conf_init(&conf) != 0) sf_die(SF_EXIT_FAILURE, "starpu_conf_init failed");

  if (c->scheduler && c->scheduler[0]) {
    char valid[2048];
    const char *canon = sf_runtime_resolve_scheduler(c->scheduler, valid, sizeof valid);
    if (!canon)
      sf_die(SF_EXIT_USAGE, "config key 'scheduler': unknown StarPU scheduling policy '%s'; valid: %s", c->scheduler,
             valid);
    conf.sched_policy_name = canon;
    /* StarPU reads STARPU_SCHED before conf.sched_policy_name, so the config's choice must
     * replace it in our environment. */
    setenv("STARPU_SCHED", canon, 1);
  }
  if (c->ncpu >= 0) {
    conf.ncpus = (int)c->ncpu;
    set_count_env("STARPU_NCPU", "STARPU_NCPUS", c->ncpu);
  }
  if (c->ncuda >= 0) {
    conf.ncuda = (int)c->ncuda;
    set_count_env("STARPU_NCUDA", NULL, c->ncuda);
  }
  if (c->nopencl > 0) {
    conf.nopencl = (int)c->nopencl;
    set_count_env("STARPU_NOPENCL", NULL, c->nopencl);
  } else if (c->nopencl == 0 && !getenv("STARPU_NOPENCL")) {
    conf.nopencl = 0;
  }

  /* OpenCL workers: StarPU ignores CPU OpenCL devices unless STARPU_OPENCL_ON_CPUS /
   * STARPU_OPENCL_ONLY_ON_CPUS are set; without a GPU OpenCL device we set both (PoCL). */
  const char *env_ocl = getenv("STARPU_NOPENCL");
  long want_ocl = c->nopencl > 0 ? c->nopencl : (env_ocl && *env_ocl ? atol(env_ocl) : 0);
  if (want_ocl > 0) sf_opencl_prepare_env();
  /* Heterogeneous runs: keep perfmodel samples within 11x of the mean (STARPU_HISTORY_MAX_ERROR 1000 %,
   * StarPU's default 50 % flushes jittery footprints so dmda never finishes calibrating; see
   * sf_runtime_cuda_prepare, which does the same for CUDA workers). The user's setting wins. */
  if (want_ocl > 0 && !getenv("STARPU_HISTORY_MAX_ERROR")) setenv("STARPU_HISTORY_MAX_ERROR", "1000", 1);

  /* BLAS inside a codelet must not spawn its own thread pool. */
  openblas_set_num_threads(1);

  sf_perfmodels_setup(getenv("STARPU_SCHED")); /* shipped perfmodels for this machine (scaffold/perfmodels.h) */
  sf_runtime_fxt_prepare(c); /* trace: fxt: where StarPU writes its raw trace */
  sf_runtime_cuda_prepare(c); /* device-memory limit for StarPU (scaffold/runtime_cuda.h) */
  int ret = sf_dist_starpu_init(&conf); /* starpu_mpi_init_conf under mpirun (scaffold/dist.h) */
  if (ret == -ENODEV)
    sf_die(SF_EXIT_FAILURE, "StarPU found no worker to run on (ncpu=%ld, ncuda=%ld, nopencl=%ld; check STARPU_NCPU etc.)",
           c->ncpu, c->ncuda, c->nopencl);
  if (ret != 0) sf_die(SF_EXIT_FAILURE, "starpu_init failed with %d", ret);
  g_initialized = 1;
  /* StarPU's own allocations (sf_data_alloc: every tensor) are malloc's, 16 bytes past a cache line for large
   * blocks, so every 64-byte vector or tile row of the kernels straddled two lines: whole lines, as the host
   * runtimes' posix_memalign gives */
  starpu_malloc_set_align(SF_DATA_ALIGN);
#ifdef STARPU_SIMGRID
  sf_set_clock(simulated_clock_s); /* scaffold-sim: step times are simulated time */
  sf_worker_priority_prepare(0, 0); /* simulated workers: no thread priority to lower */
#else
  sf_worker_priority_prepare(c->worker_nice, sf_dist_active());
  if (sf_worker_nice_resolve(c->worker_nice, sf_dist_active()) > 0) /* one task on each CPU worker */
    starpu_execute_on_each_worker(sf_worker_priority_apply, NULL, STARPU_CPU);
#endif
  sf_runtime_cuda_start(c); /* CUDA precision / engine, cuBLAS handles (no-op without CUDA workers) */
  if (want_ocl > 0 && starpu_opencl_worker_get_count() == 0)
    sf_die(SF_EXIT_FAILURE,
           "%ld OpenCL worker(s) requested (nopencl / STARPU_NOPENCL) but StarPU found no OpenCL device; install an "
           "OpenCL driver (Debian: pocl-opencl-icd, see scripts/install-deps) or run with nopencl: 0",
           want_ocl);
  sf_opencl_init(); /* builds the kernels for every OpenCL worker's device (no-op without one) */
  /* more_determinism with OpenCL and other workers: OpenCL variants that are not bitwise the CPU
   * function stay off OpenCL workers, so a CPU + OpenCL run reproduces a CPU-only run bit for bit. */
  int others = (int)(starpu_cpu_worker_get_count() + starpu_cuda_worker_get_count());
  sf_opencl_set_placement(c->more_determinism && starpu_opencl_worker_get_count() > 0 && others > 0
                              ? SF_OCL_PLACE_BITWISE
                              : SF_OCL_PLACE_ANY);

  struct starpu_sched_policy *pol = starpu_sched_ctx_get_sched_policy(0);
  snprintf(g_sched, sizeof g_sched, "%s", pol && pol->policy_name ? pol->policy_name : "?");
  int n = (int)starpu_worker_get_count();
  if (n <= 0) sf_die(SF_EXIT_FAILURE, "StarPU started with no workers");
  return n;
}

void sf_runtime_shutdown(void)
{
  if (!g_initialized) return;
  if (g_kind != SF_RT_STARPU) {
    sf_omp_stop();
    g_initialized = 0;
    g_kind = SF_RT_STARPU;
    return;
  }
  starpu_task_wait_for_all();
  sf_runtime_cuda_stop(); /* CUDA workers' workspaces, cuDNN and cuBLAS handles */
  sf_opencl_shutdown();
  sf_dist_starpu_shutdown(); /* starpu_mpi_shutdown when distributed, else starpu_shutdown */
#ifdef STARPU_SIMGRID
  sf_set_clock(NULL);
#endif
  g_initialized = 0;
}

int sf_runtime_is_initialized(void) { return g_initialized; }

void sf_runtime_wait_all(void)
{
  if (g_kind != SF_RT_STARPU) {
    sf_omp_wait_all(); /* sequential: every task has run already */
    return;
  }
  if (starpu_task_wait_for_all() != 0) SF_ABORT("starpu_task_wait_for_all failed");
}

int sf_runtime_ncpu_workers(void)
{
  if (!g_initialized) return 0;
  return g_kind != SF_RT_STARPU ? g_host_workers : (int)starpu_cpu_worker_get_count();
}

int sf_runtime_nworkers(void)
{
  if (!g_initialized) return 0;
  return g_kind != SF_RT_STARPU ? g_host_workers : (int)starpu_worker_get_count();
}

const char *sf_runtime_scheduler(void) { return g_sched; }

char *sf_runtime_describe(char *buf, size_t len)
{
  if (g_initialized && g_kind == SF_RT_OPENMP) {
    char prio[160];
    snprintf(buf, len,
             "OpenMP tasks (GCC libgomp, OpenMP %d), %d worker threads, task priorities up to %d; worker threads %s",
             _OPENMP, g_host_workers, omp_get_max_task_priority(), sf_worker_priority_describe(prio, sizeof prio));
    return buf;
  }
  if (g_initialized && g_kind == SF_RT_SEQUENTIAL) {
    snprintf(buf, len, "sequential executor, 1 thread (tasks run at submission)");
    return buf;
  }
  int ma = 0, mi = 0, re = 0;
  starpu_get_version(&ma, &mi, &re);
  if (!g_initialized) {
    snprintf(buf, len, "StarPU %d.%d.%d (not started)", ma, mi, re);
    return buf;
  }
  char prio[160];
  snprintf(buf, len, "StarPU %d.%d.%d, scheduler %s, %u workers (%u CPU, %u CUDA, %u OpenCL); CPU worker threads %s",
           ma, mi, re, g_sched, starpu_worker_get_count(), starpu_cpu_worker_get_count(),
           starpu_cuda_worker_get_count(), starpu_opencl_worker_get_count(),
           sf_worker_priority_describe(prio, sizeof prio));
  if (sf_perfmodels_sched_uses_models(g_sched)) { /* which history the dm* placement starts from */
    char pm[PATH_MAX + 128];
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "; %s", sf_perfmodels_describe(pm, sizeof pm));
  }
  return buf;
}
