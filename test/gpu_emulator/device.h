// The emulated GPU's device side: memory, streams and events (see README.md).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hvd::gpu_emulator {

// How many emulated GPUs there are (HVD_GPU_EMU_DEVICES, 1 by default).
int DeviceCount();
// The calling thread's current device.
int CurrentDevice();

// Where an address is, as cudaPointerGetAttributes tells it.
enum class Where { kHost, kPinned, kDevice };
struct Span {
  Where where = Where::kHost;
  int device = -1;
  char* backing = nullptr;  // the host-accessible alias of device memory (its own address else)
};
// Classifies [p, p + bytes). Device memory must lie inside one live allocation: a range that
// runs past its end, or into freed memory, is an error (false, *why says which).
bool Locate(const void* p, size_t bytes, Span* out, std::string* why);

// A stream: a FIFO of work run in order by a thread of its own, as a GPU runs a stream's
// kernels and copies asynchronously to the host thread that queued them.
class Stream;
// The stream a cudaStream_t names (null, cudaStreamLegacy and cudaStreamPerThread: the current
// device's default stream); null for a handle that is not a live stream.
std::shared_ptr<Stream> StreamOf(cudaStream_t handle);
// Queues `work` on `stream`. HVD_GPU_EMU_DELAY_US=N delays each piece by up to N us, so that
// host code that reads results without waiting for the stream sees stale data.
void Enqueue(const std::shared_ptr<Stream>& stream, std::function<void()> work);
// Waits until everything queued on `stream` so far has run.
void Drain(const std::shared_ptr<Stream>& stream);
// The device `stream` belongs to (the current one when it was created).
int StreamDevice(const std::shared_ptr<Stream>& stream);

// Returns `err`, which the calling thread's next cudaGetLastError answers too (unless it is
// cudaSuccess), as the CUDA runtime keeps a failed call's error.
cudaError_t Fail(cudaError_t err);

// Fault injection (hvd_gpu_emulator_fail_next, hvd_gpu_emulator_fail_later): the error this
// call of `function` must answer, once; 0 for none.
int Injected(const char* function);

}  // namespace hvd::gpu_emulator
