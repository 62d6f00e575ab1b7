/* Helpers of the OpenCL kernel tests: a StarPU session with one CPU worker and one OpenCL worker on
 * PoCL (own STARPU_HOME in a temp dir; skip with 77 when no OpenCL device exists), data registration,
 * test codelets that have ONLY an OpenCL implementation (so every task runs on the OpenCL worker and
 * its data crosses memory nodes), and deterministic random fills. */
#ifndef SF_OCL_TESTUTIL_H
#define SF_OCL_TESTUTIL_H

#include <starpu.h>
#include <stddef.h>
#include <stdint.h>

#include "scaffold/opencl.h"
#include "testutil.h"

/* A codelet running fn on OpenCL only, asynchronously, with a variable buffer count. */
#define OCL_CODELET(var, fn)                                                                          \
  static struct starpu_codelet var = {.opencl_funcs = {fn},                                           \
                                      .opencl_flags = {STARPU_OPENCL_ASYNC},                          \
                                      .nbuffers = STARPU_VARIABLE_NBUFFERS,                           \
                                      .name = #fn}

/* Sets the environment (STARPU_HOME temp dir, STARPU_NCPU=1, STARPU_NOPENCL=1,
 * STARPU_OPENCL_ON_CPUS=1, STARPU_OPENCL_ONLY_ON_CPUS=1), starts StarPU and builds the kernels.
 * Returns 0, or 77 after printing why when there is no OpenCL device (the caller returns it). */
int ocl_begin(const char *tag);
/* Shuts StarPU down and removes the temp dir. */
void ocl_end(void);

/* Register contiguous host memory: a block of nz planes of ny rows of nx elements, or a vector. */
starpu_data_handle_t ocl_block(void *p, size_t nx, size_t ny, size_t nz, size_t elemsize);
starpu_data_handle_t ocl_vec(void *p, size_t n, size_t elemsize);
/* Submits one task of cl over n buffers with the given modes and a copy of args (may be NULL). */
void ocl_submit(struct starpu_codelet *cl, const void *args, size_t args_size, int n, const starpu_data_handle_t *h,
                const enum starpu_data_access_mode *m);
/* Waits for every task and unregisters the handles (their data is then back in host memory). */
void ocl_unregister(int n, starpu_data_handle_t *h);

/* Uniform floats in [lo, hi) from a 64-bit LCG; quantized to multiples of q when q > 0 (ties). */
void ocl_fill(float *p, size_t n, uint64_t *seed, float lo, float hi, float q);
float *ocl_floats(size_t n, uint64_t *seed, float lo, float hi); /* malloc'd + filled */
float *ocl_copy(const float *p, size_t n);                        /* malloc'd copy */

/* Slab boundaries of a volume of depth D in n slabs with the given depths (sum must be D). */
void ocl_bounds(int *d0, int n, const int *depths);

#endif
