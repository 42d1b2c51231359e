#ifndef HVD_TEST_FAKES_FAKE_GPU_H_
#define HVD_TEST_FAKES_FAKE_GPU_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/transports/gpu_backend.h"

// A GPU path without a GPU, for rank-thread tests of the runtime's GPU code (op_executor_gpu.cc,
// op_executor_nccl.cc): "device memory" is host memory, copies are memcpys, and the set's
// "NCCL group" runs each collective over the set's CPU Communicator, with NCCL's semantics
// (the inputs multiplied by the prescale, the result by the postscale, as a build with the
// scaling kernel; NcclReduces decides what it reduces). Every call runs
// at once, which is the order the real backend's single stream gives them.
namespace hvd::testing {

// What the fake groups of one backend saw, for the tests' assertions. Thread-safe.
struct FakeGpuLog {
  std::mutex mu;
  std::vector<std::string> calls;  // "Allgatherv", "Finish(allgather)", ... in call order
  // An enqueue-only call (Allgatherv, ReduceScatter, Alltoallv, EnqueueAllreduce) not followed
  // by Finish (or Defer) before the op's next call that waits (Allreduce, Broadcast) or its
  // end; and a Finish or Defer without one.
  int contract_violations = 0;
  // Set before the groups' first Defer: their deferred completions wait for a Drain (or the
  // set's failure) instead of 2 ms, as a device that finishes only after the peers shut down.
  std::atomic<bool> hold_completions{false};
  void Add(const std::string& call) {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(call);
  }
  int Count(const std::string& call) {
    std::lock_guard<std::mutex> lock(mu);
    int n = 0;
    for (const auto& c : calls) n += c == call ? 1 : 0;
    return n;
  }
};

// The fake's device outputs still allocated (AllocDeviceOutput and not yet given back through
// its device_output_free), and how many of the frees came with the caller's stream.
int64_t FakeDeviceOutputsLive();
int64_t FakeDeviceOutputsFreedOnCallerStream();

class FakeGpu final : public runtime::GpuBackend {
 public:
  // `nccl`: every set gets a fake NCCL group (as when each rank has a GPU of its own); false:
  // every set stages. `fail_call`: the group call of that 1-based number fails (kRemoteError,
  // as a NCCL error would) on this rank; 0: none.
  explicit FakeGpu(bool nccl, std::shared_ptr<FakeGpuLog> log = nullptr, int fail_call = 0)
      : nccl_(nccl),
        log_(log ? std::move(log) : std::make_shared<FakeGpuLog>()),
        fail_call_(fail_call) {}

  FakeGpuLog& log() { return *log_; }

  Status CheckMemory(int, const void*) override { return Status::OK(); }
  Result<void*> MarkReady(int, const void*, void*) override { return static_cast<void*>(&event_); }
  Status WaitReady(int, void*) override { return Status::OK(); }
  void ReleaseEvent(void*) override {}
  Status CopyToHost(void* host, const void* device_data, int64_t bytes, int) override;
  Status CopyToDevice(void* device_data, const void* host, int64_t bytes, int) override;
  Result<int> Marker(int) override { return ++markers_; }
  Status WaitMarker(int, int) override { return Status::OK(); }
  Status Sync(int) override {
    markers_ = 0;
    return Status::OK();
  }
  // The copies ran at the call: nothing to wait for, but the call is logged ("Quiesce").
  Status Quiesce(int) override {
    log_->Add("Quiesce");
    return Status::OK();
  }
  Result<void*> HostBuffer(int slot, int64_t bytes) override;
  Status CopyOnDevice(void* to, const void* from, int64_t bytes, int) override;
  Result<void*> DeviceScratch(int, int64_t bytes) override;
  Result<void*> AllocDeviceOutput(int, int64_t bytes) override;
  runtime::DeviceOutputFree device_output_free() const override;
  Result<std::unique_ptr<runtime::GpuGroup>> CreateGroup(runtime::Communicator* cpu, int,
                                                         const std::string&) override;
  int CurrentDevice() override { return 0; }
  void RestoreDevice(int) override {}
  void Abort() override { aborted_ = true; }
  void Start(std::chrono::milliseconds, const std::string&, int64_t) override { aborted_ = false; }

 private:
  bool nccl_;
  std::shared_ptr<FakeGpuLog> log_;
  int fail_call_;
  std::atomic<bool> aborted_{false};
  int markers_ = 0;
  std::vector<char> host_[4];
  std::vector<char> scratch_;
  char event_ = 0;
};

}  // namespace hvd::testing

#endif  // HVD_TEST_FAKES_FAKE_GPU_H_
