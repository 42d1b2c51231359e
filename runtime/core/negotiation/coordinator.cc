#include "runtime/core/negotiation/coordinator.h"

#include <algorithm>

#include "runtime/core/negotiation/request_validator.h"

namespace hvd::runtime {

Coordinator::Coordinator(int set_size, std::vector<int32_t> global_ranks)
    : size_(set_size), global_ranks_(std::move(global_ranks)), joined_(set_size, false) {}

bool Coordinator::Add(const Request& request, std::chrono::steady_clock::time_point now) {
  if (request.rank < 0 || request.rank >= size_) return false;  // defensive: malformed peer
  if (request.type == OpType::kJoin) {
    if (!joined_[request.rank]) {
      joined_[request.rank] = true;
      ++joined_count_;
    }
    last_joined_ = request.rank;
    Recheck();
    return false;
  }
  Entry& e = table_[request.name];
  const bool fresh = e.requests.empty();
  if (fresh) {
    e.pending.name = request.name;
    e.pending.first_seen = now;
    e.pending.reported.assign(size_, false);
  }
  if (e.pending.reported[request.rank]) return false;  // a rank cannot submit a name twice
  e.pending.reported[request.rank] = true;
  e.requests.push_back(request);
  if (!request.group.empty()) {
    GroupTally& tally = groups_[request.group];
    if (tally.size.empty()) {
      tally.size.assign(size_, 0);
      tally.seen.assign(size_, 0);
    }
    tally.size[request.rank] = request.group_size;
    ++tally.seen[request.rank];
    if (request.group_size != e.requests.front().group_size) tally.mismatched = true;
  }
  if (!e.ready && IsReadyLocked(e)) {
    e.ready = true;
    e.ready_seq = seq_++;
  }
  return fresh;
}

bool Coordinator::IsReadyLocked(const Entry& e) const {
  for (int r = 0; r < size_; ++r) {
    if (!e.pending.reported[r] && !joined_[r]) return false;
  }
  return true;
}

void Coordinator::Recheck() {
  for (auto& [name, e] : table_) {
    if (!e.ready && IsReadyLocked(e)) {
      e.ready = true;
      e.ready_seq = seq_++;
    }
  }
}

bool Coordinator::AllMembersIn(const GroupTally& tally, int rank) const {
  return joined_[rank] || (tally.size[rank] > 0 && tally.seen[rank] >= tally.size[rank]);
}

std::vector<Response> Coordinator::TakeReady() {
  // Count ready members per group so a group is released only as a whole.
  std::map<std::string, int> group_ready;
  for (const auto& [name, e] : table_) {
    if (e.ready && !e.requests.front().group.empty()) ++group_ready[e.requests.front().group];
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, e] : table_) {
    if (!e.ready) continue;
    const Request& first = e.requests.front();
    // A mismatched group's ready members go as they are: ConstructResponse fails them.
    if (!first.group.empty() && group_ready[first.group] < first.group_size) {
      auto group = groups_.find(first.group);
      if (group == groups_.end() || !group->second.mismatched) continue;
    }
    order.emplace_back(e.ready_seq, name);
  }
  std::sort(order.begin(), order.end());
  std::vector<Response> out;
  for (const auto& [seq, name] : order) {
    Entry& e = table_[name];
    std::sort(e.requests.begin(), e.requests.end(),
              [](const Request& a, const Request& b) { return a.rank < b.rank; });
    out.push_back(ConstructResponse(e.requests, joined_count_ > 0, size_, global_ranks_));
    table_.erase(name);
  }
  FailMismatched(&out);
  // A group whose members are all answered, and every rank's all in, is over.
  for (auto it = groups_.begin(); it != groups_.end();) {
    bool over = true;
    for (int r = 0; r < size_ && over; ++r) over = AllMembersIn(it->second, r);
    for (const auto& [name, e] : table_) {
      if (!over) break;
      over = e.requests.front().group != it->first;
    }
    it = over ? groups_.erase(it) : std::next(it);
  }
  if (joined_count_ == size_) {
    Response join;
    join.type = OpType::kJoin;
    join.names = {"join"};
    join.last_joined_rank = last_joined_;
    out.push_back(join);
    joined_.assign(size_, false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
  return out;
}

void Coordinator::FailMismatched(std::vector<Response>* out) {
  for (auto it = table_.begin(); it != table_.end();) {
    const Request& first = it->second.requests.front();
    auto group = first.group.empty() ? groups_.end() : groups_.find(first.group);
    bool fail = group != groups_.end() && group->second.mismatched;
    for (int r = 0; r < size_ && fail; ++r) {
      fail = it->second.pending.reported[r] || AllMembersIn(group->second, r);
    }
    if (!fail) {
      ++it;
      continue;
    }
    Response error;
    error.type = OpType::kError;
    error.names = {it->first};
    error.group = first.group;
    error.error = "Mismatched grouped operations: tensor '" + it->first + "' is in a group of " +
                  std::to_string(first.group_size) +
                  " tensors on some ranks, and the group has other members on others.";
    out->push_back(std::move(error));
    it = table_.erase(it);
  }
}

std::vector<PendingTensor> Coordinator::Pending() const {
  std::vector<PendingTensor> out;
  for (const auto& [name, e] : table_) {
    PendingTensor p = e.pending;
    for (int r = 0; r < size_; ++r) p.reported[r] = p.reported[r] || joined_[r];
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace hvd::runtime
