/* Implementation of tests/hetero/hetero_testlib.h. */
#include "hetero_testlib.h"

#include <starpu.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/opencl.h"
#include "scaffold/runtime.h"
#include "testutil.h"

static char *g_home;
static sf_config g_cfg;
static int g_live;

int het_have_opencl(void)
{
#ifdef STARPU_USE_OPENCL
  cl_platform_id plat[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plat, &np) != CL_SUCCESS) return 0;
  if (np > 16) np = 16;
  for (cl_uint i = 0; i < np; i++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) == CL_SUCCESS && nd > 0) return 1;
  }
#endif
  return 0;
}

void het_start(const char *scheduler, int ncpu, int nopencl, int determinism)
{
  if (!g_home) {
    g_home = sf_test_tmpdir("hetero-starpu-home");
    setenv("STARPU_HOME", g_home, 1);
    sf_opencl_prepare_env(); /* StarPU enumerates OpenCL devices at the process's first start only */
  }
  sf_config_init(&g_cfg);
  g_live = 1;
  free(g_cfg.scheduler);
  g_cfg.scheduler = sf_strdup(scheduler);
  g_cfg.ncpu = ncpu;
  g_cfg.ncuda = 0;
  g_cfg.nopencl = nopencl;
  g_cfg.more_determinism = determinism;
  sf_runtime_init(&g_cfg);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) starpu_profiling_worker_get_info((int)w, NULL);
}

void het_task_counts(long *cpu, long *opencl)
{
  starpu_task_wait_for_all();
  *cpu = *opencl = 0;
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
    struct starpu_profiling_worker_info info;
    if (starpu_profiling_worker_get_info((int)w, &info) != 0) continue;
    enum starpu_worker_archtype t = starpu_worker_get_type((int)w);
    if (t == STARPU_CPU_WORKER) *cpu += info.executed_tasks;
    if (t == STARPU_OPENCL_WORKER) *opencl += info.executed_tasks;
  }
}

void het_stop(void)
{
  sf_runtime_shutdown();
  if (g_live) sf_config_free(&g_cfg);
  g_live = 0;
}

void het_cleanup(void)
{
  if (g_home) sf_rm_rf(g_home);
  free(g_home);
  g_home = NULL;
}
