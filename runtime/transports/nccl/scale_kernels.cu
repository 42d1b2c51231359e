// hvd's one CUDA kernel: scaling a buffer by a factor (scale_kernels.h), for the prescale before
// a NCCL sum and the postscale after it, where Horovod runs its own.
//
// The kernels are extern "C" so that their names are plain: the CUDA emulator of the tests
// (test/gpu_emulator) runs a kernel launched through cudaLaunchKernel by the name it was
// registered under, with the arguments laid out as here: (const T* in, T* out, int64_t count,
// T factor), the factor in the element's type (a float for float32, not a double).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "runtime/transports/nccl/scale_kernels.h"

namespace {

// A grid-stride loop: a bounded grid covers any count.
__device__ int64_t First() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ int64_t Stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace

extern "C" {

__global__ void hvd_scale_float16(const __half* in, __half* out, int64_t count, __half factor) {
  const float f = __half2float(factor);
  for (int64_t i = First(); i < count; i += Stride()) {
    out[i] = __float2half_rn(__half2float(in[i]) * f);
  }
}

__global__ void hvd_scale_bfloat16(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t count,
                                   __nv_bfloat16 factor) {
  const float f = __bfloat162float(factor);
  for (int64_t i = First(); i < count; i += Stride()) {
    out[i] = __float2bfloat16_rn(__bfloat162float(in[i]) * f);
  }
}

__global__ void hvd_scale_float32(const float* in, float* out, int64_t count, float factor) {
  for (int64_t i = First(); i < count; i += Stride()) out[i] = __fmul_rn(in[i], factor);
}

__global__ void hvd_scale_float64(const double* in, double* out, int64_t count, double factor) {
  for (int64_t i = First(); i < count; i += Stride()) out[i] = __dmul_rn(in[i], factor);
}

}  // extern "C"

namespace hvd::runtime {
namespace {

template <typename T>
cudaError_t Launch(const void* kernel, const void* in, void* out, int64_t count, T factor,
                   cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  constexpr int64_t kThreads = 256;
  // Enough blocks to fill any GPU of today several times over; the loop covers the rest.
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 8192);
  void* args[] = {&in, &out, &count, &factor};
  return cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(blocks)),
                          dim3(static_cast<unsigned>(kThreads)), args, 0, stream);
}

}  // namespace

// Until 2026-12-02 this was true everywhere, and the first Average on a GPU the build has no
// machine code for failed the job with cudaErrorNoKernelImageForDevice.
bool HaveScaleKernel(int device) {
  static std::mutex mu;
  static std::map<int, bool> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(device);
  if (it != known.end()) return it->second;
  int previous = -1;
  const bool switched =
      cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device) == cudaSuccess;
  cudaFuncAttributes attr;
  const bool runs =
      switched && cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(&hvd_scale_float32)) ==
                      cudaSuccess;
  if (previous >= 0) cudaSetDevice(previous);
  (void)cudaGetLastError();  // none left pending for the framework's next CUDA call
  // Only the device's own answer is kept: a failure to reach the device (a transient error,
  // a device not yet usable) is asked again next time instead of ruling the kernel out for good.
  if (switched) known.emplace(device, runs);
  return runs;
}

cudaError_t LaunchScale(const void* in, void* out, int64_t count, ncclDataType_t type,
                        double factor, cudaStream_t stream) {
  switch (type) {
    case ncclFloat16:
      return Launch(reinterpret_cast<const void*>(&hvd_scale_float16), in, out, count,
                    __float2half_rn(static_cast<float>(factor)), stream);
    case ncclBfloat16:
      return Launch(reinterpret_cast<const void*>(&hvd_scale_bfloat16), in, out, count,
                    __float2bfloat16_rn(static_cast<float>(factor)), stream);
    case ncclFloat32:
      return Launch(reinterpret_cast<const void*>(&hvd_scale_float32), in, out, count,
                    static_cast<float>(factor), stream);
    case ncclFloat64:
      return Launch(reinterpret_cast<const void*>(&hvd_scale_float64), in, out, count, factor,
                    stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace hvd::runtime
