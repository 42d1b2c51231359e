#include "runtime/core/handle_manager.h"

#include <string>

#include "runtime/core/output_memory.h"

namespace hvd::runtime {
namespace {

Status Unknown(int64_t handle) {
  return Status::NotFound("unknown handle " + std::to_string(handle));
}

}  // namespace

HandleManager::~HandleManager() {
  for (auto& [h, state] : states_) {
    for (size_t i = 0; i < state.outputs.size(); ++i) {
      if (!state.taken[i]) FreeOutput(state.outputs[i].data);
    }
  }
}

int64_t HandleManager::Create(int32_t parts, int32_t num_outputs) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t h = next_handle_++;
  State* s;
  if (spare_.empty()) {
    s = &states_[h];
  } else {
    // A released handle's node (its vectors keep their capacity): no allocation.
    Node node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = h;
    s = &states_.insert(std::move(node)).position->second;
  }
  s->parts_left = parts;
  s->done = parts == 0;
  if (!s->done) in_flight_.fetch_add(1, std::memory_order_relaxed);
  s->status = Status::OK();
  s->outputs.resize(num_outputs);
  s->taken.assign(num_outputs, false);
  s->received_splits.clear();
  s->int_result = -1;
  s->set_id = -1;
  s->names.clear();
  return h;
}

void HandleManager::SetOutput(int64_t handle, int32_t index, OutputTensor output) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end() || index < 0 ||
      index >= static_cast<int32_t>(it->second.outputs.size())) {
    FreeOutput(output.data);
    return;
  }
  FreeOutput(it->second.outputs[index].data);
  it->second.outputs[index] = std::move(output);
}

void HandleManager::SetReceivedSplits(int64_t handle, std::span<const int32_t> splits) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  // assign: a recycled state keeps its vector's buffer
  if (it != states_.end()) it->second.received_splits.assign(splits.begin(), splits.end());
}

void HandleManager::SetIntResult(int64_t handle, int64_t value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it != states_.end()) it->second.int_result = value;
}

void HandleManager::FinishPart(int64_t handle, const Status& status) {
  FinishParts(std::span<const int64_t>(&handle, 1), status);
}

void HandleManager::FinishParts(std::span<const int64_t> handles, const Status& status) {
  bool any_done = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t handle : handles) {
      auto it = states_.find(handle);
      if (it == states_.end() || it->second.done) continue;
      State& s = it->second;
      if (!status.ok() && s.status.ok()) s.status = status;
      if (--s.parts_left > 0) continue;
      s.done = true;
      any_done = true;
      in_flight_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  if (any_done) done_cv_.notify_all();
}

Result<bool> HandleManager::Poll(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) return Unknown(handle);
  return it->second.done;
}

bool HandleManager::Finished(int64_t handle, Status* status) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) {
    *status = Unknown(handle);
    return true;
  }
  if (!it->second.done) return false;
  *status = it->second.status;
  return true;
}

Status HandleManager::Wait(int64_t handle, std::chrono::duration<double> timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) return Unknown(handle);
  auto is_done = [&] {
    auto found = states_.find(handle);
    return found == states_.end() || found->second.done;
  };
  if (timeout.count() < 0) {
    done_cv_.wait(lock, is_done);
  } else if (!done_cv_.wait_for(lock, timeout, is_done)) {
    return Status(StatusCode::kInProgress,
                  "handle " + std::to_string(handle) + " did not complete within the wait timeout");
  }
  it = states_.find(handle);
  if (it == states_.end()) return Unknown(handle);
  return it->second.status;
}

bool HandleManager::WaitDone(int64_t handle, std::chrono::steady_clock::duration timeout,
                             uint64_t since) {
  std::unique_lock<std::mutex> lock(mu_);
  bool done = false;
  done_cv_.wait_for(lock, timeout, [&] {
    auto found = states_.find(handle);
    done = found == states_.end() || found->second.done;
    return done || wakes_.load(std::memory_order_relaxed) != since;
  });
  return done;
}

Result<HandleManager::State*> HandleManager::DoneStateLocked(int64_t handle) {
  auto it = states_.find(handle);
  if (it == states_.end()) return Unknown(handle);
  if (!it->second.done) {
    return Status::PreconditionFailed("handle " + std::to_string(handle) + " has not completed");
  }
  return &it->second;
}

Result<int32_t> HandleManager::NumOutputs(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  return static_cast<int32_t>(s->outputs.size());
}

Result<OutputTensor> HandleManager::TakeOutput(int64_t handle, int32_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  if (!s->status.ok()) return s->status;
  if (index < 0 || index >= static_cast<int32_t>(s->outputs.size())) {
    return Status::InvalidArgument("output index " + std::to_string(index) + " out of range [0, " +
                                   std::to_string(s->outputs.size()) + ")");
  }
  if (s->taken[index]) {
    return Status::PreconditionFailed("output " + std::to_string(index) + " of handle " +
                                      std::to_string(handle) + " was already taken");
  }
  s->taken[index] = true;
  return s->outputs[index];
}

Result<int32_t> HandleManager::ReceivedSplits(int64_t handle, int32_t* out, int32_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  if (!s->status.ok()) return s->status;
  const auto count = static_cast<int32_t>(s->received_splits.size());
  if (capacity < count || (out == nullptr && count > 0)) {
    return Status::InvalidArgument("splits capacity " + std::to_string(capacity) +
                                   " is less than " + std::to_string(count));
  }
  std::copy(s->received_splits.begin(), s->received_splits.end(), out);
  return count;
}

Result<int64_t> HandleManager::IntResult(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  if (!s->status.ok()) return s->status;
  return s->int_result;
}

Status HandleManager::Release(int64_t handle, ReuseVector<std::string>* names, int32_t* set_id) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  if (names) *names = s->names;
  if (set_id) *set_id = s->set_id;
  for (size_t i = 0; i < s->outputs.size(); ++i) {
    if (!s->taken[i]) FreeOutput(s->outputs[i].data);
    s->outputs[i].data = nullptr;
  }
  s->outputs.clear();
  spare_.push_back(states_.extract(handle));
  return Status::OK();
}

size_t HandleManager::live_handles() {
  std::lock_guard<std::mutex> lock(mu_);
  return states_.size();
}

}  // namespace hvd::runtime
