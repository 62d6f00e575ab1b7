# GPU kernels (src/kernels/cuda/*.cu, interface include/scaffold/ops_cuda.h), included from the top-level
# CMakeLists.txt after the CPU targets and the test suite are defined.
#  - nvcc found (SF_NVCC, cmake/Dependencies.cmake): static library sf_cuda_kernels for sm_90 (H200)
#    plus compute_90 PTX, linked with cudart (shared, like StarPU's), cuBLAS and, when found and
#    SF_CUDNN is ON, cuDNN; and the check program tests/gpu/gpu_kernels_check (CTest gpu_kernels_check,
#    which skips with exit 77 on a machine without a device). No GPU is needed to build.
#  - hipcc found: the same .cu files compiled with `hipcc -x hip -DSF_USE_HIP` into sf_hip_kernels
#    (files with GEMMs only where hipBLAS is installed; cuDNN's file never).
#  - always (with tests and python3): gpu_kernels_emu, the same check program and the same kernel
#    sources run on the CPU through a small CUDA/cuBLAS emulation (tests/gpu/emu; kernels as host
#    threads, small blocks and chunk budgets so every multi-block and multi-chunk path runs), so CI
#    tests the GPU code's logic without a GPU (cuDNN's file excepted).
# nvcc or hipcc missing: a "skipped" line says why. The kernels are linked into sf_runtime (its CUDA
# start-up, src/runtime/runtime_cuda.c, releases their workspaces) and so reach the codelets' CUDA
# (or HIP) wrappers (sf_codelets) above it: see each section.
option(SF_CUDNN "Build the cuDNN engine of the 3x3x3 convolutions when cuDNN is found" ON)
set(SF_CUDA_ARCHS "90-real;90-virtual" CACHE STRING "CUDA architectures of sf_cuda_kernels (H200 = 90; -virtual = PTX)")
set(SF_HIP_ARCH "gfx90a" CACHE STRING "AMD GPU target of the HIP build of the kernels")

file(GLOB SF_GPU_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/kernels/cuda/*.cu)
file(GLOB SF_GPU_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/kernels/cuda/*.h)
list(APPEND SF_GPU_HEADERS ${CMAKE_SOURCE_DIR}/include/scaffold/ops_cuda.h)
set(SF_GPU_CUDNN_SOURCE ${CMAKE_SOURCE_DIR}/src/kernels/cuda/conv3d_cudnn.cu)

set(SF_HAVE_CUDA_KERNELS OFF)
set(SF_CUDA_KERNELS_NOTE "")
if(NOT SF_USE_CUDA)
  set(SF_CUDA_KERNELS_NOTE "skipped (SF_USE_CUDA=OFF)")
elseif(NOT SF_NVCC OR NOT EXISTS "${SF_NVCC}")
  set(SF_CUDA_KERNELS_NOTE "skipped (nvcc not found on PATH or in /usr/local/cuda/bin)")
else()
  if(NOT CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER ${SF_NVCC})
  endif()
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${SF_CUDA_ARCHS})
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)

  set(_sf_cu_sources ${SF_GPU_SOURCES})
  set(_sf_cudnn OFF)
  if(SF_CUDNN)
    find_path(SF_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
    find_library(SF_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib)
    if(SF_CUDNN_INCLUDE_DIR AND SF_CUDNN_LIBRARY)
      set(_sf_cudnn ON)
    endif()
  endif()
  if(NOT _sf_cudnn)
    list(REMOVE_ITEM _sf_cu_sources ${SF_GPU_CUDNN_SOURCE})
  endif()

  add_library(sf_cuda_kernels STATIC ${_sf_cu_sources})
  # The directory's C warning flags (-Wall ...) are not nvcc options: give the target its own.
  set_property(TARGET sf_cuda_kernels PROPERTY COMPILE_OPTIONS "")
  target_compile_options(sf_cuda_kernels PRIVATE -Xcompiler=-Wall,-Wno-unused-parameter -D_GNU_SOURCE)
  target_include_directories(sf_cuda_kernels PUBLIC ${CMAKE_SOURCE_DIR}/include
                             PRIVATE ${CMAKE_SOURCE_DIR}/src/kernels/cuda)
  set_target_properties(sf_cuda_kernels PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                        CUDA_RUNTIME_LIBRARY Shared POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(sf_cuda_kernels PUBLIC CUDA::cudart CUDA::cublas)
  if(_sf_cudnn)
    target_compile_definitions(sf_cuda_kernels PRIVATE SF_HAVE_CUDNN=1)
    target_include_directories(sf_cuda_kernels PRIVATE ${SF_CUDNN_INCLUDE_DIR})
    target_link_libraries(sf_cuda_kernels PUBLIC ${SF_CUDNN_LIBRARY})
  endif()
  set(SF_HAVE_CUDA_KERNELS ON)
  set(SF_CUDA_KERNELS_NOTE "sf_cuda_kernels, nvcc ${CMAKE_CUDA_COMPILER_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}, cuDNN engine: ${_sf_cudnn}")

  # CUDA workers: with a CUDA-enabled StarPU, the codelets' CUDA wrappers (codelets/cuda_glue/ in
  # sf_codelets) and the runtime's CUDA start-up are compiled under SF_HAVE_CUDA_CODELETS, and
  # sf_runtime links the kernels. The archive is linked by file, not as a target, so that the
  # consumers (defined before this file, without CUDA_ARCHITECTURES) stay C executables;
  # cudart/cuBLAS/cuDNN and libstdc++ come along explicitly.
  if(SF_STARPU_HAS_CUDA)
    target_compile_definitions(sf_runtime PUBLIC SF_HAVE_CUDA_CODELETS=1)
    add_dependencies(sf_runtime sf_cuda_kernels)
    target_link_libraries(sf_runtime PUBLIC $<TARGET_FILE:sf_cuda_kernels> CUDA::cudart CUDA::cublas)
    if(_sf_cudnn)
      target_link_libraries(sf_runtime PUBLIC ${SF_CUDNN_LIBRARY})
    endif()
    target_link_libraries(sf_runtime PUBLIC stdc++)
    set(SF_CUDA_KERNELS_NOTE "${SF_CUDA_KERNELS_NOTE}; CUDA codelets ON (sf_runtime links the kernels)")
  else()
    set(SF_CUDA_KERNELS_NOTE "${SF_CUDA_KERNELS_NOTE}; CUDA codelets off (StarPU built without CUDA)")
  endif()

  # The GPU-vs-CPU check (and --bench); links the CPU references of sf_kernels, not StarPU.
  add_executable(gpu_kernels_check ${CMAKE_SOURCE_DIR}/tests/gpu/gpu_kernels_check.c)
  target_link_libraries(gpu_kernels_check PRIVATE sf_cuda_kernels sf_kernels)
  set_target_properties(gpu_kernels_check PROPERTIES LINKER_LANGUAGE CXX)
  if(SF_BUILD_TESTS)
    add_test(NAME gpu_kernels_check COMMAND gpu_kernels_check)
    set_tests_properties(gpu_kernels_check PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77 LABELS "gpu;kernels")
  endif()
endif()
message(STATUS "CUDA kernels  : ${SF_CUDA_KERNELS_NOTE}")

# ---- HIP: the same sources through hipcc -------------------------------------------------------------
set(SF_HAVE_HIP_KERNELS OFF)
if(NOT SF_HIPCC OR NOT EXISTS "${SF_HIPCC}")
  message(STATUS "HIP kernels   : skipped (hipcc not found; Debian package 'hipcc')")
else()
  find_path(SF_HIPBLAS_INCLUDE_DIR hipblas/hipblas.h PATHS /opt/rocm/include /usr/include)
  set(_sf_hip_sources ${SF_GPU_SOURCES})
  list(REMOVE_ITEM _sf_hip_sources ${SF_GPU_CUDNN_SOURCE})
  set(_sf_hip_skipped "")
  if(NOT SF_HIPBLAS_INCLUDE_DIR)
    foreach(src ${_sf_hip_sources})
      file(STRINGS ${src} _uses_blas REGEX "#include \"gpu_blas.h\"")
      if(_uses_blas)
        list(REMOVE_ITEM _sf_hip_sources ${src})
        get_filename_component(_n ${src} NAME)
        list(APPEND _sf_hip_skipped ${_n})
      endif()
    endforeach()
  endif()
  set(_sf_hip_objects "")
  foreach(src ${_sf_hip_sources})
    get_filename_component(_n ${src} NAME_WE)
    set(_obj ${CMAKE_BINARY_DIR}/hip/${_n}.o)
    add_custom_command(OUTPUT ${_obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/hip
      COMMAND ${SF_HIPCC} -x hip --offload-arch=${SF_HIP_ARCH} -DSF_USE_HIP -std=c++17 -O3 -fPIC
              -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src/kernels/cuda -c ${src} -o ${_obj}
      DEPENDS ${src} ${SF_GPU_HEADERS}
      COMMENT "hipcc ${_n}.cu (${SF_HIP_ARCH})" VERBATIM)
    list(APPEND _sf_hip_objects ${_obj})
  endforeach()
  set_source_files_properties(${_sf_hip_objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  add_library(sf_hip_kernels STATIC ${_sf_hip_objects})
  set_target_properties(sf_hip_kernels PROPERTIES LINKER_LANGUAGE CXX)
  set(SF_HAVE_HIP_KERNELS ON)
  if(_sf_hip_skipped)
    string(JOIN ", " _sf_hip_skipped ${_sf_hip_skipped})
    message(STATUS "HIP kernels   : sf_hip_kernels (${SF_HIP_ARCH}); hipBLAS not found, so skipped: ${_sf_hip_skipped}")
  else()
    message(STATUS "HIP kernels   : sf_hip_kernels (${SF_HIP_ARCH})")
  endif()

  # HIP workers: with a StarPU built with HIP and hipBLAS (StarPU >= 1.4, read from starpu_config.h in
  # Dependencies.cmake), sf_codelets compiles the GPU wrappers (codelets/cuda_glue/) for HIP (SF_USE_HIP:
  # gpu_vendor.h maps their CUDA names) and sf_runtime links sf_hip_kernels; SF_CODELET then fills the codelets'
  # hip slots (SF_HAVE_HIP_CODELETS). Not in a build with CUDA codelets (both kernel libraries define
  # the sf_cuda_* launchers), nor when kernel files were skipped (the wrappers call every launcher).
  if(NOT SF_STARPU_HAS_HIP)
    set(_sf_hip_codelets "off (StarPU built without HIP)")
  elseif(SF_STARPU_HAS_CUDA AND SF_HAVE_CUDA_KERNELS)
    set(_sf_hip_codelets "off (the CUDA codelets are on: one GPU vendor per build)")
  elseif(_sf_hip_skipped)
    set(_sf_hip_codelets "off (kernels without hipBLAS are incomplete)")
  elseif(NOT SF_STARPU_HAS_HIPBLAS)
    set(_sf_hip_codelets "off (StarPU built without hipBLAS: no STARPU_USE_HIPBLAS in starpu_config.h)")
  else()
    find_path(SF_HIP_INCLUDE_DIR hip/hip_runtime_api.h PATHS /opt/rocm/include /usr/include)
    find_library(SF_AMDHIP64_LIBRARY amdhip64 PATHS /opt/rocm/lib)
    find_library(SF_HIPBLAS_LIBRARY hipblas PATHS /opt/rocm/lib)
    if(NOT SF_HIP_INCLUDE_DIR OR NOT SF_AMDHIP64_LIBRARY OR NOT SF_HIPBLAS_LIBRARY)
      set(_sf_hip_codelets "off (HIP headers, libamdhip64 or libhipblas not found)")
    else()
      target_compile_definitions(sf_runtime PUBLIC SF_HAVE_HIP_CODELETS=1 SF_USE_HIP=1 __HIP_PLATFORM_AMD__=1)
      target_include_directories(sf_runtime PUBLIC ${SF_HIP_INCLUDE_DIR} ${SF_HIPBLAS_INCLUDE_DIR})
      add_dependencies(sf_runtime sf_hip_kernels)
      target_link_libraries(sf_runtime PUBLIC $<TARGET_FILE:sf_hip_kernels> ${SF_HIPBLAS_LIBRARY}
                            ${SF_AMDHIP64_LIBRARY} stdc++)
      set(_sf_hip_codelets "ON (sf_runtime links sf_hip_kernels)")
    endif()
  endif()
  message(STATUS "HIP codelets  : ${_sf_hip_codelets}")
endif()

# ---- CPU emulation of the kernels (CTest gpu_kernels_emu) -------------------------------------------
find_program(SF_PYTHON3 python3)
if(SF_BUILD_TESTS AND SF_PYTHON3)
  set(_sf_emu_dir ${CMAKE_BINARY_DIR}/gpu-emu)
  set(_sf_emu_sources "")
  set(_sf_emu_src_list ${SF_GPU_SOURCES})
  list(REMOVE_ITEM _sf_emu_src_list ${SF_GPU_CUDNN_SOURCE})
  foreach(src ${_sf_emu_src_list})
    get_filename_component(_n ${src} NAME_WE)
    set(_cpp ${_sf_emu_dir}/${_n}.cpp)
    add_custom_command(OUTPUT ${_cpp}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_sf_emu_dir}
      COMMAND ${SF_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/gpu/emu/cu2cpp.py ${src} ${_cpp}
      DEPENDS ${src} ${CMAKE_SOURCE_DIR}/tests/gpu/emu/cu2cpp.py
      COMMENT "cu2cpp ${_n}.cu (CPU emulation)" VERBATIM)
    list(APPEND _sf_emu_sources ${_cpp})
  endforeach()
  set(_sf_emu_cxx ${_sf_emu_sources} ${CMAKE_SOURCE_DIR}/tests/gpu/emu/emu_runtime.cpp)
  set_source_files_properties(${_sf_emu_cxx} PROPERTIES
    COMPILE_OPTIONS "-std=c++17;-ffp-contract=off;-fno-strict-aliasing;-Wno-unknown-pragmas")
  add_executable(gpu_kernels_emu ${CMAKE_SOURCE_DIR}/tests/gpu/gpu_kernels_check.c ${_sf_emu_cxx})
  # the emulation headers (cuda_runtime.h, cublas_v2.h, ...) must win over any real CUDA include dir
  target_include_directories(gpu_kernels_emu BEFORE PRIVATE ${CMAKE_SOURCE_DIR}/tests/gpu/emu
                             ${CMAKE_SOURCE_DIR}/src/kernels/cuda ${CMAKE_SOURCE_DIR}/include)
  target_compile_definitions(gpu_kernels_emu PRIVATE SF_GPU_EMU=1 SF_GPU_THREADS=64
                             "SF_GPU_COL_BYTES=((size_t)1024)")
  find_package(Threads REQUIRED)
  target_link_libraries(gpu_kernels_emu PRIVATE sf_kernels Threads::Threads)
  set_target_properties(gpu_kernels_emu PROPERTIES LINKER_LANGUAGE CXX)
  add_test(NAME gpu_kernels_emu COMMAND gpu_kernels_emu)
  set_tests_properties(gpu_kernels_emu PROPERTIES TIMEOUT 120 LABELS "gpu;kernels")
  message(STATUS "GPU emulation : gpu_kernels_emu (CUDA kernels on the CPU, CTest)")
else()
  message(STATUS "GPU emulation : skipped (needs SF_BUILD_TESTS and python3)")
endif()
