#ifndef HVD_RUNTIME_CORE_HANDLE_MANAGER_H_
#define HVD_RUNTIME_CORE_HANDLE_MANAGER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/core/reuse_vector.h"
#include "runtime/core/tensor_queue.h"
#include "runtime/core/tensor_shape.h"
#include "runtime/transports/data_type.h"

namespace hvd::runtime {

// A runtime-allocated output (allgather/alltoall/reducescatter). `data` comes from AllocOutput
// (host memory, `device` -1) or, for a GPU op run on NCCL, from GpuBackend::AllocDeviceOutput
// (memory of CUDA device `device`), and is owned by the handle until TakeOutput hands it to the
// caller (who gives it back with hvd_free / hvd_free_on_stream); FreeOutput gives back either
// kind (output_memory.h). The shape is inline: handing an output over allocates nothing.
struct OutputTensor {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  int32_t device = -1;
};

// HandleManager owns the state behind every hvd_handle_t: completion, status, outputs, and the
// tensor names the handle keeps reserved in its process set's queue until it is released. A
// handle covers `parts` tensor entries (a grouped op has several) and completes when the last
// part finished; its status is the first error reported. Handle ids are positive and not reused
// within 2^39 creations (then the sequence starts again at 1). At most 2^24 handles may be live
// (created and not released) at once.
// Thread-safe: the background thread completes parts while framework threads
// poll/wait/release.
class HandleManager {
 public:
  // The last sequence number: a handle is sequence << 24 | slot, so the next one would make it
  // negative (and never found: until 2026-12-02, after weeks at a high op rate).
  static constexpr uint64_t kLastSequence = (uint64_t{1} << 39) - 1;
  // `first_sequence`: where the sequence starts (a test starts near kLastSequence).
  explicit HandleManager(uint64_t first_sequence = 1) : next_sequence_(first_sequence) {}
  ~HandleManager();
  HandleManager(const HandleManager&) = delete;
  HandleManager& operator=(const HandleManager&) = delete;

  int64_t Create(int32_t parts, int32_t num_outputs);
  // Create for an op that enqueues `names` in `queue`: Release ends their reservation there
  // (TensorQueue::Unreserve). The handle keeps the queue alive until then.
  template <typename Names>
  int64_t Create(int32_t parts, int32_t num_outputs, const std::shared_ptr<TensorQueue>& queue,
                 const Names& names) {
    std::lock_guard<std::mutex> lock(mu_);
    State* s;
    const int64_t h = CreateLocked(parts, num_outputs, &s);
    s->queue = queue;
    for (const auto& name : names) s->names.push_back(name);
    return h;
  }
  // Fails and releases a handle whose entries never made it into its queue (their names are
  // not this handle's to unreserve).
  void Abandon(int64_t handle, const Status& status);
  // Attaches results before FinishPart; ignored for unknown handles.
  void SetOutput(int64_t handle, int32_t index, OutputTensor output);
  void SetReceivedSplits(int64_t handle, std::span<const int32_t> splits);
  void SetIntResult(int64_t handle, int64_t value);
  void FinishPart(int64_t handle, const Status& status);
  // FinishPart for each handle of one executed response, under one lock with one wake-up:
  // a thread waiting on the first of 100 fused tensors wakes once, not once per tensor (each
  // wake-up could switch it in and out on a shared CPU).
  void FinishParts(std::span<const int64_t> handles, const Status& status);

  // kNotFound for unknown handles.
  Result<bool> Poll(int64_t handle);
  // True once `handle` completed, with its status in `*status`, or when it is unknown
  // (kNotFound); false while in flight. One lookup: a waiter's poll and its result together.
  bool Finished(int64_t handle, Status* status);
  // Waits up to `timeout` for `handle` to complete, or for a WakeWaiters after the one that
  // `since` (from wakes()) counted; true once the handle has completed (or is unknown). Unlike
  // Wait it builds no status, so a caller waiting in slices allocates nothing.
  bool WaitDone(int64_t handle, std::chrono::steady_clock::duration timeout, uint64_t since);
  // Ends every WaitDone whose `since` is older (a waiting caller that runs the runtime's
  // iterations when no other thread does: one just finished, so the caller may run the next).
  // Counted, so a wake that comes between a caller's wakes() and its WaitDone is not lost.
  void WakeWaiters() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      wakes_.fetch_add(1, std::memory_order_relaxed);
    }
    done_cv_.notify_all();
  }
  uint64_t wakes() const { return wakes_.load(std::memory_order_relaxed); }
  // Handles created and not yet completed (a hint: it changes under the caller's feet).
  int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  // The op's status once done; kInProgress at the deadline (timeout < 0: none).
  Status Wait(int64_t handle, std::chrono::duration<double> timeout);
  Result<int32_t> NumOutputs(int64_t handle);
  Result<OutputTensor> TakeOutput(int64_t handle, int32_t index);
  // alltoall: the rows received from each member of the set.
  Result<std::vector<int32_t>> ReceivedSplits(int64_t handle);
  Result<int64_t> IntResult(int64_t handle);
  // Frees the handle and ends the reservation of its names. kPreconditionFailed while
  // incomplete. Takes the queue's lock under this one's (a queue never calls in here).
  Status Release(int64_t handle);
  size_t live_handles();

 private:
  struct State {
    int32_t parts_left = 0;
    bool done = false;
    Status status;
    std::vector<OutputTensor> outputs;
    std::vector<bool> taken;
    std::vector<int32_t> received_splits;
    int64_t int_result = -1;
    std::shared_ptr<TensorQueue> queue;  // where `names` are reserved until Release
    ReuseVector<std::string> names;
  };
  int64_t CreateLocked(int32_t parts, int32_t num_outputs, State** state);
  // Ends `handle`'s reservation of its names, frees its untaken outputs and its slot.
  void ReleaseLocked(int64_t handle, State* s);
  // Returns the completed state, or a status explaining why it is not available.
  Result<State*> DoneStateLocked(int64_t handle);

  std::mutex mu_;
  std::condition_variable done_cv_;
  std::atomic<uint64_t> wakes_{0};  // WakeWaiters calls; changed under mu_
  std::atomic<int64_t> in_flight_{0};
  // Handle = sequence number << kSlotBits | slot index: found without hashing, and not reused
  // (the sequence grows, up to kLastSequence) though the slots are.
  static constexpr int kSlotBits = 24;
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
  struct Slot {
    int64_t handle = 0;  // 0: free
    State state;
  };
  static uint64_t SlotIndex(int64_t handle) { return static_cast<uint64_t>(handle) & kSlotMask; }
  State* FindLocked(int64_t handle) {
    const uint64_t index = SlotIndex(handle);
    if (handle <= 0 || index >= slots_.size() || slots_[index].handle != handle) return nullptr;
    return &slots_[index].state;
  }
  uint64_t next_sequence_;
  std::vector<Slot> slots_;
  // Released slots, reused by Create so that steady state allocates nothing; never more than
  // the most handles ever live at once.
  std::vector<uint32_t> free_slots_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_HANDLE_MANAGER_H_
