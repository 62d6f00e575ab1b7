/* Shared StarPU glue for the codelets in codelets/<op>.c: the SF_CODELET macro that emits a codelet and
 * its history-based perfmodel from one token, handle/interface accessors, and the one submission
 * function every insert_task_* goes through (access modes as a descriptor array, so any number of
 * buffers works on StarPU 1.3: nbuffers = STARPU_VARIABLE_NBUFFERS + STARPU_DATA_MODE_ARRAY). */
#ifndef SF_CODELET_COMMON_H
#define SF_CODELET_COMMON_H

#include <starpu.h>
#include <stdint.h>

#include "scaffold/codelets_cuda.h"
#include "scaffold/common.h"
#include "scaffold/host_exec.h"
#include "scaffold/perfmodels.h"
#include "scaffold/tasks.h"

#include <sf_perfmodel_ids.h> /* SF_PMID_<op>, SF_PMFAM_<op>: generated in <build>/generated (cmake/PerfmodelIds.cmake) */

#define SF_H(h) ((starpu_data_handle_t)(h))

/* GPU / OpenCL implementations are added per codelet; pass SF_NONE when there is none. The gpu
 * argument names the wrapper in codelets/cuda_glue/<op>_cuda.c (sf_<op>_cuda); it fills the codelet's
 * CUDA slot when StarPU has CUDA and the CUDA kernels are linked, and its HIP slot when StarPU has HIP
 * (StarPU >= 1.4) and the HIP kernels are linked: the same wrapper source, compiled for HIP
 * (cuda_glue.h, cmake/Cuda.cmake; one GPU vendor per build, as both kernel libraries define the same
 * sf_cuda_* launchers). Otherwise (Debian's StarPU) the argument is dropped, so it may name a function
 * that is only compiled with a GPU. tests/gpu/test_codelet_slots*.c check the expansion. */
#define SF_NONE NULL
#if defined(STARPU_USE_CUDA) && defined(SF_HAVE_CUDA_CODELETS) /* kernels linked: cmake/Cuda.cmake */
#define SF_CL_CUDA_(f) .cuda_funcs = {f}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define SF_CL_CUDA_(f)
#endif
#if defined(STARPU_USE_HIP) && defined(SF_HAVE_HIP_CODELETS) /* StarPU >= 1.4: cmake/Cuda.cmake */
#define SF_CL_HIP_(f) .hip_funcs = {f}, .hip_flags = {STARPU_HIP_ASYNC},
#else
#define SF_CL_HIP_(f)
#endif
#ifdef STARPU_USE_OPENCL
#define SF_CL_OPENCL_(f) .opencl_funcs = {f}, .opencl_flags = {STARPU_OPENCL_ASYNC},
#else
#define SF_CL_OPENCL_(f)
#endif

/* StarPU's SimGrid mode (scaffold-sim, docs/simulation.md) simulates CUDA and OpenCL workers on a machine
 * that has neither: a codelet declares an implementation with the placeholder (void *)1, which StarPU never
 * calls there (it sleeps for the perfmodel's time instead). SF_CL_SIMGRID_ marks the CUDA and OpenCL slots
 * of every codelet that has a real implementation in a GPU / OpenCL build, i.e. whose argument is not
 * SF_NONE (token test: SF_SIM_PROBE_SF_NONE expands to two arguments, any other name to one). */
#ifdef STARPU_SIMGRID
#define SF_SIM_PROBE_SF_NONE ~, 0
#define SF_SIM_SECOND_(a, b, ...) b
#define SF_SIM_HAS_(...) SF_SIM_SECOND_(__VA_ARGS__, 1, ~)
#define SF_SIM_SLOT_(has) ((has) ? (void *)1 : NULL)
#define SF_CL_SIMGRID_(gpu_probe, opencl_probe)                                                      \
  .cuda_funcs = {SF_SIM_SLOT_(SF_SIM_HAS_(gpu_probe))}, .opencl_funcs = {SF_SIM_SLOT_(SF_SIM_HAS_(opencl_probe))},
#else
#define SF_CL_SIMGRID_(gpu_probe, opencl_probe)
#endif

/* SF_CODELET(conv3d_fwd, openblas_v1, cpu, gpu, opencl) defines
 *   static struct starpu_perfmodel sf_model_conv3d_fwd  (history-based, symbol
 *                                                        "sf_conv3d_fwd_openblas_v1_<id>")
 *   a constructor that registers the symbol with the runtime (sf_perfmodels_register: the stale-class
 *                                                        report of scaffold/perfmodels.h)
 *   static struct starpu_codelet    cl_conv3d_fwd       (name "sf_conv3d_fwd", variable buffers)
 * <id> is the identity of the codelet's family, SF_PMID_<op>: 8 hex digits of a hash of the family's
 * sources, generated at every build (cmake/PerfmodelFamilies.cmake, the one table of codelets and
 * families; cmake/PerfmodelIds.cmake), so a model calibrated for other kernels is never reused and a
 * shipped class that predates a kernel change is reported stale (docs/perfmodels.md). A new codelet
 * must be added to that table (SF_PMID_<op> undefined otherwise). The version token is for what the
 * hash cannot see (e.g. a change in a library the kernel calls); name the BLAS vendor for BLAS-backed
 * CPU paths. */
#define SF_CODELET(op, version, cpu, gpu, opencl)                                                     \
  static struct starpu_perfmodel sf_model_##op = {.type = STARPU_HISTORY_BASED,                      \
                                                  .symbol = "sf_" #op "_" #version "_" SF_PMID_##op}; \
  __attribute__((constructor)) static void sf_pm_register_##op(void)                                 \
  {                                                                                                   \
    sf_perfmodels_register(#op, SF_PMFAM_##op, sf_model_##op.symbol);                                 \
  }                                                                                                   \
  static struct starpu_codelet cl_##op = {.cpu_funcs = {cpu},                                         \
                                            .cpu_funcs_name = {#cpu},                                 \
                                            SF_CL_CUDA_(gpu) SF_CL_HIP_(gpu) SF_CL_OPENCL_(opencl)    \
                                            SF_CL_SIMGRID_(SF_SIM_PROBE_##gpu, SF_SIM_PROBE_##opencl) \
                                            .nbuffers = STARPU_VARIABLE_NBUFFERS,                     \
                                            .model = &sf_model_##op,                                  \
                                            .name = "sf_" #op}

/* ---- submission ---- */
typedef struct sf_buf {
  struct starpu_data_descr d[256]; /* >= slabs + a few, and >= parameter tensors (clip) */
  int n;
} sf_buf;

static inline void sf_buf_add(sf_buf *b, sf_handle h, enum starpu_data_access_mode m)
{
  SF_ASSERT(h != NULL && b->n < (int)(sizeof b->d / sizeof b->d[0]));
  b->d[b->n].handle = SF_H(h);
  b->d[b->n].mode = m;
  b->n++;
}

/* Submits cl with the buffers of b and a heap-allocated args struct (freed by the runtime), declaring
 * `flops`: to StarPU, or under runtime openmp / sequential as the codelet's CPU function on the
 * handles' host memory (scaffold/host_exec.h). Dies with the codelet name if StarPU refuses the task. */
void sf_submit(struct starpu_codelet *cl, const sf_topt *o, void *args, size_t args_size, const sf_buf *b,
               double flops);
/* A heap copy of an args struct for STARPU_CL_ARGS. */
void *sf_args_dup(const void *args, size_t size);
/* The mode for a weight-gradient buffer under sf_accum. */
enum starpu_data_access_mode sf_accum_mode(sf_accum acc);

/* ---- interface accessors (inside codelet functions) ---- */
static inline float *sf_blk_f(void *iface) { return (float *)STARPU_BLOCK_GET_PTR(iface); }
static inline int sf_blk_nz(void *iface) { return (int)STARPU_BLOCK_GET_NZ(iface); }
static inline int sf_blk_ny(void *iface) { return (int)STARPU_BLOCK_GET_NY(iface); }
/* voxels of a block holding C channels per voxel */
static inline size_t sf_blk_vox(void *iface, int C)
{
  return (size_t)STARPU_BLOCK_GET_NX(iface) / (size_t)C * STARPU_BLOCK_GET_NY(iface) * STARPU_BLOCK_GET_NZ(iface);
}
/* W extent of a block holding C channels per voxel */
static inline int sf_blk_w(void *iface, int C) { return (int)(STARPU_BLOCK_GET_NX(iface) / (uint32_t)C); }
/* first / last depth plane of a block slab (halo planes for the neighbouring slab) */
static inline const float *sf_blk_first_plane(void *iface) { return sf_blk_f(iface); }
static inline const float *sf_blk_last_plane(void *iface)
{
  return sf_blk_f(iface) + (size_t)(STARPU_BLOCK_GET_NZ(iface) - 1) * STARPU_BLOCK_GET_LDZ(iface);
}
static inline float *sf_vec_f(void *iface) { return (float *)STARPU_VECTOR_GET_PTR(iface); }
static inline double *sf_vec_d(void *iface) { return (double *)STARPU_VECTOR_GET_PTR(iface); }
static inline size_t sf_vec_n(void *iface) { return STARPU_VECTOR_GET_NX(iface); }
/* The buffer count of the running task (variable-buffer codelets): a host executor's task
 * (scaffold/host_exec.h), else StarPU's. */
static inline int sf_task_nbuffers(void)
{
  int n = sf_host_nbuffers();
  return n ? n : (int)STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
}

#endif
