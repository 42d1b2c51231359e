#ifndef HVD_RUNTIME_TRANSPORTS_NCCL_NCCL_GROUP_H_
#define HVD_RUNTIME_TRANSPORTS_NCCL_NCCL_GROUP_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/transports/gpu_backend.h"

namespace hvd::runtime {

class CudaBackend;

// Where the factors of a scaled sum are applied. With the scaling kernel, as Horovod's GPU path:
// the kernel multiplies each member's input by the prescale before NCCL's plain sum (the product
// rounded once in the type), and multiplies the sum by the postscale (Average's 1/n in it)
// afterwards. NCCL's own pre-multiplied sum is not used there: NCCL 2.28.9's left the last
// element of a one-rank 17x17x17 float32 tensor unwritten, and at 3 ranks it added each later
// rank's product to the partial sum unrounded (every float type), a unit in the last place from
// Horovod's bits.
// Without the kernel (no nvcc at build time) both factors are folded into the pre-multiplied sum,
// which rounds differently where a factor is not 1 (docs/gpu.md "Scale factors").
struct ScalePlan {
  double premul = 1.0;  // NCCL's pre-multiplied sum; 1: a plain sum
  double before = 1.0;  // the kernel on each input, into the buffer NCCL sums; 1: none
  double after = 1.0;   // the kernel on the result; 1: none
  bool scaled() const { return premul != 1.0; }
};

// `comm`'s asynchronous state: ncclCommGetAsyncError's answer where the query itself failed,
// else the state it gave (ncclSuccess, ncclInProgress or the communicator's error).
ncclResult_t AsyncState(ncclComm_t comm);

// The NCCL communicator of one process set (gpu_backend.h GpuGroup). Its calls run on the
// backend's stream of its device and wait for completion by polling an event, so that a NCCL
// error (ncclCommGetAsyncError), hvd_abort or the runtime's timeout end the wait with
// ncclCommAbort instead of a hang.
class NcclGroup final : public GpuGroup {
 public:
  // `peers`: the CPU communicator of the same members (may be null), asked during long waits
  // whether a member is gone (PeerGone). `scale_kernel`: every member's device runs hvd's
  // scaling kernel (DecideGpuPath's "NK"), else the factors go into NCCL's pre-multiplied sum on
  // every member alike (NCCL needs one reduction on all of them).
  NcclGroup(CudaBackend* backend, ncclComm_t comm, int device, int rank, int size,
            Communicator* peers, bool scale_kernel);
  ~NcclGroup() override;

  const char* name() const override { return "NCCL"; }
  bool CanReduce(DataType dtype, ReduceOp op, bool scaled) const override;
  Status Allreduce(std::span<const void* const> inputs, std::span<void* const> outputs,
                   std::span<const int64_t> counts, DataType dtype, ReduceOp op, double prescale,
                   double postscale) override;
  Status Broadcast(const void* input, void* output, int64_t bytes, int root) override;
  // Equal sizes: ncclAllGather. Uneven: one ncclBroadcast per member with data, grouped (as
  // Horovod does): it runs on the rings NCCL already set up for the collectives, moving what
  // ncclAllGather's ring would, where ncclSend/ncclRecv would connect every pair of members
  // (on the socket transport, a connection each).
  Status Allgatherv(const void* input, void* output,
                    std::span<const int64_t> bytes_per_rank) override;
  // Equal counts: ncclReduceScatter. Uneven (hvd's split: the first dim0 % size members get a
  // row more): one ncclReduce per member with data, rooted there, grouped (as Horovod does).
  Status ReduceScatter(const void* input, void* output, std::span<const int64_t> counts_per_rank,
                       DataType dtype, ReduceOp op, double prescale, double postscale) override;
  // Grouped ncclSend/ncclRecv with every other member that has data; this member's own piece
  // is a device copy on the same stream.
  Status Alltoallv(const void* input, std::span<const int64_t> send_bytes, void* output,
                   std::span<const int64_t> recv_bytes) override;
  Status Finish(const char* what) override;
  void Abort() override { abort_requested_ = true; }
  // The failure first: a completion off the cycle that finds the communicator aborted fails
  // with it, not with "the communicator was aborted".
  void Break(const Status& why) override {
    FailDeferred(why);
    AbortComm();
  }
  // Whether the set's CPU communicator knows a member to be gone (Communicator::CheckPeers),
  // asked only while a completion off the cycle is in flight: only such a collective can hold
  // hvd's stream without a wait of its own that asks (a removed set's communicator, its peers
  // gone on purpose, must not fail another set's op). OK otherwise, or without a communicator.
  // The cycle thread's, between its calls (CudaBackend::WaitEvent).
  Status PeersGone();
  Status EnqueueAllreduce(std::span<const void* const> inputs, std::span<void* const> outputs,
                          std::span<const int64_t> counts, DataType dtype, ReduceOp op,
                          double prescale, double postscale) override;
  // An event recorded on the stream, queued for the completion thread (started at the first
  // Defer), which polls it as Wait does (NCCL's asynchronous error, Abort, the timeout; not
  // PeerGone: the CPU communicator is the cycle thread's, whose next cycle notices a lost peer
  // and fails the set, FailDeferred).
  Status Defer(const char* what, DeferredDone done) override;
  void FailDeferred(const Status& status) override;
  // Waits for the stream as Finish does (PeerGone included: this is the cycle thread), then
  // for the completion thread to have called every `done`.
  Status Drain() override;

 private:
  // Whether a wait should stop: this group's Abort or the backend's.
  bool Stopping() const;
  // Whether the CPU communicator knows a member to be gone (Communicator::CheckPeers), asked
  // once `*next` has passed and then every kPeerCheckInterval: NCCL over shared memory, P2P or
  // NVLink never notices a dead peer and would wait for the whole timeout. *gone says who.
  bool PeerGone(std::chrono::steady_clock::time_point* next, Status* gone) const;
  // Waits for the work enqueued on `stream`; on a failure aborts the communicator.
  Status Wait(cudaStream_t stream, const char* what);
  Status NcclFailure(const char* what, ncclResult_t result);
  // Runs `call(comm_)`, NCCL calls on the communicator, under comm_mu_ (see there); without a
  // communicator (aborted) answers ncclInvalidUsage and calls nothing.
  template <typename Call>
  ncclResult_t Locked(const Call& call) {
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_ == nullptr) return ncclInvalidUsage;
    return call(comm_);
  }
  // AsyncState of the communicator, under comm_mu_; ncclInvalidUsage once it is aborted.
  ncclResult_t QueryState();
  // Aborts the communicator once; the group is then unusable (comm_ null).
  void AbortComm();
  // What every call checks first: a live communicator, and no deferred completion failed (one
  // that did aborts it: the cycle thread's call fails with the completion's error).
  Status Usable();
  Result<void*> Fusion(int64_t bytes);
  // The communicator is non-blocking (bounded init): a call may answer ncclInProgress while NCCL
  // still enqueues it. Waits until it is enqueued (OK), or fails as Wait does (a NCCL error,
  // hvd_abort, the timeout), aborting the communicator.
  Status Settle(ncclResult_t result, const char* what);
  // Runs `calls(comm)` (NCCL calls on comm, answering the first failure or ncclSuccess) between
  // ncclGroupStart and ncclGroupEnd, all under comm_mu_, the group ended also when a call
  // failed; the end is settled.
  template <typename Calls>
  Status Grouped(const char* what, const Calls& calls);
  // The checks every call makes first: a live communicator, `sizes` one per member; the stream.
  Result<cudaStream_t> Begin(size_t sizes);
  // Enqueues the allreduce (and fusion copies, and the plan's scaling of the result) on
  // `stream`, settled.
  Status Enqueue(std::span<const void* const> inputs, std::span<void* const> outputs,
                 std::span<const int64_t> counts, int64_t elem, ncclDataType_t type, ncclRedOp_t op,
                 const ScalePlan& plan, cudaStream_t stream);
  // Enqueues the kernel: `count` elements from `in` times `factor` into `out` (may be `in`), on
  // `stream` in its order; a launch failure aborts the communicator. `what` names the step.
  Status Scale(const void* in, void* out, int64_t count, ncclDataType_t type, double factor,
               cudaStream_t stream, const char* what);

  // A completion handed to the completion thread (Defer).
  struct Deferred {
    cudaEvent_t event = nullptr;
    const char* what = "";
    DeferredDone done;
    std::chrono::steady_clock::time_point since;  // Defer's
  };
  // The completion thread: each deferred completion in turn, its `done` called outside the lock.
  void CompleteDeferred();
  // Polls `d.event` as Wait does, without touching the communicator but for
  // ncclCommGetAsyncError (under comm_mu_) and without aborting it: the cycle thread does that
  // at its next call (deferred_failed_); the timeout counts from `started`.
  // A failed completion, before its `done`: aborts the communicator (a call the device is still
  // in returns) and waits, bounded by the timeout but with no other way out, until the device
  // passed the op's event, so that nothing queued before it writes the op's tensors later.
  void Quiesce(const Deferred& d, const Status& failure);
  Status WaitDeferred(const Deferred& d, std::chrono::steady_clock::time_point started);
  // The failure every later deferred completion and call gets (OK: none yet).
  Status DeferredFailure();
  // Stops the completion thread: what it still holds fails with `status`.
  void StopCompletions(const Status& status);

  // Where the calls' time went, logged at debug level when the group goes (HVD_LOG_LEVEL=debug):
  // how many NCCL calls (and group ends) were settled, how many of them NCCL answered
  // ncclInProgress (a non-blocking communicator may hand a launch to a thread of its own, which
  // Settle then polls) and the time that polling took, and the waits for the device. They say
  // how much of an op's time over a bare NCCL call is the enqueue and how much the wait.
  struct CallStats {
    int64_t settled = 0;
    int64_t in_progress = 0;
    std::chrono::nanoseconds in_progress_time{0};
    int64_t waits = 0;
    std::chrono::nanoseconds wait_time{0};
  };
  CallStats stats_;
  CudaBackend* backend_;
  Communicator* peers_;  // the set's CPU communicator; outlives the group (Controller)
  ncclComm_t comm_;      // null once aborted
  int device_;
  int rank_;  // this member's
  int size_;  // ranks in the communicator
  bool scale_kernel_;
  cudaEvent_t done_ = nullptr;
  void* fusion_ = nullptr;
  int64_t fusion_bytes_ = 0;
  std::atomic<bool> abort_requested_{false};
  // Every NCCL call on comm_ holds it (Locked, QueryState, Grouped for the whole group,
  // AbortComm), on the cycle thread too: NCCL's communicators are not thread-safe, and with
  // completion off the cycle the completion thread polls ncclCommGetAsyncError while the cycle
  // thread enqueues the next op. On a non-blocking communicator that poll is not a read: NCCL
  // 2.28's ncclCommGetAsyncError completes the launch the last call left running (joins its
  // thread, frees its job), so a poll racing a launch, or another poll, joins a thread not yet
  // started or frees the job twice: the likely cause of gpu_worker_async_nccl_np3's
  // intermittent SIGSEGV on the GPU (2026-11-29). The emulator exits naming the two calls when they
  // meet (test/gpu_emulator OneCaller). comm_ itself changes only under it (AbortComm).
  std::mutex comm_mu_;
  std::mutex deferred_mu_;  // guards the members below
  std::condition_variable deferred_cv_;
  std::deque<Deferred> deferred_;
  int64_t undone_ = 0;  // deferred and its `done` not yet returned (Drain waits for 0)
  std::condition_variable undone_cv_;
  std::vector<cudaEvent_t> spare_events_;
  Status deferred_failure_;
  bool stop_completions_ = false;
  std::atomic<bool> deferred_failed_{false};  // deferred_failure_ is set: read without the lock
  std::atomic<int64_t> deferred_waits_{0};
  std::atomic<int64_t> deferred_wait_ns_{0};
  std::thread completer_;
};

// CudaBackend::CreateGroup: the decision exchange over `cpu` and, for NCCL, the communicator's
// bootstrap (rank 0's ncclUniqueId sent over `cpu`). Null: stage through the host. The NCCL
// communicator is created non-blocking and waited for like an op: a member that never joins
// (it died after the exchange) fails the others with kTimeout after the backend's timeout, and
// the backend's Abort ends the wait at once (kAborted).
Result<std::unique_ptr<GpuGroup>> CreateNcclGroup(CudaBackend* backend, Communicator* cpu,
                                                  int device, const std::string& mode);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_NCCL_NCCL_GROUP_H_
