// NcclGroup's completion off the cycle (HVD_GPU_ASYNC_COMPLETION=1, nccl_group.h): Defer hands
// an event recorded behind the enqueued work to the group's completion thread, which polls it
// and calls the op's `done` in order; FailDeferred and the group's end fail what is left.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "common/logging.h"
#include "runtime/transports/nccl/cuda_backend.h"
#include "runtime/transports/nccl/nccl_group.h"

namespace hvd::runtime {

Status NcclGroup::Defer(const char* what, DeferredDone done) {
  // Called on the thread running the cycle, after RunGpu gave it its device back (it may be a
  // framework thread waiting on an op): Stream() selects the group's device, this gives it back.
  ScopedDevice scoped(device_);
  HVD_RETURN_IF_ERROR(scoped.status());
  HVD_RETURN_IF_ERROR(Usable());
  HVD_ASSIGN_OR_RETURN(cudaStream_t stream, backend_->Stream(device_));
  Deferred d{nullptr, what, std::move(done), std::chrono::steady_clock::now()};
  {
    std::lock_guard<std::mutex> lock(deferred_mu_);
    if (!spare_events_.empty()) {
      d.event = spare_events_.back();
      spare_events_.pop_back();
    }
  }
  if (d.event == nullptr) {
    const cudaError_t err = cudaEventCreateWithFlags(&d.event, cudaEventDisableTiming);
    if (err != cudaSuccess) {
      AbortComm();  // as a failed call: the set fails, the work queued is in an unknown state
      return CudaError("creating a CUDA event", err);
    }
  }
  const cudaError_t err = cudaEventRecord(d.event, stream);
  if (err != cudaSuccess) {
    cudaEventDestroy(d.event);
    AbortComm();
    return CudaError(std::string("NCCL ") + what, err);
  }
  std::lock_guard<std::mutex> lock(deferred_mu_);
  if (!completer_.joinable()) completer_ = std::thread([this] { CompleteDeferred(); });
  deferred_.push_back(std::move(d));
  ++undone_;
  deferred_cv_.notify_one();
  return Status::OK();
}

Status NcclGroup::PeersGone() {
  {
    std::lock_guard<std::mutex> lock(deferred_mu_);
    if (undone_ == 0) return Status::OK();
  }
  return peers_ != nullptr ? peers_->CheckPeers() : Status::OK();
}

Status NcclGroup::Drain() {
  {
    std::lock_guard<std::mutex> lock(deferred_mu_);
    if (undone_ == 0) return Status::OK();
  }
  // The device first, watched from this thread as a waiting cycle's op is: a member that exited
  // ends the wait at once (the completion thread could only wait out the timeout). On the
  // group's device, the thread's own given back after (hvd_shutdown's caller may run this).
  ScopedDevice scoped(device_);
  Status s = scoped.status().ok() ? Usable() : scoped.status();
  if (s.ok()) {
    auto stream = backend_->Stream(device_);
    s = stream.ok() ? Wait(*stream, "allreduce") : stream.status();
  }
  if (!s.ok()) FailDeferred(s);
  // Then the calls of `done`, quick once the device passed every event (or the failure is
  // recorded: the completion thread no longer waits).
  std::unique_lock<std::mutex> lock(deferred_mu_);
  undone_cv_.wait(lock, [&] { return undone_ == 0; });
  return s;
}

void NcclGroup::FailDeferred(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(deferred_mu_);
    if (!deferred_failure_.ok()) return;
    deferred_failure_ = status.ok() ? Status::Aborted("NCCL: the process set failed") : status;
    deferred_failed_ = true;
  }
  deferred_cv_.notify_all();
}

Status NcclGroup::DeferredFailure() {
  std::lock_guard<std::mutex> lock(deferred_mu_);
  return deferred_failure_;
}

void NcclGroup::StopCompletions(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(deferred_mu_);
    stop_completions_ = true;
    // Also the completion in progress, if any: the join must not wait out the timeout.
    if (deferred_failure_.ok()) {
      deferred_failure_ = status;
      deferred_failed_ = true;
    }
  }
  deferred_cv_.notify_all();
  if (completer_.joinable()) completer_.join();
}

void NcclGroup::CompleteDeferred() {
  cudaSetDevice(device_);  // the events are the device's
  std::unique_lock<std::mutex> lock(deferred_mu_);
  for (;;) {
    deferred_cv_.wait(lock, [&] { return stop_completions_ || !deferred_.empty(); });
    if (deferred_.empty()) return;  // stopped, nothing left
    Deferred d = std::move(deferred_.front());
    deferred_.pop_front();
    const Status failure = deferred_failure_;
    lock.unlock();
    // The timeout counts from the later of its Defer and the previous completion: the device
    // runs the stream in order, so an op queued behind others (the cycle enqueues a step's
    // allreduces back to back) gets the whole timeout for its own work, as the waiting cycle's
    // call does, not what is left after the ones before it.
    const auto started = std::max(d.since, std::chrono::steady_clock::now());
    const Status s = failure.ok() ? WaitDeferred(d, started) : failure;
    if (!s.ok()) {
      // The group's own failure, recorded and logged before Quiesce aborts the communicator:
      // the cycle thread's next call then fails with it, not with the aborted communicator's
      // "invalid usage" (until 2026-12-02 NCCL's own error could be lost so). FailDeferred's,
      // the runtime's, is logged by the runtime.
      lock.lock();
      if (deferred_failure_.ok()) {
        HVD_LOG_ERROR("NCCL group of {} members (member {}): {}", size_, rank_, s.message());
        deferred_failure_ = s;
        deferred_failed_ = true;
      }
      lock.unlock();
      Quiesce(d, s);
    }
    const auto took = std::chrono::steady_clock::now() - d.since;
    deferred_waits_.fetch_add(1);
    deferred_wait_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    lock.lock();
    // An event the device may never pass (a failed op) is not used again.
    if (s.ok()) {
      spare_events_.push_back(d.event);
    } else {
      cudaEventDestroy(d.event);
    }
    lock.unlock();
    d.done(s);
    lock.lock();
    if (--undone_ == 0) undone_cv_.notify_all();
  }
}

// Until 2026-11-30 a failed completion called `done` at once: the NCCL call, still waiting on
// the device for a dead peer, was aborted only at the cycle thread's next call of the group (or
// at the shutdown), and the copies and the postscale queued behind it then ran into tensors the
// caller owned again; a cudaFree or cudaDeviceSynchronize of the caller's hung meanwhile
// (gpu_emu_worker_late_write_async). The waiting cycle does the same in
// OpExecutor::StopDeviceWork.
void NcclGroup::Quiesce(const Deferred& d, const Status& failure) {
  AbortComm();
  const Status quiet = backend_->WaitToTheEnd(d.event, std::string("NCCL ") + d.what);
  if (!quiet.ok()) {
    HVD_LOG_ERROR(
        "after the failure of a NCCL {} ({}), hvd's CUDA stream of device {} did not finish the "
        "work queued on it: {}; that work may still write the op's tensors",
        d.what, failure.message(), device_, quiet.message());
  }
}

Status NcclGroup::WaitDeferred(const Deferred& d, std::chrono::steady_clock::time_point started) {
  const std::string what = d.what;
  auto check = [&] {
    if (deferred_failed_.load()) return DeferredFailure();
    if (abort_requested_.load() || backend_->aborted()) {
      return Status::Aborted("NCCL " + what + " aborted");
    }
    ncclResult_t async = ncclSuccess;
    {
      std::lock_guard<std::mutex> lock(comm_mu_);
      if (comm_ == nullptr) return Status::Aborted("the NCCL communicator was aborted");
      async = AsyncState(comm_);
    }
    if (async == ncclSuccess || async == ncclInProgress) return Status::OK();
    const std::string message = "NCCL " + what + " failed: " + ncclGetErrorString(async);
    return async == ncclRemoteError ? Status::RemoteError(message) : Status::Internal(message);
  };
  Status st = PollEvent(
      d.event, started + backend_->timeout(), check,
      [&](cudaError_t e) { return CudaError("NCCL " + what, e); },
      [&] {
        return Status::Timeout("NCCL " + what + " did not finish within " +
                               backend_->TimeoutText() + "; a peer is gone or stuck");
      });
  // As the cycle's Wait: a completed event is the op's end only on a communicator that still
  // reports no error.
  return st.ok() ? check() : st;
}

}  // namespace hvd::runtime
