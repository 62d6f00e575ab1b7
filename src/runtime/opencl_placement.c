/* Which workers run what when OpenCL workers exist (scaffold/opencl_devices.h): the bitwise
 * placement rule of more_determinism, applied by sf_runtime_init. Codelets register themselves at
 * program start (SF_OPENCL_CODELET in codelets/<op>.c) with the declared exactness of their OpenCL
 * variant; the rule sets each codelet's `where` so that only variants that reproduce the CPU bit for
 * bit may run on an OpenCL worker. The runtime only sees the registered starpu_codelet structs: it
 * never calls into the codelets. */
#include "scaffold/opencl_devices.h"

#include <starpu.h>
#include <stdint.h>

#include "scaffold/common.h"

#define SF_OCL_MAX_CODELETS 64

static struct {
  struct starpu_codelet *cl;
  sf_ocl_exactness e;
  int kept_off; /* the current placement keeps it off OpenCL workers */
} g_cl[SF_OCL_MAX_CODELETS];
static int g_ncl;
static sf_ocl_placement g_place = SF_OCL_PLACE_ANY;

void sf_opencl_register_codelet(struct starpu_codelet *cl, sf_ocl_exactness e)
{
  if (g_ncl >= SF_OCL_MAX_CODELETS) SF_ABORT("more than %d codelets registered with SF_OPENCL_CODELET", g_ncl);
  g_cl[g_ncl].cl = cl;
  g_cl[g_ncl].e = e;
  g_ncl++;
}

int sf_opencl_codelet_count(void) { return g_ncl; }
const char *sf_opencl_codelet_name(int i)
{
  SF_ASSERT(i >= 0 && i < g_ncl);
  return g_cl[i].cl->name;
}
sf_ocl_exactness sf_opencl_codelet_exactness(int i)
{
  SF_ASSERT(i >= 0 && i < g_ncl);
  return g_cl[i].e;
}
int sf_opencl_codelet_kept_off(int i)
{
  SF_ASSERT(i >= 0 && i < g_ncl);
  return g_cl[i].kept_off;
}
sf_ocl_placement sf_opencl_placement(void) { return g_place; }

/* Every kind of worker the codelet has an implementation for (what StarPU derives when where == 0;
 * set explicitly because StarPU computes it only once, at the codelet's first submission). */
static uint32_t full_where(const struct starpu_codelet *cl)
{
  uint32_t w = 0;
  if (cl->cpu_funcs[0]) w |= STARPU_CPU;
  if (cl->cuda_funcs[0]) w |= STARPU_CUDA;
#ifdef STARPU_USE_HIP /* StarPU >= 1.4 */
  if (cl->hip_funcs[0]) w |= STARPU_HIP;
#endif
  if (cl->opencl_funcs[0]) w |= STARPU_OPENCL;
  return w;
}

int sf_opencl_set_placement(sf_ocl_placement p)
{
  int ieee = sf_opencl_ieee_exact(), restricted = 0;
  for (int i = 0; i < g_ncl; i++) {
    struct starpu_codelet *cl = g_cl[i].cl;
    uint32_t all = full_where(cl);
    int exact = g_cl[i].e == SF_OCL_EXACT || (g_cl[i].e == SF_OCL_EXACT_IEEE && ieee);
    int off_opencl = p != SF_OCL_PLACE_ANY && !exact && (all & ~(uint32_t)STARPU_OPENCL);
    g_cl[i].kept_off = off_opencl;
    if (off_opencl) { /* CPU (and CUDA or HIP, whose own exactness is not this rule's business) */
      cl->where = all & ~(uint32_t)STARPU_OPENCL;
      restricted++;
    } else if (p == SF_OCL_PLACE_SPLIT && (all & STARPU_OPENCL)) {
      cl->where = STARPU_OPENCL;
    } else {
      cl->where = all;
    }
  }
  g_place = p;
  return restricted;
}
