/* The run header's description of what the CPU kernels run on this machine: the kernel set, whether
 * Winograd takes the wide layers, and OpenBLAS's core. Above both the kernel-set detection
 * (common/cpu_isa.c) and the conv3d entry (conv3d/conv3d.c), so that neither calls the other. */
#include <stdio.h>

#include "scaffold/cpu_isa.h"
#include "scaffold/ops.h"

char *sf_cpu_kernels_describe(char *buf, size_t len)
{
  sf_cpu_isa isa = sf_cpu_isa_active();
  const char *core = sf_blas_core_name();
  if (isa == SF_ISA_NONE)
    snprintf(buf, len, "none (SF_CONV_DIRECT=0: im2col + sgemm everywhere), OpenBLAS core %s", core ? core : "?");
  else
    snprintf(buf, len, "%s direct%s (SF_CPU_ISA to cap), OpenBLAS core %s", sf_cpu_isa_name(isa),
             sf_conv_winograd_active() ? " + Winograd F(2,3) on wide layers, SF_CONV_WINOGRAD=0 for direct only" : "",
             core ? core : "?");
  return buf;
}
