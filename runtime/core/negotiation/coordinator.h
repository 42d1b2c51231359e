#ifndef HVD_RUNTIME_CORE_NEGOTIATION_COORDINATOR_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_COORDINATOR_H_

#include <chrono>
#include <cstdint>
#include <map>
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
  // Every open group's tally, per set rank: the member count it gave (0: none seen yet) and how
  // many of its members arrived. A rank has all of its members in once seen == size.
  struct GroupTally {
    std::vector<int32_t> size;
    std::vector<int32_t> seen;
    bool mismatched = false;  // two ranks gave different member counts under this name
  };
  bool AllMembersIn(const GroupTally& tally, int rank) const;
  // Answers the mismatched groups' members that can be: each fails on every rank once every
  // rank has either submitted it or has all of its own members in (the members only some ranks
  // have fail on those; the others have no such tensor and skip the response), so that every
  // rank's grouped handle completes, and none waits for a member no other rank will submit. A
  // member is never failed before a rank that will still submit it has (until 2026-12-02 all of
  // a group's members failed as soon as two ranks disagreed, and a rank whose requests came
  // later submitted them afresh, and waited until the stall shutdown).
  void FailMismatched(std::vector<Response>* out);
  std::map<std::string, GroupTally> groups_;
  std::vector<bool> joined_;
  int joined_count_ = 0;
  int32_t last_joined_ = -1;
  int64_t seq_ = 0;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_COORDINATOR_H_
