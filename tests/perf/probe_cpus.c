/* Per-CPU speed probe for scripts/bench-train (a tool, not a test): how fast each CPU of this process's affinity
 * mask computes right now, all CPUs at once as the workers of a training step run. On a virtual machine two
 * vCPUs can differ by 2x in the same second (on an AMX host one ran AMX tile products at 2100 GFLOP/s while
 * the other ran them at 950, the host's other tenants sharing their cores), and the balance of a step
 * and of the peer's threads follows; bench-train runs this before every measured run, so its report
 * says what the machine gave each run.
 * One thread per CPU, pinned, started together at a barrier; each runs for --ms milliseconds of wall time:
 *   - fma: 12 independent chains of 16-float multiply-adds (AVX-512, AVX2 + FMA or plain C, the kernel set
 *     sf_cpu_isa_active() picks), 2 flops per lane;
 *   - amx (where the CPU and OS offer AMX-BF16): TDPBF16PS on 4 independent C tiles, nothing loaded, as
 *     bench_amx_tiles' "products alone" (2*16*16*32 flops per product).
 * Per CPU: GFLOP/s over the wall window, and the share of it the thread was on the CPU (below 1: another
 * process took the CPU). Usage: probe_cpus [--ms 100]. Prints a table and one line "SFBENCH {json}"; exit 1
 * when a figure is not positive and finite. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchutil.h"
#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

#include "amx_internal.h" /* the tile configuration and target attribute of the AMX kernels */

#define MAX_CPUS 256
#define FMA_CHAINS 12
#define FMA_ITERS 20000 /* per chunk: 12 x 16 x 2 x 20000 = 7.7 MFLOP */
#define AMX_ITERS 500   /* per chunk: 4 x 16384 x 500 = 33 MFLOP */

enum kind { FMA, AMX, NKINDS };

typedef struct {
  int cpu;
  enum kind kind;
  double ms;
  pthread_barrier_t *start;
  double gflops, cpu_share;
  float sink;
} probe;

typedef float v16 __attribute__((vector_size(64)));

/* iters rounds of FMA_CHAINS independent a = a * m + c on 16 floats; returns a sum so nothing is dropped */
#define FMA_BODY                                                                             \
  v16 a[FMA_CHAINS], m, c;                                                                   \
  for (int k = 0; k < 16; k++) m[k] = 0.999f, c[k] = 0.001f;                                 \
  for (int j = 0; j < FMA_CHAINS; j++)                                                       \
    for (int k = 0; k < 16; k++) a[j][k] = (float)j;                                         \
  for (long i = 0; i < iters; i++)                                                           \
    for (int j = 0; j < FMA_CHAINS; j++) a[j] = a[j] * m + c;                                \
  float s = 0;                                                                               \
  for (int j = 0; j < FMA_CHAINS; j++)                                                       \
    for (int k = 0; k < 16; k++) s += a[j][k];                                               \
  return s;

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f,fma"))) static float fma_avx512(long iters) { FMA_BODY }
__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) { FMA_BODY }
#endif
static float fma_c(long iters) { FMA_BODY }

static float fma_chunk(long iters)
{
#if defined(__x86_64__) && defined(__GNUC__)
  switch (sf_cpu_isa_active()) {
  case SF_ISA_AVX512: return fma_avx512(iters);
  case SF_ISA_AVX2: return fma_avx2(iters);
  default: break;
  }
#endif
  return fma_c(iters);
}

/* iters rounds of 4 tile products into 4 independent C tiles */
SF_AMX_TARGET static float amx_chunk(long iters)
{
  static _Alignas(64) uint16_t ab[512]; /* one 1 KiB tile of bf16 ones, read-only after the first fill */
  if (ab[0] == 0)
    for (int i = 0; i < 512; i++) ab[i] = 0x3f80;
  sf_amx_start_full_tiles();
  _tile_loadd(4, ab, 64);
  _tile_loadd(6, ab, 64);
  for (long i = 0; i < iters; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 6);
    _tile_dpbf16ps(2, 4, 6);
    _tile_dpbf16ps(3, 4, 6);
  }
  float out[256];
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}

static double wall_seconds(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *run_probe(void *arg)
{
  probe *p = arg;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(p->cpu, &one);
  int pinned = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  pthread_barrier_wait(p->start);
  const double flop_per_chunk = p->kind == FMA ? 2.0 * 16 * FMA_CHAINS * FMA_ITERS : 4.0 * 2 * 16 * 16 * 32 * AMX_ITERS;
  double w0 = wall_seconds(), c0 = bench_thread_seconds(), w = w0;
  long chunks = 0;
  while (w - w0 < p->ms * 1e-3) {
    p->sink += p->kind == FMA ? fma_chunk(FMA_ITERS) : amx_chunk(AMX_ITERS);
    chunks++;
    w = wall_seconds();
  }
  p->gflops = pinned ? flop_per_chunk * (double)chunks / (w - w0) / 1e9 : NAN;
  p->cpu_share = (bench_thread_seconds() - c0) / (w - w0);
  return NULL;
}

/* Runs kind on every CPU of cpus[0..n) at once, results into p[0..n) */
static void probe_all(probe *p, const int *cpus, int n, enum kind kind, double ms)
{
  pthread_t th[MAX_CPUS];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)n);
  for (int i = 0; i < n; i++) {
    p[i] = (probe){.cpu = cpus[i], .kind = kind, .ms = ms, .start = &start};
    if (pthread_create(&th[i], NULL, run_probe, &p[i]) != 0) sf_die(SF_EXIT_FAILURE, "probe_cpus: pthread_create failed");
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
}

static int print_kind(char *json, size_t len, const char *key, const probe *p, int n)
{
  int at = snprintf(json, len, ", \"%s_gflops\": [", key);
  for (int i = 0; i < n; i++) at += snprintf(json + at, len - (size_t)at, "%s%.1f", i ? ", " : "", p[i].gflops);
  at += snprintf(json + at, len - (size_t)at, "], \"%s_cpu_share\": [", key);
  for (int i = 0; i < n; i++) at += snprintf(json + at, len - (size_t)at, "%s%.3f", i ? ", " : "", p[i].cpu_share);
  return at + snprintf(json + at, len - (size_t)at, "]");
}

static int sane(const probe *p, int n, const char *what)
{
  for (int i = 0; i < n; i++)
    if (!(p[i].gflops > 0 && p[i].gflops < 1e6)) {
      fprintf(stderr, "probe_cpus: %s on CPU %d gave %g GFLOP/s (not pinned, or the clock failed)\n", what, p[i].cpu,
              p[i].gflops);
      return 0;
    }
  return 1;
}

int main(int argc, char **argv)
{
  double ms = 100;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (!strcmp(argv[i], "--ms") && i + 1 < argc) {
      ms = strtod(argv[++i], &end);
      if (*end || !(ms >= 1 && ms <= 10000)) sf_die(SF_EXIT_USAGE, "probe_cpus: --ms expects 1..10000, got '%s'", argv[i]);
    } else
      sf_die(SF_EXIT_USAGE, "probe_cpus: unknown argument '%s' (expected --ms N)", argv[i]);
  }
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) sf_die(SF_EXIT_FAILURE, "probe_cpus: sched_getaffinity failed");
  int cpus[MAX_CPUS], n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < MAX_CPUS; c++)
    if (CPU_ISSET(c, &mask)) cpus[n++] = c;
  const int amx = sf_amx_supported();
  static probe res[NKINDS][MAX_CPUS];
  probe_all(res[FMA], cpus, n, FMA, ms);
  if (amx) probe_all(res[AMX], cpus, n, AMX, ms);
  const char *isa = sf_cpu_isa_name(sf_cpu_isa_active());
  printf("probe_cpus: %d CPUs at once, %.0f ms each; GFLOP/s per CPU (share of the window on the CPU)\n", n, ms);
  printf("  cpu   fma (%s)%s\n", isa, amx ? "          amx (tile products)" : "          amx: not offered");
  for (int i = 0; i < n; i++) {
    printf("  %-4d %8.1f (%.2f)", cpus[i], res[FMA][i].gflops, res[FMA][i].cpu_share);
    if (amx) printf("   %12.1f (%.2f)", res[AMX][i].gflops, res[AMX][i].cpu_share);
    printf("\n");
  }
  char json[64 * MAX_CPUS];
  int at = snprintf(json, sizeof json, "SFBENCH {\"tool\": \"probe_cpus\", \"ms\": %.0f, \"fma_isa\": \"%s\", \"cpus\": [",
                    ms, isa);
  for (int i = 0; i < n; i++) at += snprintf(json + at, sizeof json - (size_t)at, "%s%d", i ? ", " : "", cpus[i]);
  at += snprintf(json + at, sizeof json - (size_t)at, "]");
  at += print_kind(json + at, sizeof json - (size_t)at, "fma", res[FMA], n);
  if (amx) at += print_kind(json + at, sizeof json - (size_t)at, "amx", res[AMX], n);
  printf("%s}\n", json);
  int ok = sane(res[FMA], n, "fma") && (!amx || sane(res[AMX], n, "amx"));
  for (int i = 0; i < n; i++) res[FMA][0].sink += res[FMA][i].sink + res[AMX][i].sink; /* results used */
  return ok && !isnan(res[FMA][0].sink) ? 0 : 1;
}
