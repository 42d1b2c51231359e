#ifndef HVD_RUNTIME_TENSOR_QUEUE_H_
#define HVD_RUNTIME_TENSOR_QUEUE_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "runtime/message.h"

namespace hvd::runtime {

// One enqueued tensor of this rank: its request plus where to read and write.
struct TensorEntry {
  Request request;
  const void* input = nullptr;
  void* output = nullptr;  // allreduce/broadcast: the caller's buffer (may alias input)
  int64_t handle = 0;
  int32_t output_index = 0;  // runtime-allocated output slot within the handle
  int64_t enqueued_us = 0;   // timeline clock at enqueue (0 = timeline off): QUEUE span
};

// TensorQueue holds one process set's in-flight tensors of this rank: a name-keyed table
// (names are unique while in flight) and the requests not yet seen by the coordinator.
// Thread-safe: framework threads Add, the background thread pops and takes.
class TensorQueue {
 public:
  // Adds all entries atomically (a group is all or nothing). A name already in flight is
  // InvalidArgument with Horovod's duplicate-name message; nothing is added then.
  Status Add(std::vector<TensorEntry> entries);
  // Appends the requests added since the last call, in enqueue order.
  void PopRequests(std::vector<Request>* out);
  // Removes and returns the entry, or nullopt (e.g. a joined rank has none).
  std::optional<TensorEntry> Take(const std::string& name);
  // Removes and returns every entry (shutdown / failure).
  std::vector<TensorEntry> TakeAll();
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, TensorEntry> table_;
  std::vector<Request> fresh_;
};

// Horovod's message for a name reused while in flight.
extern const char kDuplicateNameError[];

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TENSOR_QUEUE_H_
