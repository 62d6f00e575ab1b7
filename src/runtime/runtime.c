/* StarPU start-up and shut-down for every subcommand (scaffold/runtime.h): builds a starpu_conf
 * from the config (scheduler, worker counts), lets StarPU's environment variables rule wherever
 * the config leaves the choice to StarPU, and pins OpenBLAS to one thread per worker. */
#include "scaffold/runtime.h"

#include <cblas.h>
#include <errno.h>
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/opencl_devices.h"
#include "scaffold/perfmodels.h"
#include "scaffold/runtime_cuda.h"

static int g_initialized = 0;
static char g_sched[64] = "";

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

int sf_runtime_init(const sf_config *c)
{
  if (g_initialized) SF_ABORT("sf_runtime_init called twice");
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
  sf_runtime_cuda_prepare(c); /* device-memory limit for StarPU (scaffold/runtime_cuda.h) */
  int ret = sf_dist_starpu_init(&conf); /* starpu_mpi_init_conf under mpirun (scaffold/dist.h) */
  if (ret == -ENODEV)
    sf_die(SF_EXIT_FAILURE, "StarPU found no worker to run on (ncpu=%ld, ncuda=%ld, nopencl=%ld; check STARPU_NCPU etc.)",
           c->ncpu, c->ncuda, c->nopencl);
  if (ret != 0) sf_die(SF_EXIT_FAILURE, "starpu_init failed with %d", ret);
  g_initialized = 1;
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
  starpu_task_wait_for_all();
  sf_runtime_cuda_stop(); /* CUDA workers' workspaces, cuDNN and cuBLAS handles */
  sf_opencl_shutdown();
  sf_dist_starpu_shutdown(); /* starpu_mpi_shutdown when distributed, else starpu_shutdown */
  g_initialized = 0;
}

int sf_runtime_is_initialized(void) { return g_initialized; }

void sf_runtime_wait_all(void)
{
  if (starpu_task_wait_for_all() != 0) SF_ABORT("starpu_task_wait_for_all failed");
}

int sf_runtime_ncpu_workers(void) { return g_initialized ? (int)starpu_cpu_worker_get_count() : 0; }

int sf_runtime_nworkers(void) { return g_initialized ? (int)starpu_worker_get_count() : 0; }

const char *sf_runtime_scheduler(void) { return g_sched; }

char *sf_runtime_describe(char *buf, size_t len)
{
  int ma = 0, mi = 0, re = 0;
  starpu_get_version(&ma, &mi, &re);
  if (!g_initialized) {
    snprintf(buf, len, "StarPU %d.%d.%d (not started)", ma, mi, re);
    return buf;
  }
  snprintf(buf, len, "StarPU %d.%d.%d, scheduler %s, %u workers (%u CPU, %u CUDA, %u OpenCL)", ma, mi, re, g_sched,
           starpu_worker_get_count(), starpu_cpu_worker_get_count(), starpu_cuda_worker_get_count(),
           starpu_opencl_worker_get_count());
  if (sf_perfmodels_sched_uses_models(g_sched)) { /* which history the dm* placement starts from */
    char pm[PATH_MAX + 128];
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "; %s", sf_perfmodels_describe(pm, sizeof pm));
  }
  return buf;
}
