/* The CPU kernel set: which vector instruction set the hand-written CPU kernels (direct convolutions,
 * transposed convolutions, 1x1x1 convolutions) run with, decided once per process at run time, so
 * one binary picks the best set on any x86-64 node without depending on OpenBLAS recognising it. */
#ifndef SCAFFOLD_CPU_ISA_H
#define SCAFFOLD_CPU_ISA_H

#include <stddef.h>

typedef enum {
  SF_ISA_NONE = 0, /* direct kernels off (SF_CONV_DIRECT=0): im2col + sgemm everywhere */
  SF_ISA_C,        /* portable C, auto-vectorised by the compiler for the build's target */
  SF_ISA_AVX2,     /* AVX2 + FMA, 8 floats per vector */
  SF_ISA_AVX512,   /* AVX-512F, 16 floats per vector */
} sf_cpu_isa;

/* The set in use: the best the CPU supports (CPUID via __builtin_cpu_supports), lowered by the
 * environment: SF_CONV_DIRECT=0 gives SF_ISA_NONE, SF_CPU_ISA=c|avx2|avx512 caps it (a request
 * above what the CPU has is capped at what it has, with a warning on stderr). Decided once. */
sf_cpu_isa sf_cpu_isa_active(void);
/* Tests and benchmarks only: make `isa` the active set from now on (capped at what the CPU
 * supports; returns the set now active), so one process can compare or check every set. Not
 * thread-safe against kernels running meanwhile. */
sf_cpu_isa sf_cpu_isa_set_for_testing(sf_cpu_isa isa);
/* The best set this CPU supports, ignoring the environment */
sf_cpu_isa sf_cpu_isa_supported(void);
/* "none", "c", "avx2", "avx512" */
const char *sf_cpu_isa_name(sf_cpu_isa isa);
/* Parses a name as above; -1 when unknown */
int sf_cpu_isa_parse(const char *name);

/* The bf16 engine of torch_amp: 1 on CPU workers (the bf16 convolutions, scaffold/ops.h): AMX tiles
 * (TDPBF16PS, Sapphire Rapids and later Xeons, with the OS allowing the tile state), else AVX-512
 * VDPBF16PS (Cooper Lake, Zen 4; on Sapphire/Emerald Rapids it runs at half the fp32 FMA rate), else
 * none (torch_amp then leaves CPU workers in fp32). Decided once; SF_CPU_BF16=none|vdpbf16ps|amx caps it
 * (a request above what the CPU has is capped, with a warning on stderr). */
typedef enum {
  SF_BF16_NONE = 0,
  SF_BF16_VDPBF16PS, /* AVX512_BF16 dot products into zmm accumulators */
  SF_BF16_AMX,       /* AMX-BF16 tile products */
} sf_bf16_engine;
sf_bf16_engine sf_bf16_engine_supported(void);
sf_bf16_engine sf_bf16_engine_active(void);
/* Tests and benchmarks only: make `e` the active engine (capped at what is supported) */
sf_bf16_engine sf_bf16_engine_set_for_testing(sf_bf16_engine e);
/* "none", "vdpbf16ps", "amx" */
const char *sf_bf16_engine_name(sf_bf16_engine e);

/* OpenBLAS's kernel core ("Haswell", "SkylakeX", "Prescott", ...) and whether it is a generic
 * fallback (Prescott, Core2, Katmai, Generic...): then every sgemm path runs far below the CPU's
 * peak, because this OpenBLAS does not know the CPU. */
const char *sf_blas_core_name(void);
int sf_blas_core_is_generic(void);

/* The run header's line for both: "avx2 direct (SF_CPU_ISA to cap), OpenBLAS core Zen", with
 * " + Winograd F(2,3) on wide layers, SF_CONV_WINOGRAD=0 for direct only" after "direct" while
 * sf_conv_winograd_active() (scaffold/ops.h); with the direct kernels off, "none (SF_CONV_DIRECT=0:
 * im2col + sgemm everywhere), OpenBLAS core Zen". */
char *sf_cpu_kernels_describe(char *buf, size_t len);
/* When sf_blas_core_is_generic(): what that costs and what to try (no "warning:" prefix), in buf;
 * otherwise NULL. */
const char *sf_blas_generic_warning(char *buf, size_t len);

#endif
