#ifndef HVD_RUNTIME_CORE_TENSOR_QUEUE_H_
#define HVD_RUNTIME_CORE_TENSOR_QUEUE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "runtime/core/negotiation/message.h"

namespace hvd::runtime {

// One enqueued tensor of this rank: its request plus where to read and write.
struct TensorEntry {
  Request request;
  const void* input = nullptr;
  void* output = nullptr;  // allreduce/broadcast: the caller's buffer (may alias input)
  int64_t handle = 0;
  int32_t output_index = 0;  // runtime-allocated output slot within the handle
  int64_t enqueued_us = 0;   // timeline clock at enqueue (0 = timeline off): QUEUE span
  // GPU tensors (request.device >= 0): GpuBackend::MarkReady's event on the producer's stream.
  void* ready = nullptr;

  // Back to the defaults, keeping the request's buffers for reuse.
  void Clear() {
    request.Clear();
    input = nullptr;
    output = nullptr;
    handle = 0;
    output_index = 0;
    enqueued_us = 0;
    ready = nullptr;
  }
};

// TensorQueue holds one process set's in-flight tensors of this rank: a name-keyed table and
// the requests not yet seen by the coordinator. An entry stays in the table from Add until its
// handle is released (Unreserve), not just until its op ran (Take): its name is reserved that
// long, so "two ops in flight under one name" fails the same way on every rank however fast the
// first op completes (Horovod relies on its cycle time). The table is the reservation: one
// hash lookup per name to add, one to take, one to release.
//
// Steady state without allocation: Unreserve keeps the entry's table node, and the next Add
// copies into it (key, request name, shape and all keep their buffers). The spare nodes never
// outnumber the most entries ever in flight.
//
// Thread-safe: framework threads Add and Unreserve, the background thread pops and takes. The
// request pointers PopRequests hands out and the entries Take returns point into table nodes;
// they stay valid until the handle is released, which cannot happen before the op completed.
class TensorQueue {
 public:
  // Copies all entries in (a group is all or nothing). A name still reserved, or repeated in
  // `entries`, is InvalidArgument with Horovod's duplicate-name message; nothing is added then.
  Status Add(std::span<const TensorEntry> entries);
  // Ends the reservation of `names` (a released handle's): their entries leave the table. Names
  // not in it are ignored.
  template <typename Names>
  void Unreserve(const Names& names) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& name : names) {
      auto it = table_.find(name);
      if (it == table_.end()) continue;
      if (!it->second.taken) pending_.fetch_sub(1, std::memory_order_release);
      spare_.push_back(table_.extract(it));
    }
  }
  // Appends the requests added since the last call, in enqueue order.
  void PopRequests(std::vector<const Request*>* out);
  // The entry for `name`, marked taken (its op runs now); null when there is no entry not yet
  // taken (a joined rank has none). The entry stays valid until its handle is released.
  TensorEntry* Take(const std::string& name);
  // Take for each of `names` in order, appended to `out`, under one lock (a fused response of
  // 100 tensors takes the lock once, not 100 times).
  template <typename Names>
  void Take(const Names& names, std::vector<TensorEntry*>* out) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& name : names) out->push_back(TakeLocked(name));
  }
  // The entry for `name` not yet taken, without taking it, or null. Background thread: the
  // entry stays valid until that thread takes it.
  const TensorEntry* Find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = table_.find(name);
    return it == table_.end() || it->second.taken ? nullptr : &it->second.entry;
  }
  // Takes every entry not yet taken and returns copies (shutdown / failure). Their names stay
  // reserved until their handles are released. With `close` not OK, every later Add fails with
  // it: the queue's controller runs no more cycles (its set was removed, or the runtime stopped),
  // and an enqueue that found the controller before that would otherwise wait for ever.
  std::vector<TensorEntry> TakeAll(const Status& close = Status::OK());
  // Entries added and not yet taken; lock-free (a snapshot that may change right after).
  size_t size() const { return pending_.load(std::memory_order_acquire); }

 private:
  struct Slot {
    TensorEntry entry;
    bool taken = false;
  };
  using Table = std::unordered_map<std::string, Slot>;

  TensorEntry* TakeLocked(const std::string& name) {
    auto it = table_.find(name);
    if (it == table_.end() || it->second.taken) return nullptr;
    it->second.taken = true;
    pending_.fetch_sub(1, std::memory_order_release);
    return &it->second.entry;
  }

  mutable std::mutex mu_;
  Table table_;
  std::atomic<size_t> pending_{0};  // entries not taken, written under mu_
  std::vector<const Request*> fresh_;
  std::vector<Table::node_type> spare_;
  Status closed_;  // under mu_: not OK once TakeAll closed the queue
};

// Horovod's message for a name reused while in flight.
extern const char kDuplicateNameError[];

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_TENSOR_QUEUE_H_
