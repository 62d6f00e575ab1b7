/* SF_CODELET as a build with HIP codelets expands it (STARPU_USE_HIP from a StarPU >= 1.4 built with
 * HIP, SF_HAVE_HIP_CODELETS from cmake/Cuda.cmake), compiled against whatever StarPU is installed: the
 * two macros are defined after <starpu.h>, so the installed headers are read as they are (Debian's 1.3
 * knows nothing of HIP) and only codelet_common.h sees HIP. See test_codelet_slots.c. */
#include "codelet_slots.h"

#ifndef STARPU_USE_HIP
#define STARPU_USE_HIP 1
#endif
#ifndef SF_HAVE_HIP_CODELETS
#define SF_HAVE_HIP_CODELETS 1
#endif
#include "codelet_common.h"

const char *slots_hip_text = SLOTS_XSTR(SF_CODELET(probe, v1, probe_cpu, probe_gpu, probe_ocl));

#ifdef STARPU_HIP_ASYNC /* the headers have struct starpu_codelet's hip slots: instantiate the codelet */
SF_CODELET(probe, v1, probe_cpu, probe_gpu, probe_ocl);
const struct starpu_codelet *slots_hip_codelet = &cl_probe;
const char *slots_hip_flag_text = SLOTS_XSTR(STARPU_HIP_ASYNC);
#else
const struct starpu_codelet *slots_hip_codelet = NULL;
const char *slots_hip_flag_text = "STARPU_HIP_ASYNC";
#endif
