#ifndef HVD_RUNTIME_CORE_TENSOR_QUEUE_H_
#define HVD_RUNTIME_CORE_TENSOR_QUEUE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "runtime/core/message.h"

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

// TensorQueue holds one process set's in-flight tensors of this rank: a name-keyed table, the
// requests not yet seen by the coordinator, and the reserved names. A name is reserved from
// Add until Unreserve, which the runtime calls when the op's handle is released (its result
// collected), not when the op has run: so "two ops in flight under one name" fails the same
// way on every rank however fast the first op completes (Horovod relies on its cycle time).
//
// Steady state without allocation: a taken entry is handed back with Recycle once its op has
// run, and the next Add copies into that recycled table node (key, request name, shape and
// all keep their buffers). The spare nodes never outnumber the most entries ever in flight.
//
// Thread-safe: framework threads Add, the background thread pops, takes and recycles. The
// request pointers PopRequests hands out point into table nodes; they stay valid (and the
// request unchanged) until that entry is taken, which only the background thread does.
class TensorQueue {
 public:
  using Table = std::unordered_map<std::string, TensorEntry>;
  // An entry taken out of the table (empty when there was none); `mapped()` is the entry.
  using Taken = Table::node_type;

  // Copies all entries in atomically (a group is all or nothing) and reserves their names. A
  // name still reserved is InvalidArgument with Horovod's duplicate-name message; nothing is
  // added then.
  Status Add(std::span<const TensorEntry> entries);
  // Frees names reserved by Add (unknown names are ignored).
  template <typename Names>
  void Unreserve(const Names& names) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& name : names) {
      auto it = reserved_.find(name);
      if (it != reserved_.end()) spare_names_.push_back(reserved_.extract(it));
    }
  }
  // Appends the requests added since the last call, in enqueue order.
  void PopRequests(std::vector<const Request*>* out);
  // Removes the entry for `name`; an empty Taken if there is none (a joined rank has none).
  Taken Take(const std::string& name);
  // Take for each of `names` in order, appended to `out`, under one lock (a fused response of
  // 100 tensors takes the lock once, not 100 times).
  template <typename Names>
  void Take(const Names& names, std::vector<Taken>* out) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& name : names) {
      auto it = table_.find(name);
      out->push_back(it == table_.end() ? Taken() : table_.extract(it));
    }
    size_.store(table_.size(), std::memory_order_release);
  }
  // The entry for `name` without taking it, or null. Background thread: the entry stays valid
  // until that thread takes it.
  const TensorEntry* Find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = table_.find(name);
    return it == table_.end() ? nullptr : &it->second;
  }
  // Gives taken entries back for reuse (empty ones are skipped); leaves `taken` empty.
  void Recycle(std::vector<Taken>* taken);
  // Removes and returns every entry (shutdown / failure).
  std::vector<TensorEntry> TakeAll();
  // Entries in the table; lock-free (a snapshot that may change right after).
  size_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  Table table_;
  std::atomic<size_t> size_{0};  // table_.size(), written under mu_
  std::vector<const Request*> fresh_;
  std::vector<Taken> spare_;
  using Names = std::unordered_set<std::string>;
  Names reserved_;
  // Unreserved names' nodes, reused by Add (steady state without allocation).
  std::vector<Names::node_type> spare_names_;
};

// Horovod's message for a name reused while in flight.
extern const char kDuplicateNameError[];

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_TENSOR_QUEUE_H_
