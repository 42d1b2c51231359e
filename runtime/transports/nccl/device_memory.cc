#include "runtime/transports/nccl/device_memory.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/logging.h"
#include "runtime/transports/nccl/cuda_backend.h"

namespace hvd::runtime {
namespace {

struct Owner {
  int device;
  cudaStream_t stream;  // the allocating stream; null once it was destroyed
};

struct Registry {
  std::mutex mu;
  std::map<int, cudaMemPool_t> pools;  // by device
  std::unordered_map<void*, Owner> outputs;
  uint64_t pool_bytes = uint64_t{128} << 20;
  std::atomic<int64_t> live{0};  // outputs.size(): host frees skip the lock while it is 0
};

// Never destroyed (see the header).
Registry& TheRegistry() {
  static auto* registry = new Registry;
  return *registry;
}

Result<cudaMemPool_t> PoolLocked(Registry& reg, int device) {
  auto it = reg.pools.find(device);
  if (it != reg.pools.end()) return it->second;
  const std::string where = "CUDA device " + std::to_string(device);
  int supported = 0;
  cudaError_t err = cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device);
  if (err != cudaSuccess) return CudaError("asking " + where + " for memory pools", err);
  if (supported == 0) {
    return Status::Unimplemented(where +
                                 " has no stream-ordered memory pools "
                                 "(cudaDevAttrMemoryPoolsSupported is 0), which the outputs of "
                                 "NCCL ops need; HVD_GPU_OPERATIONS=cpu stages them instead");
  }
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  err = cudaMemPoolCreate(&pool, &props);
  if (err != cudaSuccess) return CudaError("creating a memory pool on " + where, err);
  uint64_t threshold = reg.pool_bytes;
  err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  if (err != cudaSuccess) {
    cudaMemPoolDestroy(pool);
    return CudaError("setting the release threshold of " + where + "'s memory pool", err);
  }
  reg.pools.emplace(device, pool);
  return pool;
}

// A free that failed leaks the block; the error is consumed. Not logged while CUDA unloads
// (process exit: the driver has freed everything anyway).
void FreeFailed(cudaError_t err, const void* data) {
  cudaGetLastError();
  if (err == cudaErrorCudartUnloading || err == cudaErrorContextIsDestroyed) return;
  HVD_LOG_ERROR("freeing device memory at {}: CUDA error {} ({})", data, cudaGetErrorName(err),
                cudaGetErrorString(err));
}

}  // namespace

Result<void*> AllocDeviceMemory(int device, int64_t bytes, cudaStream_t stream, bool output) {
  Registry& reg = TheRegistry();
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    HVD_ASSIGN_OR_RETURN(pool, PoolLocked(reg, device));
  }
  void* data = nullptr;
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  cudaError_t err = cudaMallocFromPoolAsync(&data, size, pool, stream);
  if (err != cudaSuccess) {
    return CudaError("allocating " + std::to_string(size) + " bytes on CUDA device " +
                         std::to_string(device) + (output ? " for an output" : ""),
                     err);
  }
  if (output) {
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.outputs[data] = Owner{device, stream};
    reg.live.store(static_cast<int64_t>(reg.outputs.size()), std::memory_order_relaxed);
  }
  return data;
}

void FreeDeviceMemory(void* data, int device, cudaStream_t stream) {
  if (data == nullptr) return;
  ScopedDevice scoped(device);
  const cudaError_t err = cudaFreeAsync(data, stream);
  if (err != cudaSuccess) FreeFailed(err, data);
}

bool FreeDeviceOutput(void* data, bool on_caller_stream, void* stream) {
  Registry& reg = TheRegistry();
  if (data == nullptr || reg.live.load(std::memory_order_relaxed) == 0) return false;
  Owner owner{};
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    auto it = reg.outputs.find(data);
    if (it == reg.outputs.end()) return false;
    owner = it->second;
    reg.outputs.erase(it);
    reg.live.store(static_cast<int64_t>(reg.outputs.size()), std::memory_order_relaxed);
  }
  // The device selected, so that a null stream is the legacy default stream of the output's
  // device, whichever device the calling thread had.
  FreeDeviceMemory(data, owner.device,
                   on_caller_stream ? static_cast<cudaStream_t>(stream) : owner.stream);
  return true;
}

void ForgetDeviceStream(cudaStream_t stream) {
  Registry& reg = TheRegistry();
  std::lock_guard<std::mutex> lock(reg.mu);
  for (auto& [data, owner] : reg.outputs) {
    if (owner.stream == stream) owner.stream = nullptr;
  }
}

void SetDevicePoolBytes(int64_t bytes) {
  Registry& reg = TheRegistry();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.pool_bytes = static_cast<uint64_t>(std::max<int64_t>(bytes, 0));
  for (auto& [device, pool] : reg.pools) {
    uint64_t threshold = reg.pool_bytes;
    const cudaError_t err =
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    if (err != cudaSuccess) {
      cudaGetLastError();  // the old threshold stays; nothing else depends on it
      HVD_LOG_WARNING("setting the release threshold of CUDA device {}'s memory pool: {}", device,
                      cudaGetErrorString(err));
    }
  }
}

int64_t LiveDeviceOutputs() { return TheRegistry().live.load(std::memory_order_relaxed); }

}  // namespace hvd::runtime
