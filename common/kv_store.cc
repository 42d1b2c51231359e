#include "common/kv_store.h"

#include <charconv>

namespace hvd::control {

std::vector<KvStore::Waiter> KvStore::TakeWaitersLocked(const Slot& slot) {
  auto it = waiters_.find(slot);
  if (it == waiters_.end()) return {};
  std::vector<Waiter> taken = std::move(it->second);
  waiters_.erase(it);
  for (const Waiter& w : taken) waiter_slots_.erase(w.id);
  return taken;
}

void KvStore::Set(const std::string& ns, const std::string& key, std::string value) {
  std::vector<Waiter> wake;
  Slot slot{ns, key};
  {
    std::lock_guard<std::mutex> lock(mu_);
    data_[slot] = value;
    wake = TakeWaitersLocked(slot);
  }
  for (Waiter& w : wake) w.callback(value);
}

std::optional<std::string> KvStore::Get(const std::string& ns, const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = data_.find({ns, key});
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

Result<int64_t> KvStore::Add(const std::string& ns, const std::string& key, int64_t delta) {
  std::vector<Waiter> wake;
  Slot slot{ns, key};
  int64_t sum = 0;
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t current = 0;
    auto it = data_.find(slot);
    if (it != data_.end()) {
      const std::string& s = it->second;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), current);
      if (ec != std::errc() || end != s.data() + s.size()) {
        return Status::InvalidArgument("value of key '" + key + "' is not an integer");
      }
    }
    if (__builtin_add_overflow(current, delta, &sum)) {
      return Status::InvalidArgument("adding " + std::to_string(delta) + " to key '" + key +
                                     "' overflows");
    }
    text = std::to_string(sum);
    data_[slot] = text;
    wake = TakeWaitersLocked(slot);
  }
  for (Waiter& w : wake) w.callback(text);
  return sum;
}

bool KvStore::Delete(const std::string& ns, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return data_.erase({ns, key}) > 0;
}

size_t KvStore::DeletePrefix(const std::string& ns, const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t deleted = 0;
  auto it = data_.lower_bound({ns, prefix});
  while (it != data_.end() && it->first.first == ns &&
         it->first.second.compare(0, prefix.size(), prefix) == 0) {
    it = data_.erase(it);
    ++deleted;
  }
  return deleted;
}

Result<bool> KvStore::FinishScope(const std::string& ns, const std::string& prefix,
                                  int64_t expected, uint64_t caller) {
  if (expected < 1) {
    return Status::InvalidArgument("finish-scope '" + prefix + "' expects " +
                                   std::to_string(expected) + " callers; it must be at least 1");
  }
  std::lock_guard<std::mutex> lock(mu_);
  Scope& scope = scopes_[{ns, prefix}];
  if (scope.expected != 0 && scope.expected != expected) {
    return Status::InvalidArgument(
        "finish-scope '" + prefix + "' called with expected=" + std::to_string(expected) +
        " after an earlier caller said " + std::to_string(scope.expected));
  }
  scope.expected = expected;
  scope.finished.insert(caller);
  if (static_cast<int64_t>(scope.finished.size()) < expected) return false;
  auto it = data_.lower_bound({ns, prefix});
  while (it != data_.end() && it->first.first == ns &&
         it->first.second.compare(0, prefix.size(), prefix) == 0) {
    it = data_.erase(it);
  }
  scopes_.erase({ns, prefix});
  return true;
}

std::optional<std::string> KvStore::GetOrWait(const std::string& ns, const std::string& key,
                                              WaitCallback callback, uint64_t* waiter_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot slot{ns, key};
  auto it = data_.find(slot);
  if (it != data_.end()) return it->second;
  uint64_t id = next_waiter_id_++;
  waiters_[slot].push_back({id, std::move(callback)});
  waiter_slots_.emplace(id, std::move(slot));
  *waiter_id = id;
  return std::nullopt;
}

bool KvStore::CancelWait(uint64_t waiter_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto slot_it = waiter_slots_.find(waiter_id);
  if (slot_it == waiter_slots_.end()) return false;
  auto list_it = waiters_.find(slot_it->second);
  waiter_slots_.erase(slot_it);
  if (list_it == waiters_.end()) return false;
  auto& list = list_it->second;
  for (auto w = list.begin(); w != list.end(); ++w) {
    if (w->id == waiter_id) {
      list.erase(w);
      if (list.empty()) waiters_.erase(list_it);
      return true;
    }
  }
  return false;
}

void KvStore::CancelAllWaits() {
  std::map<Slot, std::vector<Waiter>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(waiters_);
    waiter_slots_.clear();
  }
  // Callbacks (and whatever they captured) are destroyed here, outside the lock.
}

size_t KvStore::KeyCount(const std::string& ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (auto it = data_.lower_bound({ns, ""}); it != data_.end() && it->first.first == ns; ++it) {
    ++n;
  }
  return n;
}

}  // namespace hvd::control
