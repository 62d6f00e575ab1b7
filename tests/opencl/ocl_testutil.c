/* Implementation of tests/opencl/ocl_testutil.h. */
#include "ocl_testutil.h"

#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"

static char *g_home;

int ocl_begin(const char *tag)
{
  g_home = sf_test_tmpdir(tag);
  setenv("STARPU_HOME", g_home, 1);
  setenv("STARPU_NCPU", "1", 1);
  setenv("STARPU_NCUDA", "0", 1);
  setenv("STARPU_NOPENCL", "1", 1);
  setenv("STARPU_OPENCL_ON_CPUS", "1", 1);
  setenv("STARPU_OPENCL_ONLY_ON_CPUS", "1", 1);
  setenv("STARPU_SILENT", "1", 0);
  int rc = starpu_init(NULL);
  if (rc == -ENODEV) {
    sf_rm_rf(g_home);
    return sf_test_skip("StarPU found no worker (starpu_init: -ENODEV)");
  }
  if (rc != 0) {
    fprintf(stderr, "FAIL starpu_init returned %d\n", rc);
    exit(1);
  }
  if (starpu_opencl_worker_get_count() == 0) {
    starpu_shutdown();
    sf_rm_rf(g_home);
    return sf_test_skip("no OpenCL device (install pocl-opencl-icd for a CPU OpenCL device; StarPU needs OpenCL)");
  }
  double t0 = sf_now();
  int ndev = sf_opencl_init();
  printf("OpenCL kernels built for %d device(s) in %.2f s\n", ndev, sf_now() - t0);
  return 0;
}

void ocl_end(void)
{
  starpu_task_wait_for_all();
  sf_opencl_shutdown();
  starpu_shutdown();
  sf_rm_rf(g_home);
  free(g_home);
}

starpu_data_handle_t ocl_block(void *p, size_t nx, size_t ny, size_t nz, size_t elemsize)
{
  starpu_data_handle_t h;
  starpu_block_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)p, (uint32_t)nx, (uint32_t)(nx * ny), (uint32_t)nx,
                             (uint32_t)ny, (uint32_t)nz, elemsize);
  return h;
}

starpu_data_handle_t ocl_vec(void *p, size_t n, size_t elemsize)
{
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)p, (uint32_t)n, elemsize);
  return h;
}

void ocl_submit(struct starpu_codelet *cl, const void *args, size_t args_size, int n, const starpu_data_handle_t *h,
                const enum starpu_data_access_mode *m)
{
  struct starpu_data_descr d[64];
  SF_ASSERT(n <= 64);
  for (int i = 0; i < n; i++) {
    d[i].handle = h[i];
    d[i].mode = m[i];
  }
  void *copy = NULL;
  if (args) {
    copy = sf_malloc(args_size, "test codelet args");
    memcpy(copy, args, args_size);
  }
  int rc = starpu_task_insert(cl, STARPU_CL_ARGS, copy, args ? args_size : 0, STARPU_DATA_MODE_ARRAY, d, n, 0);
  if (rc != 0) {
    fprintf(stderr, "FAIL starpu_task_insert(%s) returned %d\n", cl->name, rc);
    exit(1);
  }
}

void ocl_unregister(int n, starpu_data_handle_t *h)
{
  starpu_task_wait_for_all();
  for (int i = 0; i < n; i++)
    if (h[i]) starpu_data_unregister(h[i]);
}

void ocl_fill(float *p, size_t n, uint64_t *seed, float lo, float hi, float q)
{
  for (size_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    double u = (double)(*seed >> 11) / 9007199254740992.0;
    float v = (float)(lo + (hi - lo) * u);
    if (q > 0) v = q * (float)(long)(v / q);
    p[i] = v;
  }
}

float *ocl_floats(size_t n, uint64_t *seed, float lo, float hi)
{
  float *p = sf_malloc(n * sizeof(float), "test data");
  ocl_fill(p, n, seed, lo, hi, 0);
  return p;
}

float *ocl_copy(const float *p, size_t n)
{
  float *q = sf_malloc(n * sizeof(float), "test data");
  memcpy(q, p, n * sizeof(float));
  return q;
}

void ocl_bounds(int *d0, int n, const int *depths)
{
  d0[0] = 0;
  for (int k = 0; k < n; k++) d0[k + 1] = d0[k] + depths[k];
}
