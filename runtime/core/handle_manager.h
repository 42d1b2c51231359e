#ifndef HVD_RUNTIME_CORE_HANDLE_MANAGER_H_
#define HVD_RUNTIME_CORE_HANDLE_MANAGER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "runtime/core/reuse_vector.h"
#include "runtime/core/tensor_shape.h"
#include "runtime/transports/data_type.h"

namespace hvd::runtime {

// A runtime-allocated output (allgather/alltoall/reducescatter). `data` comes from AllocOutput
// and is owned by the handle until TakeOutput hands it to the caller (who gives it back with
// hvd_free / FreeOutput). The shape is inline: handing an output over allocates nothing.
struct OutputTensor {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  int32_t device = -1;
};

// HandleManager owns the state behind every hvd_handle_t: completion, status, outputs, and the
// tensor names the handle keeps reserved in its process set's queue until it is released. A
// handle covers `parts` tensor entries (a grouped op has several) and completes when the last
// part finished; its status is the first error reported. Handle ids are never reused.
// Thread-safe: the background thread completes parts while framework threads
// poll/wait/release.
class HandleManager {
 public:
  HandleManager() = default;
  ~HandleManager();
  HandleManager(const HandleManager&) = delete;
  HandleManager& operator=(const HandleManager&) = delete;

  int64_t Create(int32_t parts, int32_t num_outputs);
  // Attaches results before FinishPart; ignored for unknown handles.
  void SetOutput(int64_t handle, int32_t index, OutputTensor output);
  void SetReceivedSplits(int64_t handle, std::span<const int32_t> splits);
  void SetIntResult(int64_t handle, int64_t value);
  void FinishPart(int64_t handle, const Status& status);
  // FinishPart for each handle of one executed response, under one lock with one wake-up:
  // a thread waiting on the first of 100 fused tensors wakes once, not once per tensor (each
  // wake-up could switch it in and out on a shared CPU).
  void FinishParts(std::span<const int64_t> handles, const Status& status);
  // Records the names `handle` reserved in process set `set_id`'s queue (TensorQueue::Add),
  // handed back by Release so the caller can unreserve them.
  template <typename Names>
  void SetReservedNames(int64_t handle, int32_t set_id, const Names& names) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = states_.find(handle);
    if (it == states_.end()) return;
    it->second.set_id = set_id;
    it->second.names.clear();
    for (const auto& name : names) it->second.names.push_back(name);
  }

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
  // alltoall: the rows received from each member; copied into `out` when `capacity` holds
  // them all (kInvalidArgument otherwise). Returns the count.
  Result<int32_t> ReceivedSplits(int64_t handle, int32_t* out, int32_t capacity);
  Result<int64_t> IntResult(int64_t handle);
  // kPreconditionFailed while incomplete. When given, `names`/`set_id` receive the names the
  // handle reserved (empty / -1 when none).
  Status Release(int64_t handle, ReuseVector<std::string>* names = nullptr,
                 int32_t* set_id = nullptr);
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
    int32_t set_id = -1;
    ReuseVector<std::string> names;  // reserved in set `set_id`'s queue until Release
  };
  // Returns the completed state, or a status explaining why it is not available.
  Result<State*> DoneStateLocked(int64_t handle);

  std::mutex mu_;
  std::condition_variable done_cv_;
  std::atomic<uint64_t> wakes_{0};  // WakeWaiters calls; changed under mu_
  std::atomic<int64_t> in_flight_{0};
  int64_t next_handle_ = 1;
  using States = std::unordered_map<int64_t, State>;
  using Node = States::node_type;
  States states_;
  // Released handles' nodes, reused by Create so that steady state allocates nothing; never
  // more than the most handles ever live at once.
  std::vector<Node> spare_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_HANDLE_MANAGER_H_
