/* What the bf16 convolutions share: the engine choice (scaffold/cpu_isa.h) and the _bf16 entry points that
 * dispatch to it (scaffold/ops.h); fp32 to bf16 with round to nearest even (the AVX-512 BF16 instruction, so
 * every kernel and test rounds alike), the zero-padded bf16 slab (conv3d_bf16_internal.h), and the rounding
 * entry point for tests. */
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

#include "conv3d_bf16_internal.h"
#include "scaffold/switches.h"

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

/* Zero the padding voxels of padded plane e (-1..nd) of xb: the rows above and below the interior rows and the
 * column on each side, which lie between two interior rows as one run of 2 voxels (conv3d_bf16_internal.h) */
static void zero_plane_border(sf_bf16 *xb, int e, int H, int W, int Kp)
{
  const size_t vb = sizeof(sf_bf16) * Kp, prow = (size_t)W + 2;
  sf_bf16 *plane = xb + sf_bf16_pidx(e, -1, -1, H, W) * Kp;
  memset(plane, 0, (prow + 1) * vb); /* row -1, then the left column of row 0 */
  for (int h = 0; h + 1 < H; h++) memset(xb + sf_bf16_pidx(e, h, W, H, W) * Kp, 0, 2 * vb);
  memset(xb + sf_bf16_pidx(e, H - 1, W, H, W) * Kp, 0, (prow + 1) * vb); /* right column of row H-1, row H */
}

void sf_bf16_pad_slab(sf_bf16 *xb, const float *x_lo, const float *x, const float *x_hi, int nd, int H, int W, int K,
                      int Kp)
{
  const size_t plane = (size_t)H * W * K, pplane = (size_t)(H + 2) * (W + 2);
  /* K < Kp leaves channels of every voxel unwritten: all zero first; else only what no row copy writes */
  if (K != Kp) memset(xb, 0, sizeof(sf_bf16) * sf_bf16_pad_voxels(nd, H, W) * Kp);
  else memset(xb + (size_t)(nd + 2) * pplane * Kp, 0, sizeof(sf_bf16) * SF_BF16_MARGIN * Kp);
  for (int e = -1; e <= nd; e++) {
    const float *src = e < 0 ? x_lo : e >= nd ? x_hi : x + (size_t)e * plane;
    if (K == Kp && !src) memset(xb + (size_t)(e + 1) * pplane * Kp, 0, sizeof(sf_bf16) * pplane * Kp);
    if (!src) continue;
    if (K == Kp) zero_plane_border(xb, e, H, W, Kp);
    for (int h = 0; h < H; h++, src += (size_t)W * K) {
      sf_bf16 *dst = xb + sf_bf16_pidx(e, h, 0, H, W) * Kp;
      if (K == Kp) {
        sf_bf16_from_floats(dst, src, (size_t)W * K);
        continue;
      }
      for (int w = 0; w < W; w++) sf_bf16_from_floats(dst + (size_t)w * Kp, src + (size_t)w * K, (size_t)K);
    }
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

void sf_conv3d_forward_bf16(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                            int H, int W, int Cin, int Cout)
{
  switch (sf_bf16_engine_active()) {
  case SF_BF16_AMX: sf_conv3d_amx(y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout, 0); return;
  case SF_BF16_VDPBF16PS: sf_conv3d_vdpbf16(y, x_lo, x, x_hi, w, nd, H, W, Cin, Cout, 0); return;
  default:
    SF_ABORT("bf16 conv3d called without a bf16 engine (no AVX512_BF16, or "
             "SF_CPU_BF16=none)");
  }
}

void sf_conv3d_backward_data_bf16(float *dx, const float *dy_lo, const float *dy, const float *dy_hi, const float *w,
                                  int nd, int H, int W, int Cin, int Cout)
{
  switch (sf_bf16_engine_active()) {
  case SF_BF16_AMX: sf_conv3d_amx(dx, dy_lo, dy, dy_hi, w, nd, H, W, Cin, Cout, 1); return;
  case SF_BF16_VDPBF16PS: sf_conv3d_vdpbf16(dx, dy_lo, dy, dy_hi, w, nd, H, W, Cin, Cout, 1); return;
  default:
    SF_ABORT("bf16 conv3d called without a bf16 engine (no AVX512_BF16, or "
             "SF_CPU_BF16=none)");
  }
}

size_t sf_conv3d_bf16_packed_bytes(int Cin, int Cout, int flip)
{
  return sf_bf16_engine_active() == SF_BF16_AMX ? sf_conv3d_amx_packed_bytes(Cin, Cout, flip) : 0;
}

void sf_conv3d_bf16_pack(void *wfwd, void *wdx, const float *w, int Cin, int Cout)
{
  SF_ASSERT((!wfwd || sf_conv3d_bf16_packed_bytes(Cin, Cout, 0) > 0) &&
            (!wdx || sf_conv3d_bf16_packed_bytes(Cin, Cout, 1) > 0));
  sf_conv3d_amx_pack(wfwd, wdx, w, Cin, Cout);
}

void sf_conv3d_bf16_packed(float *y, const float *x_lo, const float *x, const float *x_hi, const void *wp, int nd,
                           int H, int W, int Cin, int Cout, int flip)
{
  SF_ASSERT(sf_conv3d_bf16_packed_bytes(Cin, Cout, flip) > 0);
  sf_conv3d_amx_packed(y, x_lo, x, x_hi, wp, nd, H, W, Cin, Cout, flip);
}

void sf_conv3d_backward_weights_taps_bf16(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                          const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout)
{
  switch (sf_bf16_engine_active()) {
  case SF_BF16_AMX: sf_conv3d_weights_amx(dw, t0, t1, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout); return;
  case SF_BF16_VDPBF16PS: sf_conv3d_weights_vdpbf16(dw, t0, t1, x_lo, x, x_hi, dy, nd, H, W, Cin, Cout); return;
  default:
    SF_ABORT("bf16 conv3d called without a bf16 engine (no AVX512_BF16, or "
             "SF_CPU_BF16=none)");
  }
}
