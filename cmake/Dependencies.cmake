# Finds every dependency through pkg-config. A missing one stops configure and names the Debian
# package that provides it (scripts/install-deps installs them all).
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found. Install the Debian package 'pkg-config' (or run scripts/install-deps).")
endif()

function(sf_require prefix debpkg)
  pkg_check_modules(${prefix} IMPORTED_TARGET GLOBAL ${ARGN})
  if(NOT ${prefix}_FOUND)
    message(FATAL_ERROR "Missing dependency (pkg-config: ${ARGN}). Install the Debian package '${debpkg}' "
                        "(or run scripts/install-deps).")
  endif()
endfunction()

if(STARPU_PREFIX)
  set(ENV{PKG_CONFIG_PATH} "${STARPU_PREFIX}/lib/pkgconfig:$ENV{PKG_CONFIG_PATH}")
endif()
# StarPU: prefer 1.4, fall back to 1.3.
pkg_check_modules(STARPU IMPORTED_TARGET GLOBAL starpu-1.4)
if(STARPU_FOUND)
  set(SF_STARPU_PC starpu-1.4)
  set(SF_STARPUMPI_PC starpumpi-1.4)
else()
  sf_require(STARPU libstarpu-dev starpu-1.3)
  set(SF_STARPU_PC starpu-1.3)
  set(SF_STARPUMPI_PC starpumpi-1.3)
endif()
sf_require(OPENBLAS libopenblas-dev openblas)
sf_require(YAML libyaml-dev yaml-0.1)
sf_require(CJSON libcjson-dev libcjson)
sf_require(HWLOC libhwloc-dev hwloc)

# StarPU's SimGrid mode (scripts/build-starpu --simgrid): simulation only, and never mixed with Debian's
# StarPU-MPI, which a SimGrid StarPU does not have.
set(SF_STARPU_SIMGRID OFF)
find_file(SF_STARPU_CONFIG_H starpu_config.h PATHS ${STARPU_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(SF_STARPU_CONFIG_H)
  file(READ ${SF_STARPU_CONFIG_H} _sf_cfg)
  if(_sf_cfg MATCHES "\n#define STARPU_SIMGRID 1")
    set(SF_STARPU_SIMGRID ON)
  endif()
endif()

# Optional: StarPU-MPI + Open MPI.
set(SF_HAVE_MPI OFF)
set(SF_SIMGRID_MPI OFF)
if(SF_USE_MPI AND SF_STARPU_SIMGRID AND _sf_cfg MATCHES "\n#define STARPU_USE_MPI_MPI 1")
  # StarPU-MPI over SimGrid's SMPI (scripts/build-starpu --simgrid-mpi, scripts/build-sim --mpi): static
  # StarPU libraries, and smpicc as the C compiler brings SMPI's mpi.h and libsimgrid itself.
  if(NOT CMAKE_C_COMPILER MATCHES "smpicc$")
    message(FATAL_ERROR "A SimGrid StarPU with MPI (${STARPU_PREFIX}) needs SMPI's compiler: configure with "
                        "-DCMAKE_C_COMPILER=smpicc (scripts/build-sim --mpi does), or -DSF_USE_MPI=OFF")
  endif()
  pkg_check_modules(STARPUMPI IMPORTED_TARGET GLOBAL ${SF_STARPUMPI_PC})
  if(NOT STARPUMPI_FOUND)
    message(FATAL_ERROR "${STARPU_PREFIX} has StarPU-MPI in starpu_config.h but no ${SF_STARPUMPI_PC}.pc")
  endif()
  add_library(sf_smpi_none INTERFACE) # SMPI's MPI comes with the compiler
  add_library(PkgConfig::MPI ALIAS sf_smpi_none)
  set(SF_HAVE_MPI ON)
  set(SF_SIMGRID_MPI ON)
elseif(SF_USE_MPI AND NOT SF_STARPU_SIMGRID)
  pkg_check_modules(STARPUMPI IMPORTED_TARGET GLOBAL ${SF_STARPUMPI_PC})
  pkg_check_modules(MPI IMPORTED_TARGET GLOBAL mpi-c)
  if(STARPUMPI_FOUND AND MPI_FOUND)
    set(SF_HAVE_MPI ON)
  endif()
endif()
find_program(SF_MPIRUN NAMES mpirun mpiexec)

# Which StarPU features are compiled in: read starpu_config.h.
set(SF_STARPU_HAS_CUDA OFF)
set(SF_STARPU_HAS_HIP OFF)     # StarPU >= 1.4 built with HIP
set(SF_STARPU_HAS_HIPBLAS OFF) # ... and hipBLAS (starpu_hipblas_get_local_handle)
set(SF_STARPU_HAS_OPENCL OFF)
set(SF_STARPU_HAS_FXT OFF)
if(SF_STARPU_CONFIG_H)
  file(READ ${SF_STARPU_CONFIG_H} _sf_cfg)
  if(_sf_cfg MATCHES "\n#define STARPU_USE_CUDA 1")
    set(SF_STARPU_HAS_CUDA ON)
  endif()
  if(_sf_cfg MATCHES "\n#define STARPU_USE_HIP 1")
    set(SF_STARPU_HAS_HIP ON)
  endif()
  if(_sf_cfg MATCHES "\n#define STARPU_USE_HIPBLAS 1")
    set(SF_STARPU_HAS_HIPBLAS ON)
  endif()
  if(_sf_cfg MATCHES "\n#define STARPU_USE_OPENCL 1")
    set(SF_STARPU_HAS_OPENCL ON)
  endif()
  if(_sf_cfg MATCHES "\n#define STARPU_USE_FXT 1")
    set(SF_STARPU_HAS_FXT ON)
  endif()
endif()

# Optional: nvcc (CUDA objects are compiled whenever nvcc exists, so CI checks that they build).
find_program(SF_NVCC nvcc PATHS /usr/local/cuda/bin)
find_program(SF_HIPCC hipcc)
find_program(SF_GNUPLOT gnuplot)
