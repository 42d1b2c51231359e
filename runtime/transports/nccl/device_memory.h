#ifndef HVD_RUNTIME_TRANSPORTS_NCCL_DEVICE_MEMORY_H_
#define HVD_RUNTIME_TRANSPORTS_NCCL_DEVICE_MEMORY_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"

// Stream-ordered device memory of the GPU path: the outputs the runtime allocates for NCCL ops
// (allgather, alltoall, reducescatter) and the fused ops' scratch. It comes from one memory pool
// per device (cudaMemPoolCreate; cudaMallocFromPoolAsync / cudaFreeAsync), never from
// cudaMalloc/cudaFree, which synchronize the whole device. A pool keeps up to its release
// threshold (HVD_OUTPUT_CACHE_BYTES) of freed memory for reuse; a block freed on one stream is
// handed out on another only once the free is ordered before the allocation (the pool's default
// reuse policies: CUDA inserts the dependency or waits for the free's event).
//
// Outputs are registered (address -> device and allocating stream), so that FreeDeviceOutput
// tells them from host outputs, from any thread, at any time: the registry and the pools are
// process-wide and never destroyed, because hvd_free may come after the runtime and its backend
// are gone (hvd.torch frees when the tensor dies), even from a static destructor. Thread-safe.
namespace hvd::runtime {

// Cycle thread: `bytes` (at least 1 is allocated) of `device`'s memory, ordered on `stream`.
// `output`: registered for FreeDeviceOutput.
Result<void*> AllocDeviceMemory(int device, int64_t bytes, cudaStream_t stream, bool output);
// Frees unregistered memory from AllocDeviceMemory (scratch), ordered on `stream`.
void FreeDeviceMemory(void* data, int device, cudaStream_t stream);
// gpu_backend.h DeviceOutputFree for the registered outputs. A CUDA error is consumed and logged.
bool FreeDeviceOutput(void* data, bool on_caller_stream, void* stream);
// Outputs allocated on `stream` and not yet freed are freed on their device's legacy default
// stream from now on (`stream` is being destroyed).
void ForgetDeviceStream(cudaStream_t stream);
// The pools' release threshold, for the pools made and to be made.
void SetDevicePoolBytes(int64_t bytes);
// Registered outputs not yet freed (tests, the GPU checks).
int64_t LiveDeviceOutputs();

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_NCCL_DEVICE_MEMORY_H_
