/* GPU vendor header: the CUDA kernels in src/kernels/cuda/<op>.cu are written once against CUDA runtime
 * names and compile for AMD GPUs with `hipcc -x hip -DSF_USE_HIP`, which maps those names to HIP here
 * (the ggml vendors/hip.h pattern; STYLE-ANCHORS rule 10). The StarPU wrappers of codelets/cuda_glue/
 * (C, compiled for HIP workers with SF_USE_HIP) use it the same way. Only the names the kernels and
 * the wrappers use are mapped.
 * BLAS names live in gpu_blas.h, so files without GEMMs build where hipBLAS is absent (Debian 12). */
#ifndef SF_GPU_VENDOR_H
#define SF_GPU_VENDOR_H

#ifdef SF_USE_HIP
#include <hip/hip_runtime.h>

#define cudaStream_t hipStream_t
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorNotSupported hipErrorNotSupported
#define cudaGetLastError hipGetLastError
#define cudaGetErrorString hipGetErrorString
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMallocAsync hipMallocAsync
#define cudaFreeAsync hipFreeAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpy2DAsync hipMemcpy2DAsync
#define cudaStreamSynchronize hipStreamSynchronize
#define SF_GPU_VENDOR "HIP"
#else
#include <cuda_runtime.h>
#define SF_GPU_VENDOR "CUDA"
#endif

#endif
