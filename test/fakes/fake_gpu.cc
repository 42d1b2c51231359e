#include "test/fakes/fake_gpu.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>
#include <thread>

#include "runtime/transports/reduction.h"

namespace hvd::testing {
namespace {

using runtime::Communicator;
using runtime::DataType;
using runtime::ReduceOp;

// The fake's device outputs: malloc'ed blocks, known here so that its free function tells them
// from the runtime's host outputs, as the CUDA backend's registry does.
struct Outputs {
  std::mutex mu;
  std::set<void*> live;
  int64_t on_caller_stream = 0;
};

Outputs& TheOutputs() {
  static auto* outputs = new Outputs;  // never destroyed, as the real registry
  return *outputs;
}

bool FreeFakeOutput(void* data, bool on_caller_stream, void* stream) {
  (void)stream;
  Outputs& o = TheOutputs();
  {
    std::lock_guard<std::mutex> lock(o.mu);
    if (o.live.erase(data) == 0) return false;
    if (on_caller_stream) ++o.on_caller_stream;
  }
  std::free(data);
  return true;
}

// The set's "NCCL communicator": each collective over its CPU Communicator, on host memory.
class FakeGroup final : public runtime::GpuGroup {
 public:
  FakeGroup(Communicator* cpu, std::shared_ptr<FakeGpuLog> log, int fail_call,
            const std::atomic<bool>* backend_aborted)
      : cpu_(cpu), log_(std::move(log)), fail_call_(fail_call), backend_aborted_(backend_aborted) {}
  ~FakeGroup() override {
    if (unfinished_ > 0) Violation();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      if (failure_.ok()) failure_ = Status::Aborted("fake NCCL: the group was closed");
    }
    cv_.notify_all();
    if (completer_.joinable()) completer_.join();
  }

  const char* name() const override { return "NCCL"; }
  // As a build with the scaling kernel: the factors in Horovod's order (Scaled).
  bool CanReduce(DataType dtype, ReduceOp op, bool scaled) const override {
    return runtime::NcclReduces(dtype, op, scaled, cpu_->size(), true);
  }
  Status Allreduce(std::span<const void* const> inputs, std::span<void* const> outputs,
                   std::span<const int64_t> counts, DataType dtype, ReduceOp op, double prescale,
                   double postscale) override {
    HVD_RETURN_IF_ERROR(Enter("Allreduce", true));
    return Reduce(inputs, outputs, counts, dtype, op, prescale, postscale);
  }
  // Completion off the cycle: the work is done at once, its completion reported on the group's
  // own thread after a pause standing in for the device's time (the caller must have gone on
  // to wait for it by then), in Defer's order.
  Status EnqueueAllreduce(std::span<const void* const> inputs, std::span<void* const> outputs,
                          std::span<const int64_t> counts, DataType dtype, ReduceOp op,
                          double prescale, double postscale) override {
    HVD_RETURN_IF_ERROR(Enter("EnqueueAllreduce", false));
    return Reduce(inputs, outputs, counts, dtype, op, prescale, postscale);
  }
  Status Defer(const char* what, DeferredDone done) override {
    log_->Add(std::string("Defer(") + what + ")");
    if (unfinished_ == 0) Violation();
    unfinished_ = 0;
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.ok()) return failure_;
    if (!completer_.joinable()) completer_ = std::thread([this] { Complete(); });
    deferred_.push_back(std::move(done));
    ++undone_;
    cv_.notify_all();
    return Status::OK();
  }
  Status Drain() override {
    log_->Add("Drain");
    if (unfinished_ > 0) Violation();  // enqueued work without its Defer
    std::unique_lock<std::mutex> lock(mu_);
    draining_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return undone_ == 0; });
    draining_ = false;
    return Stopped() ? Status::Aborted("fake NCCL: aborted") : Status::OK();
  }
  void FailDeferred(const Status& status) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (failure_.ok()) failure_ = status;
    }
    cv_.notify_all();
  }

 private:
  void Complete() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !deferred_.empty(); });
      if (deferred_.empty()) return;
      DeferredDone done = std::move(deferred_.front());
      deferred_.pop_front();
      // The device's time, cut short by a failure of the set (or held until a Drain).
      if (log_->hold_completions.load()) {
        cv_.wait(lock, [&] { return !failure_.ok() || draining_; });
      } else {
        cv_.wait_for(lock, std::chrono::milliseconds(2), [&] { return !failure_.ok(); });
      }
      const Status status = !failure_.ok() ? failure_
                            : Stopped()    ? Status::Aborted("fake NCCL: aborted")
                                           : Status::OK();
      lock.unlock();
      done(status);
      lock.lock();
      if (--undone_ == 0) cv_.notify_all();
    }
  }
  Status Reduce(std::span<const void* const> inputs, std::span<void* const> outputs,
                std::span<const int64_t> counts, DataType dtype, ReduceOp op, double prescale,
                double postscale) {
    const size_t elem = runtime::DataTypeSize(dtype);
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    std::vector<char> buf(static_cast<size_t>(total) * elem);
    size_t at = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {  // a null input (a joined rank): zeros
      const size_t bytes = static_cast<size_t>(counts[i]) * elem;
      if (inputs[i] != nullptr && bytes > 0) std::memcpy(buf.data() + at, inputs[i], bytes);
      at += bytes;
    }
    runtime::ScaleBuffer(buf.data(), total, dtype, prescale);  // NCCL's pre-multiplied sum
    HVD_RETURN_IF_ERROR(cpu_->Allreduce(buf.data(), total, dtype, op));
    runtime::ScaleBuffer(buf.data(), total, dtype, postscale);  // the scaling kernel
    at = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const size_t bytes = static_cast<size_t>(counts[i]) * elem;
      if (outputs[i] != nullptr && bytes > 0) std::memcpy(outputs[i], buf.data() + at, bytes);
      at += bytes;
    }
    return Status::OK();
  }

 public:
  Status Broadcast(const void* input, void* output, int64_t bytes, int root) override {
    HVD_RETURN_IF_ERROR(Enter("Broadcast", true));
    if (cpu_->rank() == root && input != output && bytes > 0) std::memcpy(output, input, bytes);
    return cpu_->Broadcast(output, bytes, root);
  }
  Status Allgatherv(const void* input, void* output,
                    std::span<const int64_t> bytes_per_rank) override {
    HVD_RETURN_IF_ERROR(Enter("Allgatherv", false));
    return cpu_->Allgatherv(input, output, {bytes_per_rank.begin(), bytes_per_rank.end()});
  }
  Status ReduceScatter(const void* input, void* output, std::span<const int64_t> counts_per_rank,
                       DataType dtype, ReduceOp op, double prescale, double postscale) override {
    HVD_RETURN_IF_ERROR(Enter("ReduceScatter", false));
    // The executor must have asked.
    if (!CanReduce(dtype, op, prescale != 1.0 || postscale != 1.0)) Violation();
    int64_t total = 0;
    for (int64_t c : counts_per_rank) total += c;
    const auto* in = static_cast<const char*>(input);
    std::vector<char> scaled(in, in + total * static_cast<int64_t>(runtime::DataTypeSize(dtype)));
    runtime::ScaleBuffer(scaled.data(), total, dtype, prescale);
    HVD_RETURN_IF_ERROR(cpu_->ReduceScatter(
        scaled.data(), output, {counts_per_rank.begin(), counts_per_rank.end()}, dtype, op));
    runtime::ScaleBuffer(output, counts_per_rank[cpu_->rank()], dtype, postscale);
    return Status::OK();
  }
  Status Alltoallv(const void* input, std::span<const int64_t> send_bytes, void* output,
                   std::span<const int64_t> recv_bytes) override {
    HVD_RETURN_IF_ERROR(Enter("Alltoallv", false));
    return cpu_->Alltoallv(input, {send_bytes.begin(), send_bytes.end()}, output,
                           {recv_bytes.begin(), recv_bytes.end()});
  }
  Status Finish(const char* what) override {
    log_->Add(std::string("Finish(") + what + ")");
    if (unfinished_ == 0) Violation();
    unfinished_ = 0;
    return Stopped() ? Status::Aborted("fake NCCL: aborted") : Status::OK();
  }
  void Abort() override { aborted_ = true; }
  void Break(const Status&) override {
    log_->Add("Break");
    aborted_ = true;
  }

 private:
  bool Stopped() const { return aborted_.load() || backend_aborted_->load(); }
  void Violation() {
    std::lock_guard<std::mutex> lock(log_->mu);
    ++log_->contract_violations;
  }
  // Logs the call; a call that waits may not come while enqueued work awaits its Finish.
  Status Enter(const char* call, bool waits) {
    log_->Add(call);
    if (waits && unfinished_ > 0) Violation();
    if (!waits) ++unfinished_;
    if (++calls_ == fail_call_) {
      unfinished_ = 0;  // a failed call enqueued nothing; the group is done
      return Status::RemoteError(std::string("fake NCCL ") + call);
    }
    return Stopped() ? Status::Aborted("fake NCCL: aborted") : Status::OK();
  }

  Communicator* cpu_;
  std::shared_ptr<FakeGpuLog> log_;
  int fail_call_;
  const std::atomic<bool>* backend_aborted_;
  std::atomic<bool> aborted_{false};
  int calls_ = 0;
  int unfinished_ = 0;
  // Completion off the cycle (Defer): guarded by mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<DeferredDone> deferred_;
  int64_t undone_ = 0;  // deferred, `done` not yet returned
  bool draining_ = false;
  Status failure_;
  bool stop_ = false;
  std::thread completer_;
};

}  // namespace

int64_t FakeDeviceOutputsLive() {
  std::lock_guard<std::mutex> lock(TheOutputs().mu);
  return static_cast<int64_t>(TheOutputs().live.size());
}

int64_t FakeDeviceOutputsFreedOnCallerStream() {
  std::lock_guard<std::mutex> lock(TheOutputs().mu);
  return TheOutputs().on_caller_stream;
}

Status FakeGpu::CopyToHost(void* host, const void* device_data, int64_t bytes, int) {
  if (bytes > 0) std::memcpy(host, device_data, static_cast<size_t>(bytes));
  return Status::OK();
}

Status FakeGpu::CopyToDevice(void* device_data, const void* host, int64_t bytes, int) {
  if (bytes > 0) std::memcpy(device_data, host, static_cast<size_t>(bytes));
  return Status::OK();
}

Result<void*> FakeGpu::HostBuffer(int slot, int64_t bytes) {
  auto& b = host_[slot];
  if (b.size() < static_cast<size_t>(bytes)) b.resize(static_cast<size_t>(bytes));
  return static_cast<void*>(b.data());
}

Status FakeGpu::CopyOnDevice(void* to, const void* from, int64_t bytes, int) {
  if (bytes > 0 && from != nullptr) std::memcpy(to, from, static_cast<size_t>(bytes));
  if (bytes > 0 && from == nullptr) std::memset(to, 0, static_cast<size_t>(bytes));
  log_->Add("CopyOnDevice");
  return Status::OK();
}

Result<void*> FakeGpu::DeviceScratch(int, int64_t bytes) {
  if (scratch_.size() < static_cast<size_t>(bytes)) scratch_.resize(static_cast<size_t>(bytes));
  return static_cast<void*>(scratch_.data());
}

Result<void*> FakeGpu::AllocDeviceOutput(int, int64_t bytes) {
  void* data = std::malloc(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  std::lock_guard<std::mutex> lock(TheOutputs().mu);
  TheOutputs().live.insert(data);
  return data;
}

runtime::DeviceOutputFree FakeGpu::device_output_free() const { return &FreeFakeOutput; }

Result<std::unique_ptr<runtime::GpuGroup>> FakeGpu::CreateGroup(Communicator* cpu, int,
                                                                const std::string&) {
  if (!nccl_) return std::unique_ptr<runtime::GpuGroup>();
  return std::unique_ptr<runtime::GpuGroup>(
      std::make_unique<FakeGroup>(cpu, log_, fail_call_, &aborted_));
}

}  // namespace hvd::testing
