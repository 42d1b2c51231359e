#include "runtime/core/process_set.h"

#include <string>

namespace hvd::runtime {

int32_t ProcessSetTable::NextId() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_id_++;
}

void ProcessSetTable::Insert(ProcessSetInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  int32_t id = info.id;
  sets_[id] = std::move(info);
  version_.fetch_add(1, std::memory_order_release);
}

std::optional<ProcessSetInfo> ProcessSetTable::Find(int32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return std::nullopt;
  return it->second;
}

bool ProcessSetTable::FindController(int32_t id, std::shared_ptr<Controller>* controller) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return false;
  *controller = it->second.controller;
  return true;
}

std::optional<int32_t> ProcessSetTable::FindByRanks(const std::vector<int32_t>& ranks) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, info] : sets_) {
    if (info.ranks == ranks) return id;
  }
  return std::nullopt;
}

std::shared_ptr<Controller> ProcessSetTable::Remove(int32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return nullptr;
  std::shared_ptr<Controller> c = std::move(it->second.controller);
  sets_.erase(it);
  version_.fetch_add(1, std::memory_order_release);
  return c;
}

std::vector<std::shared_ptr<Controller>> ProcessSetTable::Controllers() const {
  std::vector<std::shared_ptr<Controller>> out;
  Controllers(&out);
  return out;
}

void ProcessSetTable::Controllers(std::vector<std::shared_ptr<Controller>>* out) const {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, info] : sets_) {
    if (info.controller) out->push_back(info.controller);
  }
}

std::vector<int32_t> ProcessSetTable::Ids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int32_t> out;
  for (const auto& [id, info] : sets_) out.push_back(id);
  return out;
}

void ProcessSetTable::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  sets_.clear();
  next_id_ = 1;
  version_.fetch_add(1, std::memory_order_release);
}

Status ValidateProcessSetRanks(const std::vector<int32_t>& ranks, int32_t world_size) {
  if (ranks.empty()) return Status::InvalidArgument("a process set needs at least one rank");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world_size) {
      return Status::InvalidArgument("process set rank " + std::to_string(ranks[i]) +
                                     " is out of range [0, " + std::to_string(world_size) + ")");
    }
    if (i > 0 && ranks[i] <= ranks[i - 1]) {
      return Status::InvalidArgument("process set ranks must be sorted and unique; got " +
                                     std::to_string(ranks[i - 1]) + " before " +
                                     std::to_string(ranks[i]));
    }
  }
  return Status::OK();
}

}  // namespace hvd::runtime
