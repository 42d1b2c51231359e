#ifndef HVD_RUNTIME_TRANSPORTS_NCCL_CUDA_BACKEND_H_
#define HVD_RUNTIME_TRANSPORTS_NCCL_CUDA_BACKEND_H_

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/transports/gpu_backend.h"

namespace hvd::runtime {

// "<what>: <CUDA's name and message for err>", with the error consumed (cudaGetLastError): no
// CUDA error hvd met is left pending for the framework's next call.
Status CudaError(const std::string& what, cudaError_t err);

// What a GPU-path wait does between two polls: while `spinning`, yields the CPU (a plain spin
// kept the threads doing the work off the CPU where busy threads outnumber the CPUs, as on the
// emulated GPU; CUDA's own waits yield then too), else sleeps 50 us. PollEvent and NcclGroup's
// wait for a launch in progress decide how long they spin.
inline void PausePoll(bool spinning) {
  if (spinning) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Waits for `event` by polling it, so that every wait of the GPU path is bounded and can be
// stopped (cudaEventSynchronize / cudaStreamSynchronize can do neither): a spin of at least 4000
// queries and 2 ms (small ops finish in microseconds) that yields the CPU between queries, then
// 50 us sleeps (PausePoll; on the emulated GPU at 2 ranks on 2 vCPUs a 4 KiB op took 233-253 us
// with a plain spin, 71-75 us with the yield, 45-94 us for a bare NCCL loop; docs/gpu.md "The
// wait for a NCCL call"). Every 64 queries of the spin, and after each sleep, `check()` may end
// the wait with its error; past `deadline` it ends with `late()`; a CUDA error is `fail(err)`.
// The callables build their messages only when called, so a wait that succeeds allocates nothing.
template <typename Check, typename Fail, typename Late>
Status PollEvent(cudaEvent_t event, std::chrono::steady_clock::time_point deadline,
                 const Check& check, const Fail& fail, const Late& late) {
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  bool spinning = true;
  for (int spins = 0;; ++spins) {
    const cudaError_t err = cudaEventQuery(event);
    if (err == cudaSuccess) return Status::OK();
    if (err != cudaErrorNotReady) return fail(err);
    if (!spinning) {
      PausePoll(false);
    } else if (spins % 64 != 63) {
      PausePoll(true);
      continue;  // the checks cost more than a query
    }
    Status stop = check();
    if (!stop.ok()) return stop;
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) return late();
    spinning = spins <= 4000 || now < spin_until;  // at least 4000 queries and 2 ms
  }
}

// Sets the calling thread's current CUDA device for its lifetime and restores the previous one:
// the framework threads that enqueue keep the device their framework chose.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

class NcclGroup;

// The CUDA half of the GPU path (gpu_backend.h): per device one non-blocking stream that every
// copy and NCCL call of the runtime runs on, a pool of events for MarkReady, the markers of the
// pipelined staging, pinned staging buffers, and the device scratch and outputs of NCCL ops
// (stream-ordered: device_memory.h). Its NCCL groups register themselves so that
// Abort reaches them.
class CudaBackend final : public GpuBackend {
 public:
  CudaBackend() = default;
  ~CudaBackend() override;

  Status CheckMemory(int device, const void* data) override;
  Result<void*> MarkReady(int device, const void* data, void* stream) override;
  Status WaitReady(int device, void* event) override;
  void ReleaseEvent(void* event) override;
  Status CopyToHost(void* host, const void* device_data, int64_t bytes, int device) override;
  Status CopyToDevice(void* device_data, const void* host, int64_t bytes, int device) override;
  Result<int> Marker(int device) override;
  Status WaitMarker(int device, int marker) override;
  Status Sync(int device) override;
  Status Quiesce(int device) override;
  Result<void*> HostBuffer(int slot, int64_t bytes) override;
  // Waits (bounded, ended by Abort) for what is queued on hvd's stream of every device so far.
  Status WaitForStreams(const char* what);
  Status CopyOnDevice(void* to, const void* from, int64_t bytes, int device) override;
  Result<void*> DeviceScratch(int device, int64_t bytes) override;
  Result<void*> AllocDeviceOutput(int device, int64_t bytes) override;
  DeviceOutputFree device_output_free() const override;
  Result<std::unique_ptr<GpuGroup>> CreateGroup(Communicator* cpu, int device,
                                                const std::string& mode) override;
  int CurrentDevice() override;
  void RestoreDevice(int device) override;
  void Abort() override;
  void BreakGroups(const Status& why) override;
  void Start(std::chrono::milliseconds timeout, const std::string& host_id,
             int64_t output_cache_bytes) override;

  // For NcclGroup: the runtime stream of `device` (made on first use; cycle thread).
  Result<cudaStream_t> Stream(int device);
  std::chrono::milliseconds timeout() const { return timeout_; }
  // Start's host id: NCCL_HOSTID, or empty for the kernel's host name.
  const std::string& host_id() const { return host_id_; }
  // "<seconds> s (HVD_GLOO_TIMEOUT_SECONDS)": how the GPU path's timeout messages name it.
  std::string TimeoutText() const;
  bool aborted() const { return aborted_.load(); }
  // Waits for `event` of hvd's stream within the timeout, not ended by Abort (WaitEvent is):
  // what a failed op waits for before its handles fail (Quiesce, and NcclGroup's failed
  // completions off the cycle). Errors say `what`.
  Status WaitToTheEnd(cudaEvent_t event, const std::string& what) const;
  void Register(NcclGroup* group);
  void Unregister(NcclGroup* group);

 private:
  struct DeviceState {
    cudaStream_t stream = nullptr;
    std::array<cudaEvent_t, kMaxMarkers> markers{};
    int next_marker = 0;
    cudaEvent_t drained = nullptr;  // recorded by Sync
    void* scratch = nullptr;        // DeviceScratch (device_memory.h, ordered on `stream`)
    int64_t scratch_bytes = 0;
  };
  Result<DeviceState*> State(int device);
  // Waits for `event` of hvd's stream within the timeout (PollEvent); stops on Abort, and once
  // a member of any registered group is known to be gone (asked every 100 ms, PeersGone): the
  // stream may be held by a NCCL collective of any set, completed off the cycle, whose peer died
  // (NCCL over shared memory never notices), and only the cycle thread, which waits here, can
  // ask the CPU communicators.
  Status WaitEvent(cudaEvent_t event, const char* what);
  // The first registered group whose CPU communicator knows a member to be gone
  // (NcclGroup::PeersGone); OK when none.
  Status PeersGone();
  // An asynchronous copy on `device`'s stream; errors say `what`.
  Status Copy(void* to, const void* from, int64_t bytes, int device, cudaMemcpyKind kind,
              const char* what);

  std::chrono::milliseconds timeout_{30000};
  std::string host_id_;
  std::atomic<bool> aborted_{false};
  std::map<int, DeviceState> devices_;  // cycle thread (one at a time: cycle_mu_)
  std::array<void*, 4> host_{};
  std::array<int64_t, 4> host_bytes_{};
  std::mutex mu_;                                        // guards the event pool
  std::map<int, std::vector<cudaEvent_t>> free_events_;  // by device
  std::map<cudaEvent_t, int> events_;                    // every event made, with its device
  // Its own lock, not mu_: the framework threads' MarkReady must not wait behind an abort of
  // every communicator or a round of CheckPeers.
  std::mutex groups_mu_;
  std::set<NcclGroup*> groups_;
};

// The backend the registry hands the runtime (backend_registry.cc).
std::unique_ptr<GpuBackend> MakeCudaBackend();
// NCCL_VERSION_CODE of the nccl.h this was compiled with.
int32_t NcclBuiltVersion();

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_NCCL_CUDA_BACKEND_H_
