/* What every bf16 kernel shares (the 3x3x3, transposed and 1x1x1 convolutions and the AMX GEMM):
 * fp32 to bf16 with round to nearest even (the AVX-512 BF16 instruction, so every kernel and test
 * rounds alike), what this CPU supports (AVX512_BF16, AMX with the OS's permission), and the bf16
 * engine of `torch_amp: 1` (scaffold/cpu_isa.h), decided once from the CPU and SF_CPU_BF16. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <immintrin.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/switches.h"

#include "bf16_internal.h"

SF_BF16_TARGET void sf_bf16_from_floats(sf_bf16 *dst, const float *src, size_t n)
{
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + i + 16), _mm512_loadu_ps(src + i));
    _mm512_storeu_si512(dst + i, (__m512i)v);
  }
  for (; i < n; i += 16) { /* the tail, masked: the same instruction rounds it */
    unsigned left = n - i < 16 ? (unsigned)(n - i) : 16;
    __mmask16 m = (__mmask16)((1u << left) - 1);
    __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i));
    _mm256_mask_storeu_epi16(dst + i, m, (__m256i)v);
  }
}

int sf_cpu_bf16_supported(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
#else
  return 0;
#endif
}

void sf_bf16_round_floats(float *dst, const float *src, size_t n)
{
  SF_ASSERT(sf_cpu_bf16_supported());
  sf_bf16 tmp[256];
  for (size_t i = 0; i < n; i += 256) {
    size_t m = n - i < 256 ? n - i : 256;
    sf_bf16_from_floats(tmp, src + i, m);
    for (size_t j = 0; j < m; j++) {
      uint32_t bits = (uint32_t)tmp[j] << 16;
      memcpy(dst + i + j, &bits, sizeof bits);
    }
  }
}

/* AMX needs CPUID's AMX-TILE and AMX-BF16 bits, the OS's XSAVE support of the tile state, and, on Linux, a
 * per-process permission to use it (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) */
#define SF_ARCH_REQ_XCOMP_PERM 0x1023
#define SF_XFEATURE_XTILEDATA 18
static int amx_ok;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_probe(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && defined(SYS_arch_prctl)
  unsigned a, b, c, d;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
  int tile = (d >> 24) & 1, bf16 = (d >> 22) & 1;
  amx_ok = tile && bf16 && sf_cpu_bf16_supported() &&
           syscall(SYS_arch_prctl, SF_ARCH_REQ_XCOMP_PERM, SF_XFEATURE_XTILEDATA) == 0;
#endif
}

int sf_amx_supported(void)
{
  pthread_once(&amx_once, amx_probe);
  return amx_ok;
}

static const char *const engine_names[] = {"none", "vdpbf16ps", "amx"};

const char *sf_bf16_engine_name(sf_bf16_engine e)
{
  return (unsigned)e < sizeof engine_names / sizeof *engine_names ? engine_names[e] : "?";
}

sf_bf16_engine sf_bf16_engine_supported(void)
{
  return sf_amx_supported() ? SF_BF16_AMX : sf_cpu_bf16_supported() ? SF_BF16_VDPBF16PS : SF_BF16_NONE;
}

static sf_bf16_engine engine_active;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_decide(void)
{
  const char *want = sf_switch("SF_CPU_BF16");
  sf_bf16_engine best = sf_bf16_engine_supported();
  engine_active = best;
  if (!want) return;
  int req = -1; /* the switch table admits only the engines' names */
  for (int i = 0; i < (int)(sizeof engine_names / sizeof *engine_names); i++)
    if (!strcmp(want, engine_names[i])) req = i;
  SF_ASSERT(req >= 0);
  if (req > (int)best)
    fprintf(stderr, "warning: SF_CPU_BF16=%s asks for more than this CPU has; using %s\n", want,
            sf_bf16_engine_name(best));
  else
    engine_active = (sf_bf16_engine)req;
}

sf_bf16_engine sf_bf16_engine_active(void)
{
  pthread_once(&engine_once, engine_decide);
  return engine_active;
}

sf_bf16_engine sf_bf16_engine_set_for_testing(sf_bf16_engine e)
{
  sf_bf16_engine best = sf_bf16_engine_supported();
  pthread_once(&engine_once, engine_decide);
  engine_active = e > best ? best : e;
  return engine_active;
}
