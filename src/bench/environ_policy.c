/* Which environment variables a result file records and `scaffold rerun` may apply again: the
 * product's replayable switches (src/util/switches.c), and the StarPU, OpenMP, OpenBLAS and
 * device-visibility variables listed below, which choose workers, scheduling, calibration and
 * memory limits only. Nothing else: not the loader's or the shell's variables, not a variable that
 * names a file to write, a program or a library to load, a directory of code, and not a test hook.
 * A result file is data from elsewhere (docs/harness.md, "What a result file may contain"). */
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/switches.h"

/* StarPU 1.3: workers, binding, scheduling, calibration, memory, statistics printed to stderr. */
static const char *const starpu_vars[] = {
  "STARPU_NCPU", "STARPU_NCPUS", "STARPU_NCUDA", "STARPU_NOPENCL", "STARPU_RESERVE_NCPU",
  "STARPU_WORKERS_CPUID", "STARPU_WORKERS_COREID", "STARPU_WORKERS_NOBIND", "STARPU_WORKERS_GETBIND",
  "STARPU_WORKERS_CUDAID", "STARPU_WORKERS_OPENCLID", "STARPU_MAIN_THREAD_BIND", "STARPU_MAIN_THREAD_CPUID",
  "STARPU_MAIN_THREAD_COREID", "STARPU_OPENCL_ON_CPUS", "STARPU_OPENCL_ONLY_ON_CPUS", "STARPU_SCHED",
  "STARPU_SCHED_ALPHA", "STARPU_SCHED_BETA", "STARPU_SCHED_GAMMA", "STARPU_SCHED_READY",
  "STARPU_SCHED_SORTED_ABOVE", "STARPU_SCHED_SORTED_BELOW", "STARPU_MIN_PRIO", "STARPU_MAX_PRIO",
  "STARPU_CALIBRATE", "STARPU_CALIBRATE_MINIMUM", "STARPU_BUS_CALIBRATE", "STARPU_PREFETCH", "STARPU_PROFILING",
  "STARPU_HISTORY_MAX_ERROR", "STARPU_HOSTNAME", "STARPU_PERF_MODEL_HOMOGENEOUS_CPU",
  "STARPU_PERF_MODEL_HOMOGENEOUS_CUDA", "STARPU_PERF_MODEL_HOMOGENEOUS_OPENCL", "STARPU_EXP_LEN_THRESHOLD",
  "STARPU_NTASKS_THRESHOLD", "STARPU_LIMIT_CPU_MEM", "STARPU_LIMIT_CPU_NUMA_MEM", "STARPU_LIMIT_CUDA_MEM",
  "STARPU_LIMIT_OPENCL_MEM", "STARPU_MINIMUM_AVAILABLE_MEM", "STARPU_TARGET_AVAILABLE_MEM",
  "STARPU_MINIMUM_CLEAN_BUFFERS", "STARPU_TARGET_CLEAN_BUFFERS", "STARPU_LIMIT_MAX_SUBMITTED_TASKS",
  "STARPU_LIMIT_MIN_SUBMITTED_TASKS", "STARPU_DISABLE_ASYNCHRONOUS_COPY", "STARPU_DISABLE_ASYNCHRONOUS_CUDA_COPY",
  "STARPU_DISABLE_ASYNCHRONOUS_OPENCL_COPY", "STARPU_DISABLE_PINNING", "STARPU_CUDA_PIPELINE",
  "STARPU_OPENCL_PIPELINE", "STARPU_SINGLE_COMBINED_WORKER", "STARPU_MIN_WORKERSIZE", "STARPU_MAX_WORKERSIZE",
  "STARPU_SYNTHESIZE_ARITY_COMBINED_WORKER", "STARPU_USE_NUMA", "STARPU_BACKOFF_MIN", "STARPU_BACKOFF_MAX",
  "STARPU_SILENT", "STARPU_ENABLE_STATS", "STARPU_STATS", "STARPU_WORKER_STATS", "STARPU_BUS_STATS",
  "STARPU_MEMORY_STATS", "STARPU_DISPLAY_BINDINGS", "STARPU_WATCHDOG_TIMEOUT", "STARPU_WATCHDOG_DELAY",
  "STARPU_TASK_PROGRESS", "STARPU_GLOBAL_ARBITER", "STARPU_MPI_CACHE", "STARPU_MPI_CACHE_STATS",
  "STARPU_MPI_COMM", "STARPU_MPI_PRIORITIES", "STARPU_MPI_NDETACHED_SEND", "STARPU_MPI_NREADY_PROCESS",
};

/* OpenMP 5: threads, binding and scheduling; not OMP_TOOL* (they load libraries) nor OMP_DEBUG. */
static const char *const omp_vars[] = {
  "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OMP_SCHEDULE", "OMP_DYNAMIC", "OMP_NESTED",
  "OMP_MAX_ACTIVE_LEVELS", "OMP_THREAD_LIMIT", "OMP_STACKSIZE", "OMP_WAIT_POLICY", "OMP_MAX_TASK_PRIORITY",
  "OMP_CANCELLATION", "OMP_DISPLAY_ENV", "OMP_DISPLAY_AFFINITY", "OMP_DEFAULT_DEVICE", "OMP_TARGET_OFFLOAD",
};

static const char *const other_vars[] = {
  "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_VERBOSE", "OPENBLAS_MAIN_FREE",
  "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
};

static int listed(const char *const *list, size_t n, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (!strcmp(list[i], name)) return 1;
  return 0;
}
#define LISTED(list, name) listed(list, sizeof list / sizeof list[0], name)

/* A value fit for a command line: printable ASCII, at most 4096 bytes. */
static int printable(const char *v)
{
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)v; *p; p++, n++)
    if (*p < 0x20 || *p > 0x7e) return 0;
  return n <= 4096;
}

static int plain_name(const char *v) /* STARPU_HOSTNAME is a machine-class name, never a path */
{
  return *v && strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(v) &&
         v[0] != '.';
}

int sf_environ_replayable(const char *name, const char *value, char *why, size_t n)
{
  const sf_switch_def *s = sf_switch_find(name);
  if (s && s->scope == SF_SWITCH_TEST)
    return snprintf(why, n, "%s is a test hook: only a tester's own environment may set it", name), 0;
  if (s && !s->replay)
    return snprintf(why, n, "%s names %s on the machine that wrote the file: set it yourself if you mean it", name,
                    s->values), 0;
  if (s && *value && !sf_switch_value_ok(s, value))
    return snprintf(why, n, "%s='%s': expected %s", name, value, s->values), 0;
  if (s) return 1;
  if (!LISTED(starpu_vars, name) && !LISTED(omp_vars, name) && !LISTED(other_vars, name)) {
    if (!strncmp(name, "LD_", 3) || !strcmp(name, "PATH"))
      return snprintf(why, n, "%s is read by the dynamic loader or the shell: never applied from a file", name), 0;
    return snprintf(why, n, "%s is not a variable that a run records (docs/harness.md lists them)", name), 0;
  }
  if (!printable(value)) return snprintf(why, n, "%s: the value holds control or non-ASCII characters", name), 0;
  if (!strcmp(name, "STARPU_HOSTNAME") && *value && !plain_name(value))
    return snprintf(why, n, "STARPU_HOSTNAME='%s': expected a machine-class name (letters, digits, '.', '_', '-')",
                    value), 0;
  return 1;
}
