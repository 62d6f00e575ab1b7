/* OpenCL device start-up for StarPU's OpenCL workers (src/runtime/opencl_devices.c,
 * src/runtime/opencl_placement.c): the environment StarPU needs to use a CPU OpenCL device, the
 * kernel sources embedded at build time (codelets/opencl/<family>.cl, cmake/OpenCL.cmake) and their
 * programs built for every OpenCL worker's device, the kernel objects the launchers use, and the
 * bitwise placement rule of more_determinism. The runtime's part of OpenCL: codelets register
 * themselves and their kernels here (constructors), the runtime never calls into them. The launchers
 * and cl_arg layouts are the codelet layer's (scaffold/opencl.h). */
#ifndef SF_OPENCL_DEVICES_H
#define SF_OPENCL_DEVICES_H

#include <stddef.h>

/* Compiles every kernel source for every OpenCL worker's device. Call after starpu_init (the
 * launchers call it lazily otherwise). Returns the number of devices prepared (0 when StarPU has no
 * OpenCL worker). Exits with status 1 and a message naming the source file, the device and the
 * compiler's build log when a source does not compile, and when a device lacks double precision
 * (cl_khr_fp64). Idempotent. */
int sf_opencl_init(void);
/* Releases kernels and programs; call after the last task finished, before starpu_shutdown. */
void sf_opencl_shutdown(void);

/* Before starpu_init, when OpenCL workers are wanted: unless the user set STARPU_OPENCL_ON_CPUS or
 * STARPU_OPENCL_ONLY_ON_CPUS, and no GPU / accelerator OpenCL device is visible, sets both to 1 so
 * that StarPU uses a CPU OpenCL device (PoCL: a second memory node on a CPU-only machine; StarPU
 * ignores CPU OpenCL devices by default). A machine with an OpenCL GPU keeps StarPU's default (GPUs
 * and accelerators only). Returns 1 when it set them, 0 otherwise. StarPU 1.3 enumerates OpenCL
 * devices once per process, at the first starpu_init: a process that starts StarPU several times
 * (tests) must call this before the first start if any later one wants OpenCL workers. */
int sf_opencl_prepare_env(void);

/* ---- bitwise placement rule (more_determinism with CPU and OpenCL workers) ----
 * Each codelet with an OpenCL variant declares, next to its SF_CODELET line, whether that variant
 * reproduces the CPU function's float results bit for bit:
 *   SF_OCL_EXACT       copies, selections, exact counts, sums of doubles in a fixed order: bitwise
 *                      on any conforming device (double denormals are mandatory in OpenCL);
 *   SF_OCL_EXACT_IEEE  float arithmetic in the CPU's order with the CPU's explicit fmaf: bitwise when
 *                      every OpenCL device has fp32 denormals and correctly rounded divide / sqrt
 *                      (the kernels are built with -cl-fp32-correctly-rounded-divide-sqrt then);
 *   SF_OCL_INEXACT     anything else: OpenBLAS GEMM on the CPU (blocked summation order) against a
 *                      direct loop, libm exp/log against the device's, or a*b+c products that GCC
 *                      contracts into fma on the CPU (gnu11 implies -ffp-contract=fast, and
 *                      -march=native has FMA) while the kernels keep FP_CONTRACT OFF.
 * Every .cl file keeps `#pragma OPENCL FP_CONTRACT OFF`, so the device never fuses on its own. */
typedef enum { SF_OCL_EXACT = 0, SF_OCL_EXACT_IEEE = 1, SF_OCL_INEXACT = 2 } sf_ocl_exactness;
struct starpu_codelet;
/* Registers a codelet with its declared exactness (SF_OPENCL_CODELET in scaffold/opencl.h does it
 * from a constructor); the rule below then sets its `where`. */
void sf_opencl_register_codelet(struct starpu_codelet *cl, sf_ocl_exactness e);
typedef enum {
  SF_OCL_PLACE_ANY = 0,     /* every implementation may run on every worker (the default) */
  SF_OCL_PLACE_BITWISE = 1, /* codelets whose OpenCL variant is not bitwise the CPU one (INEXACT, and
                               EXACT_IEEE on a device without denormals / correct rounding) stay off
                               OpenCL workers (CPU, or CUDA when present): a CPU + OpenCL run then
                               equals a CPU-only run bit for bit */
  SF_OCL_PLACE_SPLIT = 2,   /* tests: as BITWISE, and every other registered codelet runs on OpenCL
                               workers only (so each bitwise claim is exercised) */
} sf_ocl_placement;
/* Sets each registered codelet's `where` for the placement p (StarPU must be running, no task in
 * flight; call after sf_opencl_init). sf_runtime_init applies SF_OCL_PLACE_BITWISE when
 * more_determinism is on and StarPU has OpenCL workers and CPU (or CUDA) workers, else ANY. Returns
 * the number of codelets kept off OpenCL workers. */
int sf_opencl_set_placement(sf_ocl_placement p);
sf_ocl_placement sf_opencl_placement(void);
/* The registered codelets: count, codelet name ("sf_conv3d_fwd"), declared exactness, and whether
 * the current placement keeps it off OpenCL workers (on CPU, or CUDA, workers only). */
int sf_opencl_codelet_count(void);
const char *sf_opencl_codelet_name(int i);
sf_ocl_exactness sf_opencl_codelet_exactness(int i);
int sf_opencl_codelet_kept_off(int i);
/* 1 when every OpenCL device prepared by sf_opencl_init has fp32 denormals and correctly rounded
 * divide / sqrt (so SF_OCL_EXACT_IEEE variants are bitwise); 1 as well with no device. */
int sf_opencl_ieee_exact(void);

/* The kernel sources embedded at build time: count, file name ("conv3d.cl") and text. */
int sf_opencl_source_count(void);
const char *sf_opencl_source_name(int i);
const char *sf_opencl_source_text(int i);

/* The kernels the OpenCL launchers use, registered before sf_opencl_init (codelets/opencl registers
 * its list from a constructor): kernel function name and the source file holding it ("conv3d.cl").
 * sf_opencl_init checks that each exists in its source on every device. Returns the kernel's id. */
int sf_opencl_kernel_register(const char *kernel, const char *source);

#endif /* SF_OPENCL_DEVICES_H */

/* ---- for the launchers, when the OpenCL headers were included first (<starpu_opencl.h>) ---- */
#if defined(CL_SUCCESS) && !defined(SF_OPENCL_DEVICES_CL_H)
#define SF_OPENCL_DEVICES_CL_H
/* The running OpenCL worker's kernel object for a registered kernel (created at first use; builds
 * the programs first if sf_opencl_init has not run), and in *wg the work-group size to launch it
 * with. Dies naming the kernel when OpenCL refuses. */
cl_kernel sf_opencl_kernel(int id, size_t *wg);
/* Dies with what failed and the OpenCL error name when err != CL_SUCCESS. */
void sf_opencl_check(cl_int err, const char *what, const char *detail);
#endif
