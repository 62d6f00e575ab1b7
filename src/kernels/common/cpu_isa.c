/* Run-time choice of the CPU kernel set (scaffold/cpu_isa.h) and the OpenBLAS core report. */
#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"
#include "scaffold/common.h"
#include "scaffold/switches.h"

#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const isa_names[] = {"none", "c", "avx2", "avx512"};

const char *sf_cpu_isa_name(sf_cpu_isa isa)
{
  return (unsigned)isa < sizeof isa_names / sizeof *isa_names ? isa_names[isa] : "?";
}

int sf_cpu_isa_parse(const char *name)
{
  for (int i = 0; i < (int)(sizeof isa_names / sizeof *isa_names); i++)
    if (name && !strcmp(name, isa_names[i])) return i;
  return -1;
}

sf_cpu_isa sf_cpu_isa_supported(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return SF_ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SF_ISA_AVX2;
#endif
  return SF_ISA_C;
}

static sf_cpu_isa isa_active;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

static void isa_decide(void)
{
  const char *direct = sf_switch("SF_CONV_DIRECT"), *want = sf_switch("SF_CPU_ISA");
  sf_cpu_isa best = sf_cpu_isa_supported();
  isa_active = best;
  if (direct && !strcmp(direct, "0")) {
    isa_active = SF_ISA_NONE;
    return;
  }
  if (!want) return;
  int req = sf_cpu_isa_parse(want); /* the switch table admits only the sets' names */
  SF_ASSERT(req >= 0);
  if (req > (int)best)
    fprintf(stderr, "warning: SF_CPU_ISA=%s asks for more than this CPU has; using %s\n", want,
            sf_cpu_isa_name(best));
  else
    isa_active = (sf_cpu_isa)req;
}

sf_cpu_isa sf_cpu_isa_active(void) /* called by every worker thread: decided once */
{
  pthread_once(&isa_once, isa_decide);
  return isa_active;
}

sf_cpu_isa sf_cpu_isa_set_for_testing(sf_cpu_isa isa)
{
  sf_cpu_isa best = sf_cpu_isa_supported();
  pthread_once(&isa_once, isa_decide);
  isa_active = isa > best ? best : isa;
  return isa_active;
}

const char *sf_blas_core_name(void) { return openblas_get_corename(); }

int sf_blas_core_is_generic(void)
{
  static const char *const generic[] = {"Prescott", "Core2", "Katmai", "Coppermine", "Northwood",
                                        "Banias",   "Athlon", "Opteron", "Generic"};
  const char *core = openblas_get_corename();
  for (size_t i = 0; i < sizeof generic / sizeof *generic; i++)
    if (core && !strcasecmp(core, generic[i])) return 1;
  return 0;
}

const char *sf_blas_generic_warning(char *buf, size_t len)
{
  if (!sf_blas_core_is_generic()) return NULL;
  sf_cpu_isa has = sf_cpu_isa_supported();
  const char *core = sf_blas_core_name();
  snprintf(buf, len,
           "OpenBLAS core %s: this OpenBLAS does not know this CPU (or OPENBLAS_CORETYPE chose a generic core) and "
           "runs its generic kernels: every path still on sgemm (the im2col convolutions the direct kernels do not "
           "cover, and all of them with SF_CONV_DIRECT=0) runs several times slower than it could%s",
           core ? core : "?",
           has == SF_ISA_AVX512 ? "; this CPU has AVX-512: try OPENBLAS_CORETYPE=SkylakeX (or Haswell)"
           : has == SF_ISA_AVX2 ? "; this CPU has AVX2 and FMA: try OPENBLAS_CORETYPE=Haswell"
                                : "; set OPENBLAS_CORETYPE to the closest core this OpenBLAS knows");
  return buf;
}
