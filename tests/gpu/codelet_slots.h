/* Shared by the two translation units of the codelet_slots test (test_codelet_slots.c): the probe
 * functions every SF_CODELET expansion names, and the text of an expansion. */
#ifndef SF_TEST_CODELET_SLOTS_H
#define SF_TEST_CODELET_SLOTS_H

#include <starpu.h>

void probe_cpu(void *buffers[], void *cl_arg);
void probe_gpu(void *buffers[], void *cl_arg);
void probe_ocl(void *buffers[], void *cl_arg);

/* The probe's perfmodel identity and family, as cmake/PerfmodelIds.cmake defines them for a real codelet. */
#define SF_PMID_probe "00000000"
#define SF_PMFAM_probe "probe"

/* The macro-expanded text of the arguments, as a string literal. */
#define SLOTS_STR_(...) #__VA_ARGS__
#define SLOTS_XSTR(...) SLOTS_STR_(__VA_ARGS__)

/* codelet_slots_hip.c: SF_CODELET(probe, v1, probe_cpu, probe_gpu, probe_ocl) expanded as in a build
 * whose StarPU has HIP and whose HIP kernels are linked; and, where the installed StarPU headers have
 * the HIP fields (StarPU >= 1.4, STARPU_HIP_ASYNC defined), that codelet instantiated (NULL otherwise). */
extern const char *slots_hip_text;
extern const char *slots_hip_flag_text; /* STARPU_HIP_ASYNC, expanded as those headers define it */
extern const struct starpu_codelet *slots_hip_codelet;

#endif
