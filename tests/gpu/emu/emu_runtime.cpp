/* Implementation of the CPU emulation of CUDA / cuBLAS used by the CTest gpu_kernels_emu (headers
 * beside this). Memory calls are malloc/memset/memcpy, streams and events are no-ops or timestamps,
 * kernels run block after block on one host thread per thread of a block, with a mutex/condition-
 * variable barrier that a thread leaves when it finishes the block (so early returns behave); the
 * next block starts when all have finished it. GEMMs are naive, column-major,
 * with double accumulation. The launch checks mirror the device limits that matter here (1024 threads
 * a block, 48 KiB of dynamic shared memory, a non-empty grid). */
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <chrono>
#include <stdlib.h>

#include "cublas_v2.h"
#include "cuda_runtime.h"

__thread sf_emu_uint3 threadIdx, blockIdx, blockDim, gridDim;
double sh[SF_EMU_SHARED_BYTES / sizeof(double)];
float shf[SF_EMU_SHARED_BYTES / sizeof(float)];
unsigned long long cnt[SF_EMU_SHARED_BYTES / sizeof(unsigned long long)];

static cudaError_t g_last = cudaSuccess;
static std::mutex g_atomic;

/* ---- barrier of the running block ---- */
struct emu_barrier {
  std::mutex m;
  std::condition_variable cv;
  unsigned nt = 0, expected = 0, arrived = 0, finished = 0;
  unsigned long phase = 0, block = 0;
  void arrive_and_wait() /* __syncthreads */
  {
    std::unique_lock<std::mutex> l(m);
    unsigned long ph = phase;
    if (++arrived == expected) {
      arrived = 0;
      phase++;
      cv.notify_all();
    } else {
      cv.wait(l, [&] { return phase != ph; });
    }
  }
  /* a thread finished the block: later barriers of this block wait for one thread fewer; the last one
   * starts the next block (reset shared memory first: it starts undefined) */
  void finish_block(size_t shmem)
  {
    std::unique_lock<std::mutex> l(m);
    unsigned long b = block;
    bool wake = false;
    expected--;
    if (arrived > 0 && arrived == expected) {
      arrived = 0;
      phase++;
      wake = true;
    }
    if (++finished == nt) {
      wake = true;
      finished = 0;
      expected = nt;
      arrived = 0;
      phase++;
      block++;
      memset(sh, 0xff, shmem);
      memset(shf, 0xff, shmem);
      memset(cnt, 0xff, shmem);
    }
    if (wake) cv.notify_all();
    cv.wait(l, [&] { return block != b; });
  }
};
static emu_barrier *g_bar;

void __syncthreads() { g_bar->arrive_and_wait(); }

double atomicAdd(double *p, double v)
{
  std::lock_guard<std::mutex> l(g_atomic);
  double o = *p;
  *p = o + v;
  return o;
}
unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
  std::lock_guard<std::mutex> l(g_atomic);
  unsigned long long o = *p;
  *p = o + v;
  return o;
}
int atomicExch(int *p, int v)
{
  std::lock_guard<std::mutex> l(g_atomic);
  int o = *p;
  *p = v;
  return o;
}

/* Persistent host threads (spawning threads per launch is slow): run(n, job) runs job(0..n-1) on n of
 * them and returns when all are done. */
struct emu_pool {
  std::mutex m;
  std::condition_variable go, done;
  std::vector<std::thread> th;
  const std::function<void(unsigned)> *job = nullptr;
  unsigned active = 0, left = 0;
  unsigned long gen = 0;
  void worker(unsigned t)
  {
    unsigned long seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> l(m);
      go.wait(l, [&] { return gen != seen; });
      seen = gen;
      if (t >= active) continue;
      const std::function<void(unsigned)> *j = job;
      l.unlock();
      (*j)(t);
      l.lock();
      if (--left == 0) done.notify_one();
    }
  }
  void run(unsigned n, const std::function<void(unsigned)> &j)
  {
    std::unique_lock<std::mutex> l(m);
    while (th.size() < n) {
      th.emplace_back(&emu_pool::worker, this, (unsigned)th.size());
      th.back().detach();
    }
    job = &j;
    active = left = n;
    gen++;
    go.notify_all();
    done.wait(l, [&] { return left == 0; });
  }
};
static emu_pool &g_pool = *new emu_pool; /* never destroyed: its threads wait on it until exit */

void sf_emu_launch(dim3 g, dim3 b, size_t shmem, const std::function<void()> &f)
{
  const unsigned nt = b.x * b.y * b.z;
  if (nt == 0 || nt > 1024 || g.x == 0 || g.y == 0 || g.z == 0 || g.y > 65535 || g.z > 65535) {
    fprintf(stderr, "emu: invalid launch configuration: grid (%u,%u,%u) block (%u,%u,%u)\n", g.x, g.y, g.z, b.x, b.y,
            b.z);
    g_last = cudaErrorInvalidValue;
    return;
  }
  if (shmem > SF_EMU_SHARED_BYTES) {
    fprintf(stderr, "emu: %zu bytes of dynamic shared memory requested, over %d\n", shmem, SF_EMU_SHARED_BYTES);
    g_last = cudaErrorInvalidValue;
    return;
  }
  emu_barrier bar;
  bar.nt = bar.expected = nt;
  g_bar = &bar;
  memset(sh, 0xff, shmem); /* shared memory starts undefined: make reads of unset values show */
  memset(shf, 0xff, shmem);
  memset(cnt, 0xff, shmem);
  g_pool.run(nt, [&](unsigned t) { /* thread t of every block, block after block */
    threadIdx = {t % b.x, t / b.x % b.y, t / (b.x * b.y)};
    blockDim = {b.x, b.y, b.z};
    gridDim = {g.x, g.y, g.z};
    for (unsigned bz = 0; bz < g.z; bz++)
      for (unsigned by = 0; by < g.y; by++)
        for (unsigned bx = 0; bx < g.x; bx++) {
          blockIdx = {bx, by, bz};
          f();
          bar.finish_block(shmem);
        }
  });
  g_bar = nullptr;
}

/* ---- runtime API ---- */
extern "C" {
const char *cudaGetErrorString(cudaError_t e)
{
  switch (e) {
    case cudaSuccess: return "no error (emulation)";
    case cudaErrorInvalidValue: return "invalid argument (emulation)";
    case cudaErrorMemoryAllocation: return "out of memory (emulation)";
    case cudaErrorNotSupported: return "operation not supported (emulation)";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (emulation)";
  }
  return "unknown error (emulation)";
}
cudaError_t cudaGetLastError(void)
{
  cudaError_t e = g_last;
  g_last = cudaSuccess;
  return e;
}
cudaError_t cudaGetDeviceCount(int *n)
{
  *n = getenv("SF_EMU_NO_DEVICE") ? 0 : 1;
  return *n ? cudaSuccess : cudaErrorNoDevice;
}
cudaError_t cudaGetDevice(int *d)
{
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "CPU emulation of a CUDA device");
  p->major = 9;
  p->multiProcessorCount = 1;
  p->totalGlobalMem = (size_t)1 << 32;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int dev)
{
  *v = 1; /* one multiprocessor: small grids, many grid-stride iterations */
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v)
{
  *v = 0;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v)
{
  *v = 0;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t bytes)
{
  *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p)
{
  free(p);
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
  cudaError_t e = cudaMalloc(p, bytes);
  if (e == cudaSuccess) memset(*p, 0xff, bytes); /* fresh device memory is garbage */
  return e;
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { return cudaFree(p); }
cudaError_t cudaMemset(void *p, int v, size_t bytes)
{
  memset(p, v, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s) { return cudaMemset(p, v, bytes); }
cudaError_t cudaMemcpy(void *d, const void *s, size_t bytes, cudaMemcpyKind k)
{
  memmove(d, s, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t bytes, cudaMemcpyKind k, cudaStream_t st)
{
  return cudaMemcpy(d, s, bytes, k);
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
  static int dummy;
  *s = (cudaStream_t)&dummy;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return cudaSuccess; }
struct sf_emu_event {
  double t;
};
cudaError_t cudaEventCreate(cudaEvent_t *e)
{
  *e = new sf_emu_event{0};
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
  e->t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
  *ms = (float)((b->t - a->t) * 1e3);
  return cudaSuccess;
}

/* ---- cuBLAS ---- */
cublasStatus_t cublasCreate(cublasHandle_t *h)
{
  static int dummy;
  *h = (cublasHandle_t)&dummy;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) { return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t st) { return st ? "error (emulation)" : "success (emulation)"; }

static double load(const void *p, cudaDataType t, size_t i)
{
  if (t == CUDA_R_16BF) {
    uint16_t b = ((const uint16_t *)p)[i];
    return (double)__uint_as_float((unsigned)b << 16);
  }
  return (double)((const float *)p)[i];
}

/* C: (m,n) = alpha op(A) op(B) + beta C, column-major */
static cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const void *A,
                           cudaDataType at, int lda, const void *B, cudaDataType bt, int ldb, float beta, float *C,
                           int ldc)
{
  if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) || lda < ((ta == CUBLAS_OP_N ? m : k) > 1 ? (ta == CUBLAS_OP_N ? m : k) : 1) ||
      ldb < ((tb == CUBLAS_OP_N ? k : n) > 1 ? (tb == CUBLAS_OP_N ? k : n) : 1)) {
    fprintf(stderr, "emu: cublas gemm: invalid sizes m=%d n=%d k=%d lda=%d ldb=%d ldc=%d\n", m, n, k, lda, ldb, ldc);
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      double acc = 0.0;
      for (int l = 0; l < k; l++) {
        size_t ai = ta == CUBLAS_OP_N ? (size_t)l * lda + i : (size_t)i * lda + l;
        size_t bi = tb == CUBLAS_OP_N ? (size_t)j * ldb + l : (size_t)l * ldb + j;
        acc += load(A, at, ai) * load(B, bt, bi);
      }
      float *c = C + (size_t)j * ldc + i;
      *c = (float)(alpha * acc + (beta != 0.0f ? (double)beta * *c : 0.0));
    }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
  return gemm(ta, tb, m, n, k, *alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb, *beta, C, ldc);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt,
                            int ldb, const void *beta, void *C, cudaDataType ct, int ldc, cublasComputeType_t comp,
                            cublasGemmAlgo_t algo)
{
  if (ct != CUDA_R_32F || at != bt) return CUBLAS_STATUS_NOT_SUPPORTED;
  return gemm(ta, tb, m, n, k, *(const float *)alpha, A, at, lda, B, bt, ldb, *(const float *)beta, (float *)C, ldc);
}
}
