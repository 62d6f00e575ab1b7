/* CUDA workers' part of the runtime (scaffold/runtime_cuda.h): the device-memory limit and the
 * perfmodel sample tolerance (STARPU_HISTORY_MAX_ERROR) set before starpu_init, the precision and
 * convolution-engine settings read at start-up (torch_amp, SF_CUDA_MATH, SF_CUDA_CONV) and used by
 * the CUDA wrappers, cuBLAS handles per worker (starpu_cublas_init), and the release of every
 * worker's kernel workspace and cuDNN handle before starpu_shutdown. Without CUDA in StarPU (or without the kernels) every hook is a no-op. */
#include "scaffold/runtime_cuda.h"

#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/config.h"

#if defined(STARPU_USE_CUDA) && defined(SF_HAVE_CUDA_CODELETS)
#include <cuda_runtime_api.h>

#include "scaffold/ops_cuda.h"
#include "scaffold/switches.h"

typedef enum { ENG_AUTO = 0, ENG_CUBLAS = 1, ENG_CUDNN = 2 } engine_t;
static unsigned g_prec;      /* 0, SF_GPU_TF32 or SF_GPU_BF16 */
static engine_t g_engine;    /* SF_CUDA_CONV */
static int g_cublas;         /* starpu_cublas_init was called */
static int g_cuda_workers;
static const char *g_prec_src = "torch_amp";

/* The smallest device memory in bytes, 0 when no device can be queried. */
static size_t min_device_bytes(void)
{
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  size_t best = 0;
  for (int d = 0; d < n; d++) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    if (best == 0 || p.totalGlobalMem < best) best = p.totalGlobalMem;
  }
  return best;
}

/* SF_CUDA_MATH / SF_CUDA_CONV, read before starpu_init so that a bad value stops before StarPU runs.
 * Returns the precision override (-1 = none). */
static int read_env(void)
{
  int prec = -1;
  const char *m = sf_switch("SF_CUDA_MATH");
  if (m && *m) {
    if (!strcmp(m, "fp32")) prec = 0;
    else if (!strcmp(m, "tf32")) prec = SF_GPU_TF32;
    else if (!strcmp(m, "bf16")) prec = SF_GPU_BF16;
    else sf_die(SF_EXIT_USAGE, "environment SF_CUDA_MATH='%s': expected fp32, tf32 or bf16", m);
  }
  g_engine = ENG_AUTO;
  const char *e = sf_switch("SF_CUDA_CONV");
  if (e && *e) {
    if (!strcmp(e, "auto")) g_engine = ENG_AUTO;
    else if (!strcmp(e, "cublas")) g_engine = ENG_CUBLAS;
    else if (!strcmp(e, "cudnn")) g_engine = ENG_CUDNN;
    else sf_die(SF_EXIT_USAGE, "environment SF_CUDA_CONV='%s': expected auto, cublas or cudnn", e);
  }
  return prec;
}
static int g_prec_env = -1;

#define SF_HISTORY_MAX_ERROR "1000" /* %: keep samples within 11x of the mean (runtime.c has the same) */

void sf_runtime_cuda_prepare(const sf_config *c)
{
  g_prec_env = read_env();
  const char *env_n = getenv("STARPU_NCUDA");
  int may_use = c->ncuda > 0 || (c->ncuda < 0 && !(env_n && *env_n && atol(env_n) == 0));
  if (!may_use) return;
  /* dmda and the other model-based schedulers with CUDA and CPU workers: StarPU 1.3's history models
   * drop a sample more than STARPU_HISTORY_MAX_ERROR % (default 50) away from the footprint's mean and
   * flush the footprint once the dropped samples outnumber the kept ones, so with jittery timings (a
   * busy host, tiny tasks) footprints never reach the 10 samples that make them calibrated, and dmda
   * keeps forcing their tasks onto the kind of worker that lacks them. Same rule as for OpenCL workers
   * in runtime.c (docs/gpu/cuda-workers.md); the user's setting wins. */
  if (!getenv("STARPU_HISTORY_MAX_ERROR")) setenv("STARPU_HISTORY_MAX_ERROR", SF_HISTORY_MAX_ERROR, 1);
  if (getenv("STARPU_LIMIT_CUDA_MEM")) return;
  size_t total = min_device_bytes();
  if (total == 0) return;
  size_t reserve = total / 10 > ((size_t)6 << 30) ? total / 10 : ((size_t)6 << 30);
  if (total <= reserve + ((size_t)1 << 30)) return; /* a small device: leave StarPU's default */
  char buf[32];
  snprintf(buf, sizeof buf, "%zu", (total - reserve) >> 20);
  setenv("STARPU_LIMIT_CUDA_MEM", buf, 1);
}

void sf_runtime_cuda_start(const sf_config *c)
{
  g_prec = g_prec_env >= 0 ? (unsigned)g_prec_env : c->torch_amp ? SF_GPU_BF16 : 0;
  g_prec_src = g_prec_env >= 0 ? "SF_CUDA_MATH" : "torch_amp";
  g_cuda_workers = (int)starpu_cuda_worker_get_count();
  if (g_cuda_workers > 0) {
    starpu_cublas_init();
    g_cublas = 1;
  }
}

static void release_worker(void *arg)
{
  (void)arg;
  sf_cuda_thread_release();
}

void sf_runtime_cuda_stop(void)
{
  if (!g_cublas) return;
  starpu_execute_on_each_worker(release_worker, NULL, STARPU_CUDA);
  starpu_cublas_shutdown();
  g_cublas = 0;
  g_cuda_workers = 0;
}

char *sf_runtime_cuda_describe(char *buf, size_t len)
{
  if (g_cuda_workers <= 0) {
    snprintf(buf, len, "CUDA: no CUDA worker");
    return buf;
  }
  static const char *eng[] = {"auto", "cublas", "cudnn"};
  snprintf(buf, len, "CUDA: %d worker(s), math %s (%s), conv engine %s (cuDNN %s)", g_cuda_workers,
           g_prec == SF_GPU_BF16 ? "bf16" : g_prec == SF_GPU_TF32 ? "tf32" : "fp32", g_prec_src, eng[g_engine],
           sf_cuda_have_cudnn() ? "built" : "not built");
  return buf;
}

unsigned sf_cuda_gemm_flags(void) { return g_prec; }

unsigned sf_cuda_conv3d_flags(int dir, int H, int W, int Cin, int Cout)
{
  unsigned f = g_prec;
  if (g_engine == ENG_CUBLAS || !sf_cuda_have_cudnn()) return f;
  if (g_engine == ENG_CUDNN) return f | SF_GPU_CUDNN;
  /* auto: the faster engine per shape on an H200 (docs/gpu/h200-2026-11-30/bench.log) */
  int edge = H < W ? H : W, cmin = Cin < Cout ? Cin : Cout;
  if (cmin < 16) return f;
  if (f) return (edge >= 32 || (edge >= 16 && cmin >= 256)) ? f | SF_GPU_CUDNN : f;
  return (dir == SF_CUDA_DIR_FWD && edge >= 32) ? f | SF_GPU_CUDNN : f;
}

#else /* no CUDA workers in this build */

void sf_runtime_cuda_prepare(const sf_config *c) { (void)c; }
void sf_runtime_cuda_start(const sf_config *c) { (void)c; }
void sf_runtime_cuda_stop(void) {}
char *sf_runtime_cuda_describe(char *buf, size_t len)
{
#ifdef STARPU_USE_CUDA
  snprintf(buf, len, "CUDA: none (StarPU has CUDA but the kernels were not built: nvcc missing or SF_USE_CUDA=OFF)");
#else
  snprintf(buf, len, "CUDA: none (StarPU built without CUDA)");
#endif
  return buf;
}
unsigned sf_cuda_gemm_flags(void) { return 0; }
unsigned sf_cuda_conv3d_flags(int dir, int H, int W, int Cin, int Cout)
{
  (void)dir, (void)H, (void)W, (void)Cin, (void)Cout;
  return 0;
}

#endif
