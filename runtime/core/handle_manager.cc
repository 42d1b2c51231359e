#include "runtime/core/handle_manager.h"

#include <cstdlib>
#include <string>

#include "common/logging.h"
#include "runtime/core/execution/output_memory.h"

namespace hvd::runtime {
namespace {

Status Unknown(int64_t handle) {
  return Status::NotFound("unknown handle " + std::to_string(handle));
}

}  // namespace

HandleManager::~HandleManager() {
  for (Slot& slot : slots_) {
    if (slot.handle == 0) continue;
    for (size_t i = 0; i < slot.state.outputs.size(); ++i) {
      if (!slot.state.taken[i]) FreeOutput(slot.state.outputs[i].data);
    }
  }
}

int64_t HandleManager::Create(int32_t parts, int32_t num_outputs) {
  std::lock_guard<std::mutex> lock(mu_);
  State* s;
  return CreateLocked(parts, num_outputs, &s);
}

int64_t HandleManager::CreateLocked(int32_t parts, int32_t num_outputs, State** state) {
  // A released handle's slot first (its vectors keep their capacity): no allocation.
  uint64_t index;
  if (free_slots_.empty()) {
    index = slots_.size();
    if (index > kSlotMask) {
      HVD_LOG_ERROR("more than {} handles are live at once (unreleased): aborting", kSlotMask + 1);
      std::abort();
    }
    slots_.emplace_back();
  } else {
    index = free_slots_.back();
    free_slots_.pop_back();
  }
  const int64_t h = static_cast<int64_t>(next_sequence_ << kSlotBits | index);
  next_sequence_ = next_sequence_ == kLastSequence ? 1 : next_sequence_ + 1;
  slots_[index].handle = h;
  State* s = &slots_[index].state;
  s->parts_left = parts;
  s->done = parts == 0;
  if (!s->done) in_flight_.fetch_add(1, std::memory_order_relaxed);
  s->status = Status::OK();
  s->outputs.resize(num_outputs);
  s->taken.assign(num_outputs, false);
  s->received_splits.clear();
  s->int_result = -1;
  s->queue.reset();
  s->names.clear();
  *state = s;
  return h;
}

void HandleManager::SetOutput(int64_t handle, int32_t index, OutputTensor output) {
  std::lock_guard<std::mutex> lock(mu_);
  State* s = FindLocked(handle);
  if (s == nullptr || index < 0 || index >= static_cast<int32_t>(s->outputs.size())) {
    FreeOutput(output.data);
    return;
  }
  FreeOutput(s->outputs[index].data);
  s->outputs[index] = std::move(output);
}

void HandleManager::SetReceivedSplits(int64_t handle, std::span<const int32_t> splits) {
  std::lock_guard<std::mutex> lock(mu_);
  // assign: a recycled state keeps its vector's buffer
  if (State* s = FindLocked(handle)) s->received_splits.assign(splits.begin(), splits.end());
}

void HandleManager::SetIntResult(int64_t handle, int64_t value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (State* s = FindLocked(handle)) s->int_result = value;
}

void HandleManager::FinishPart(int64_t handle, const Status& status) {
  FinishParts(std::span<const int64_t>(&handle, 1), status);
}

void HandleManager::FinishParts(std::span<const int64_t> handles, const Status& status) {
  bool any_done = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t handle : handles) {
      State* found = FindLocked(handle);
      if (found == nullptr || found->done) continue;
      State& s = *found;
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
  State* s = FindLocked(handle);
  if (s == nullptr) return Unknown(handle);
  return s->done;
}

bool HandleManager::Finished(int64_t handle, Status* status) {
  std::lock_guard<std::mutex> lock(mu_);
  const State* s = FindLocked(handle);
  if (s == nullptr) {
    *status = Unknown(handle);
    return true;
  }
  if (!s->done) return false;
  *status = s->status;
  return true;
}

Status HandleManager::Wait(int64_t handle, std::chrono::duration<double> timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (FindLocked(handle) == nullptr) return Unknown(handle);
  auto is_done = [&] {
    const State* found = FindLocked(handle);
    return found == nullptr || found->done;
  };
  if (timeout.count() < 0) {
    done_cv_.wait(lock, is_done);
  } else if (!done_cv_.wait_for(lock, timeout, is_done)) {
    return Status(StatusCode::kInProgress,
                  "handle " + std::to_string(handle) + " did not complete within the wait timeout");
  }
  const State* s = FindLocked(handle);
  if (s == nullptr) return Unknown(handle);
  return s->status;
}

bool HandleManager::WaitDone(int64_t handle, std::chrono::steady_clock::duration timeout,
                             uint64_t since) {
  std::unique_lock<std::mutex> lock(mu_);
  bool done = false;
  done_cv_.wait_for(lock, timeout, [&] {
    const State* found = FindLocked(handle);
    done = found == nullptr || found->done;
    return done || wakes_.load(std::memory_order_relaxed) != since;
  });
  return done;
}

Result<HandleManager::State*> HandleManager::DoneStateLocked(int64_t handle) {
  State* s = FindLocked(handle);
  if (s == nullptr) return Unknown(handle);
  if (!s->done) {
    return Status::PreconditionFailed("handle " + std::to_string(handle) + " has not completed");
  }
  return s;
}

Result<int32_t> HandleManager::NumOutputs(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  if (!s->status.ok()) return s->status;  // a failed op has no outputs (as TakeOutput says)
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

Result<std::vector<int32_t>> HandleManager::ReceivedSplits(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  if (!s->status.ok()) return s->status;
  return s->received_splits;
}

Result<int64_t> HandleManager::IntResult(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  if (!s->status.ok()) return s->status;
  return s->int_result;
}

Status HandleManager::Release(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(State * s, DoneStateLocked(handle));
  ReleaseLocked(handle, s);
  return Status::OK();
}

void HandleManager::ReleaseLocked(int64_t handle, State* s) {
  if (s->queue) {
    s->queue->Unreserve(s->names);
    s->queue.reset();
  }
  for (size_t i = 0; i < s->outputs.size(); ++i) {
    if (!s->taken[i]) FreeOutput(s->outputs[i].data);
    s->outputs[i].data = nullptr;
  }
  s->outputs.clear();
  const uint64_t index = SlotIndex(handle);
  slots_[index].handle = 0;
  free_slots_.push_back(static_cast<uint32_t>(index));
}

size_t HandleManager::live_handles() {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size() - free_slots_.size();
}

void HandleManager::Abandon(int64_t handle, const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  State* s = FindLocked(handle);
  if (s == nullptr) return;
  s->queue.reset();  // the names are not this handle's to unreserve
  s->names.clear();
  if (!s->done) {
    s->done = true;
    s->status = status;
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
  ReleaseLocked(handle, s);
}

}  // namespace hvd::runtime
