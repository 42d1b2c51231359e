// The CUDA kernels hvd launches, run on the emulated GPU (see README.md). nvcc's code registers
// each kernel of a module with the runtime at load (__cudaRegisterFunction: its host stub's
// address and its name); a launch (cudaLaunchKernel) names the kernel by that address. The
// emulator keeps the names and runs the kernels it knows by name, on the launch's stream, with
// the arguments laid out as their sources declare them. Registration goes on to the real
// runtime as well, so that its own records stay whole.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "test/gpu_emulator/device.h"
#include "test/gpu_emulator/reduce.h"

namespace hvd::gpu_emulator {
namespace {

struct Kernels {
  std::mutex mu;
  std::map<const void*, std::string> names;  // host stub -> the kernel's registered name
};

// Never destroyed, and made at first use: registration runs in other libraries' constructors,
// possibly before this one's.
Kernels& TheKernels() {
  static auto* k = new Kernels;
  return *k;
}

// hvd's scaling kernels (scale_kernels.cu): (const T* in, T* out, int64_t count, T factor).
bool ScaleKernelType(const std::string& name, ncclDataType_t* type) {
  static const std::map<std::string, ncclDataType_t> kTypes = {
      {"hvd_scale_float16", ncclFloat16},
      {"hvd_scale_bfloat16", ncclBfloat16},
      {"hvd_scale_float32", ncclFloat32},
      {"hvd_scale_float64", ncclFloat64},
  };
  auto it = kTypes.find(name);
  if (it == kTypes.end()) return false;
  *type = it->second;
  return true;
}

// HVD_GPU_EMU_NO_KERNEL_IMAGE: the devices (comma-separated indices, or "all") whose
// architecture the build's kernels have no image for, as a V100 with a build for Turing and
// later: cudaFuncGetAttributes and cudaLaunchKernel of any kernel fail there with
// cudaErrorNoKernelImageForDevice.
bool NoKernelImage(int device) {
  static const std::string list = [] {
    const char* v = std::getenv("HVD_GPU_EMU_NO_KERNEL_IMAGE");
    return v != nullptr ? "," + std::string(v) + "," : std::string();
  }();
  return list == ",all," || list.find("," + std::to_string(device) + ",") != std::string::npos;
}

}  // namespace
}  // namespace hvd::gpu_emulator

using namespace hvd::gpu_emulator;  // NOLINT: the C entry points below

extern "C" {

void __cudaRegisterFunction(void** fat_cubin, const char* host_fun, char* device_fun,
                            const char* device_name, int thread_limit, uint3* tid, uint3* bid,
                            dim3* block, dim3* grid, int* warp_size) {
  {
    Kernels& k = TheKernels();
    std::lock_guard<std::mutex> lock(k.mu);
    k.names[host_fun] = device_name;
  }
  using Register =
      void (*)(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
  static const auto next = reinterpret_cast<Register>(dlsym(RTLD_NEXT, "__cudaRegisterFunction"));
  if (next != nullptr) {
    next(fat_cubin, host_fun, device_fun, device_name, thread_limit, tid, bid, block, grid,
         warp_size);
  }
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr) return Fail(cudaErrorInvalidValue);
  {
    Kernels& k = TheKernels();
    std::lock_guard<std::mutex> lock(k.mu);
    if (k.names.count(func) == 0) return Fail(cudaErrorInvalidDeviceFunction);
  }
  if (NoKernelImage(CurrentDevice())) return Fail(cudaErrorNoKernelImageForDevice);
  std::memset(attr, 0, sizeof(*attr));
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 16;
  attr->binaryVersion = 90;
  attr->ptxVersion = 90;
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args,
                             size_t shared_mem, cudaStream_t stream_handle) {
  (void)shared_mem;
  if (const int e = Injected("cudaLaunchKernel")) return Fail(static_cast<cudaError_t>(e));
  if (NoKernelImage(CurrentDevice())) return Fail(cudaErrorNoKernelImageForDevice);
  std::string name;
  {
    Kernels& k = TheKernels();
    std::lock_guard<std::mutex> lock(k.mu);
    auto it = k.names.find(func);
    if (it != k.names.end()) name = it->second;
  }
  ncclDataType_t type;
  if (name.empty() || !ScaleKernelType(name, &type)) {
    std::fprintf(stderr, "[gpu emulator] cudaLaunchKernel of %s: not a kernel it runs\n",
                 name.empty() ? "an unregistered function" : name.c_str());
    return Fail(cudaErrorInvalidDeviceFunction);
  }
  if (grid.x == 0 || block.x == 0 || args == nullptr) {
    return Fail(cudaErrorInvalidConfiguration);
  }
  auto stream = StreamOf(stream_handle);
  // A kernel runs on the current device, in a stream of that device (CUDA refuses another's).
  if (stream == nullptr || StreamDevice(stream) != CurrentDevice()) {
    std::fprintf(
        stderr, "[gpu emulator] cudaLaunchKernel of %s: %s\n", name.c_str(),
        stream == nullptr ? "not a live stream" : "the stream is not one of the current device");
    return Fail(cudaErrorInvalidResourceHandle);
  }
  const void* in = *static_cast<const void* const*>(args[0]);
  void* out = *static_cast<void* const*>(args[1]);
  const int64_t count = *static_cast<const int64_t*>(args[2]);
  const size_t elem = TypeSize(type);
  uint64_t factor = 0;  // the factor in the element's type, bytes as given
  std::memcpy(&factor, args[3], elem);
  if (count <= 0) return cudaSuccess;
  const size_t bytes = static_cast<size_t>(count) * elem;
  Span src, dst;
  std::string why;
  if (!Locate(in, bytes, &src, &why) || !Locate(out, bytes, &dst, &why) ||
      src.where != Where::kDevice || dst.where != Where::kDevice || src.device != CurrentDevice() ||
      dst.device != CurrentDevice()) {
    std::fprintf(stderr, "[gpu emulator] %s: %s\n", name.c_str(),
                 why.empty() ? "its buffers are not memory of the current device" : why.c_str());
    return Fail(cudaErrorIllegalAddress);
  }
  Enqueue(stream, [src, dst, count, type, factor] {
    ScaleAll(dst.backing, src.backing, static_cast<size_t>(count), type, &factor);
  });
  return cudaSuccess;
}

}  // extern "C"
