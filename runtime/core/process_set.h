#ifndef HVD_RUNTIME_CORE_PROCESS_SET_H_
#define HVD_RUNTIME_CORE_PROCESS_SET_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/core/negotiation/controller.h"

namespace hvd::runtime {

// A registered process set: sorted global ranks, and this rank's controller for it (null
// when this rank is not a member).
struct ProcessSetInfo {
  int32_t id = 0;
  std::vector<int32_t> ranks;
  std::shared_ptr<Controller> controller;
};

// ProcessSetTable maps process-set ids to sets. Id 0 is the global set; later ids are handed
// out in registration order and never reused within one initialization, so every rank that
// registers the same sets in the same order assigns the same ids. Thread-safe: framework
// threads look sets up while the background thread adds and removes them.
class ProcessSetTable {
 public:
  int32_t NextId();
  void Insert(ProcessSetInfo info);
  std::optional<ProcessSetInfo> Find(int32_t id) const;
  // False when `id` is not registered; else `*controller` is this rank's (null: not a member).
  // Unlike Find, copies nothing but the pointer (the enqueue path).
  bool FindController(int32_t id, std::shared_ptr<Controller>* controller) const;
  std::optional<int32_t> FindByRanks(const std::vector<int32_t>& ranks) const;
  std::shared_ptr<Controller> Remove(int32_t id);
  // Controllers of the sets this rank belongs to, in id order (global first).
  std::vector<std::shared_ptr<Controller>> Controllers() const;
  // The same into `*out` (cleared first; its capacity is reused by the background thread).
  void Controllers(std::vector<std::shared_ptr<Controller>>* out) const;
  std::vector<int32_t> Ids() const;
  void Clear();
  // Changes with every Insert, Remove and Clear: a snapshot from Controllers is current while
  // this is what it was when the snapshot was taken.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  std::atomic<uint64_t> version_{0};
  std::map<int32_t, ProcessSetInfo> sets_;
  int32_t next_id_ = 1;
};

// Checks that `ranks` are sorted, unique and within [0, world_size); the error names the
// offending entry.
Status ValidateProcessSetRanks(const std::vector<int32_t>& ranks, int32_t world_size);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_PROCESS_SET_H_
