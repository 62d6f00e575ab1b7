/* What SF_CODELET (codelets/codelet_common.h) puts in a codelet's implementation slots: the gpu
 * argument fills the CUDA slot when StarPU has CUDA and the CUDA kernels are linked, the HIP slot when
 * StarPU has HIP (>= 1.4) and the HIP kernels are linked, neither otherwise; the opencl argument fills
 * the OpenCL slot when StarPU has OpenCL. Checked two ways:
 *  - this build's codelet, instantiated: each slot holds its function, or NULL, as this build's
 *    configuration says;
 *  - the expansion of a build with HIP codelets (codelet_slots_hip.c), which Debian's StarPU 1.3
 *    cannot instantiate (its struct starpu_codelet has no HIP slots): as text, it must be this build's
 *    expansion plus exactly ".hip_funcs = {probe_gpu}, .hip_flags = {STARPU_HIP_ASYNC},", the field and
 *    flag names of StarPU 1.4's starpu_task.h; where the installed headers have those fields, it is
 *    also instantiated and its fields read.
 * Not checked here: that the wrappers compile and run for HIP (codelets/cuda_glue/ with SF_USE_HIP),
 * which needs a StarPU built with HIP. */
#include <stdlib.h>
#include <string.h>

#include "codelet_common.h"
#include "codelet_slots.h"
#include "testutil.h"

void probe_cpu(void *buffers[], void *cl_arg) { (void)buffers, (void)cl_arg; }
void probe_gpu(void *buffers[], void *cl_arg) { (void)buffers, (void)cl_arg; }
void probe_ocl(void *buffers[], void *cl_arg) { (void)buffers, (void)cl_arg; }

SF_CODELET(probe, v1, probe_cpu, probe_gpu, probe_ocl);
static const char *build_text = SLOTS_XSTR(SF_CODELET(probe, v1, probe_cpu, probe_gpu, probe_ocl));

#if defined(STARPU_USE_CUDA) && defined(SF_HAVE_CUDA_CODELETS)
#define BUILD_HAS_CUDA_SLOT 1
#else
#define BUILD_HAS_CUDA_SLOT 0
#endif
#if defined(STARPU_USE_HIP) && defined(SF_HAVE_HIP_CODELETS)
#define BUILD_HAS_HIP_SLOT 1
#else
#define BUILD_HAS_HIP_SLOT 0
#endif
#ifdef STARPU_USE_OPENCL
#define BUILD_HAS_OPENCL_SLOT 1
#else
#define BUILD_HAS_OPENCL_SLOT 0
#endif

/* s without blanks (the preprocessor's spacing of a stringized expansion is not the source's) */
static char *squeeze(const char *s)
{
  char *out = malloc(strlen(s) + 1), *o = out;
  for (; *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\n') *o++ = *s;
  *o = 0;
  return out;
}

/* this build's codelet: which slots are filled */
static void check_build_codelet(void)
{
  SF_CHECK(cl_probe.cpu_funcs[0] == probe_cpu, "cpu slot does not hold the cpu argument");
  SF_CHECK((cl_probe.cuda_funcs[0] == probe_gpu) == BUILD_HAS_CUDA_SLOT,
           "cuda slot %s the gpu argument; this build %s CUDA codelets", cl_probe.cuda_funcs[0] ? "holds" : "lacks",
           BUILD_HAS_CUDA_SLOT ? "has" : "has no");
  SF_CHECK((cl_probe.opencl_funcs[0] == probe_ocl) == BUILD_HAS_OPENCL_SLOT,
           "opencl slot %s the opencl argument; this StarPU %s OpenCL", cl_probe.opencl_funcs[0] ? "holds" : "lacks",
           BUILD_HAS_OPENCL_SLOT ? "has" : "has no");
#ifdef STARPU_HIP_ASYNC /* StarPU >= 1.4 */
  SF_CHECK((cl_probe.hip_funcs[0] == probe_gpu) == BUILD_HAS_HIP_SLOT,
           "hip slot %s the gpu argument; this build %s HIP codelets", cl_probe.hip_funcs[0] ? "holds" : "lacks",
           BUILD_HAS_HIP_SLOT ? "has" : "has no");
#endif
  printf("this build: cpu slot, cuda slot %s, hip slot %s, opencl slot %s\n", BUILD_HAS_CUDA_SLOT ? "yes" : "no",
         BUILD_HAS_HIP_SLOT ? "yes" : "no", BUILD_HAS_OPENCL_SLOT ? "yes" : "no");
}

/* the HIP expansion as text: this build's expansion plus the hip slot, nothing else */
static void check_hip_text(void)
{
  char *hip = squeeze(slots_hip_text), *build = squeeze(build_text), *flag = squeeze(slots_hip_flag_text);
  char slot[256];
  snprintf(slot, sizeof slot, ".hip_funcs={probe_gpu},.hip_flags={%s},", flag);
  char *at = strstr(hip, slot);
  SF_CHECK(at != NULL, "the HIP expansion has no \"%s\": %s", slot, slots_hip_text);
  if (at) {
    if (!BUILD_HAS_HIP_SLOT) memmove(at, at + strlen(slot), strlen(at + strlen(slot)) + 1);
    SF_CHECK(strcmp(hip, build) == 0, "the HIP expansion differs from this build's by more than the hip slot:\n  hip:   %s\n  build: %s",
             slots_hip_text, build_text);
  }
  SF_CHECK(strstr(build, ".hip_funcs") == NULL || BUILD_HAS_HIP_SLOT, "this build's expansion has a hip slot: %s",
           build_text);
  printf("HIP expansion: %s\n", slots_hip_text);
  free(hip), free(build), free(flag);
}

/* the HIP expansion instantiated, where the headers allow it */
static void check_hip_codelet(void)
{
  if (!slots_hip_codelet) {
    printf("HIP codelet not instantiated: StarPU %d.%d's struct starpu_codelet has no hip slots (checked as text "
           "only)\n",
           STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION);
    return;
  }
#ifdef STARPU_HIP_ASYNC
  SF_CHECK(slots_hip_codelet->hip_funcs[0] == probe_gpu, "HIP codelet: hip slot does not hold the gpu argument");
  SF_CHECK(slots_hip_codelet->hip_flags[0] == STARPU_HIP_ASYNC, "HIP codelet: hip flags %d, expected STARPU_HIP_ASYNC",
           slots_hip_codelet->hip_flags[0]);
  SF_CHECK(slots_hip_codelet->cpu_funcs[0] == probe_cpu, "HIP codelet: cpu slot does not hold the cpu argument");
#endif
}

int main(void)
{
  check_build_codelet();
  check_hip_text();
  check_hip_codelet();
  return sf_test_end();
}
