# Every dependency comes from a Debian package (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(Eigen3 REQUIRED NO_MODULE)

# Standalone Asio is header-only (libasio-dev) and ships no CMake config.
find_path(ASIO_INCLUDE_DIR asio.hpp REQUIRED)
add_library(hvd_asio INTERFACE)
target_include_directories(hvd_asio SYSTEM INTERFACE ${ASIO_INCLUDE_DIR})
target_compile_definitions(hvd_asio INTERFACE ASIO_STANDALONE ASIO_NO_DEPRECATED ASIO_DISABLE_STD_ALIGNED_ALLOC)
target_link_libraries(hvd_asio INTERFACE Threads::Threads)

pkg_check_modules(LIBSSH2 REQUIRED IMPORTED_TARGET libssh2)

set(HVD_HAVE_GLOO OFF)
if(HVD_WITH_GLOO)
  find_path(GLOO_INCLUDE_DIR gloo/config.h)
  find_library(GLOO_LIBRARY gloo)
  if(GLOO_INCLUDE_DIR AND GLOO_LIBRARY)
    add_library(hvd_gloo_dep INTERFACE)
    target_include_directories(hvd_gloo_dep SYSTEM INTERFACE ${GLOO_INCLUDE_DIR})
    target_link_libraries(hvd_gloo_dep INTERFACE ${GLOO_LIBRARY} Threads::Threads)
    set(HVD_HAVE_GLOO ON)
  else()
    message(FATAL_ERROR "Gloo not found: install libgloo-dev or configure with -DHVD_WITH_GLOO=OFF")
  endif()
endif()

set(HVD_HAVE_MPI OFF)
if(HVD_WITH_MPI)
  find_package(MPI COMPONENTS C)
  if(MPI_C_FOUND)
    set(HVD_HAVE_MPI ON)
  endif()
endif()

# The GPU path (runtime/transports/nccl/) needs the CUDA runtime and NCCL; NCCL_ROOT (a prefix
# with include/nccl.h and lib/libnccl.so, e.g. pip's nvidia/nccl) points at another NCCL.
set(HVD_HAVE_NCCL OFF)
if(HVD_WITH_NCCL)
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib)
  # nccl_group.cc needs NCCL 2.14 (ncclRedOpCreatePreMulSum 2.11, ncclGetLastError 2.13,
  # non-blocking communicators through ncclCommInitRankConfig 2.14): an
  # older one leaves the GPU path out instead of breaking the build.
  set(HVD_NCCL_VERSION_CODE 0)
  if(NCCL_INCLUDE_DIR)
    file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_code REGEX "^#define NCCL_VERSION_CODE [0-9]+")
    string(REGEX MATCH "[0-9]+$" HVD_NCCL_VERSION_CODE "${_nccl_code}")
    if(NOT HVD_NCCL_VERSION_CODE)
      set(HVD_NCCL_VERSION_CODE 0)
    endif()
  endif()
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    if(HVD_NCCL_VERSION_CODE GREATER_EQUAL 21400)
      set(HVD_HAVE_NCCL ON)
    else()
      message(STATUS "NCCL at ${NCCL_INCLUDE_DIR} is version code ${HVD_NCCL_VERSION_CODE}; hvd's "
                     "GPU path needs 21400 (2.14) or newer: building without it")
    endif()
  endif()
endif()
# hvd's one CUDA kernel (runtime/transports/nccl/scale_kernels.cu: the postscale after a NCCL
# sum, as Horovod's own kernel) needs nvcc: the toolkit's, or CMAKE_CUDA_COMPILER / CUDACXX.
# Without one the GPU path is still built and folds the postscale into NCCL's pre-multiplied
# sum (docs/gpu.md "Scale factors"). The machine code is for Turing, Ampere and Hopper, with
# Hopper's PTX for newer GPUs (CUDA 13 dropped everything before Turing); set
# CMAKE_CUDA_ARCHITECTURES for others. On a GPU it has no code for, the runtime finds that out
# (HaveScaleKernel) and uses NCCL's pre-multiplied sum instead.
set(HVD_HAVE_SCALE_KERNEL OFF)
if(HVD_HAVE_NCCL)
  # The toolkit's nvcc even when it is not on PATH, through CUDACXX: check_language still tries
  # it in a test project, so an nvcc that cannot build here (an unsupported host compiler)
  # leaves the kernel out instead of failing the configure.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND CUDAToolkit_NVCC_EXECUTABLE
     AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
    set(ENV{CUDACXX} "${CUDAToolkit_NVCC_EXECUTABLE}")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 75-real 80-real 90)
    endif()
    # The runtime libhvd links (CUDA::cudart) is the shared one: the kernel's registration and
    # launch go through it too (and through the tests' CUDA emulator, which takes its place).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    set(HVD_HAVE_SCALE_KERNEL ON)
  else()
    message(STATUS "no CUDA compiler (nvcc): the GPU path folds postscale factors into NCCL's "
                   "pre-multiplied sum instead of Horovod's kernel after the sum")
  endif()
endif()

# What the build reports as built (hvdrun -cb, hvd.nccl_built()/cuda_built()) is exactly what
# it compiled: CUDA tensors and NCCL come together, with the GPU path.
set(HVD_BUILT_NCCL_BACKEND ${HVD_HAVE_NCCL})
message(STATUS "hvd backends: gloo=${HVD_HAVE_GLOO} mpi=${HVD_HAVE_MPI} "
               "gpu (cuda+nccl)=${HVD_BUILT_NCCL_BACKEND} ${NCCL_LIBRARY} "
               "scale kernel=${HVD_HAVE_SCALE_KERNEL}")
