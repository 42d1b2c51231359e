#ifndef HVD_RUNTIME_CORE_NEGOTIATION_COORDINATOR_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_COORDINATOR_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/core/negotiation/message.h"

namespace hvd::runtime {

// A tensor rank 0 has heard about from some but not all ranks.
struct PendingTensor {
  std::string name;
  std::chrono::steady_clock::time_point first_seen;
  std::vector<bool> reported;  // by set rank
};

// Coordinator is rank 0's message table for one process set: it collects the uncached
// requests every rank sends, decides which tensors are ready (every member either submitted
// it or has joined), validates them into responses, releases a group only when all its
// members are ready, and tracks join. Owned and used by the set's controller on the
// background thread only.
class Coordinator {
 public:
  // `global_ranks`: the members' global ranks (for error messages); empty: positions.
  explicit Coordinator(int set_size, std::vector<int32_t> global_ranks = {});

  // True when `request` opened a new pending tensor (the timeline's NEGOTIATE start).
  bool Add(const Request& request, std::chrono::steady_clock::time_point now);
  // Responses that became ready since the last call, in the order they became ready.
  std::vector<Response> TakeReady();
  std::vector<PendingTensor> Pending() const;
  bool empty() const { return table_.empty() && joined_count_ == 0; }
  bool any_joined() const { return joined_count_ > 0; }

 private:
  struct Entry {
    std::vector<Request> requests;
    PendingTensor pending;
    bool ready = false;
    int64_t ready_seq = 0;
  };
  bool IsReadyLocked(const Entry& e) const;
  void Recheck();

  int size_;
  std::vector<int32_t> global_ranks_;
  std::map<std::string, Entry> table_;
  // Groups whose ranks gave different member counts under one name (Add): TakeReady releases
  // them as they are, so that their members fail on every rank (ConstructResponse) instead of
  // waiting for members some ranks never submit (until 2026-12-01 the rank that grouped fewer
  // completed and the other waited until the stall shutdown).
  std::set<std::string> mismatched_groups_;
  std::vector<bool> joined_;
  int joined_count_ = 0;
  int32_t last_joined_ = -1;
  int64_t seq_ = 0;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_COORDINATOR_H_
