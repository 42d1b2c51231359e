#ifndef HVD_COMMON_KV_STORE_H_
#define HVD_COMMON_KV_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"

namespace hvd::control {

// The in-memory key-value state behind the rendezvous server (and usable as a single-process
// store). Every key lives in a namespace (the job id), so two jobs can share one store
// without seeing each other's keys. Waits are one-shot callbacks rather than blocked threads,
// so an event loop can wait on many keys at once.
//
// Thread-safe: one mutex guards everything. Wait callbacks run on the thread whose Set/Add
// made the key appear, after the lock is released, so a callback may call back into the store.
class KvStore {
 public:
  using WaitCallback = std::function<void(const std::string& value)>;

  void Set(const std::string& ns, const std::string& key, std::string value);
  std::optional<std::string> Get(const std::string& ns, const std::string& key) const;
  // Adds `delta` to the decimal integer stored at key (absent = 0) and stores the sum.
  // InvalidArgument naming the key when the stored value is not an integer or it overflows.
  Result<int64_t> Add(const std::string& ns, const std::string& key, int64_t delta);
  // True when the key existed.
  bool Delete(const std::string& ns, const std::string& key);
  // Deletes every key of `ns` that starts with `prefix`; returns how many. Waiters stay.
  size_t DeletePrefix(const std::string& ns, const std::string& prefix);
  // Records that `caller` finished with `prefix` (Horovod's DELETE-to-finish). Once `expected`
  // distinct callers have, deletes every key starting with `prefix` and forgets the scope;
  // returns true then. InvalidArgument when `expected` < 1 or differs from an earlier caller's.
  Result<bool> FinishScope(const std::string& ns, const std::string& prefix, int64_t expected,
                           uint64_t caller);

  // Returns the value when the key exists. Otherwise registers `callback` to run once with the
  // value when the key is next set, stores its id in `*waiter_id`, and returns nullopt.
  std::optional<std::string> GetOrWait(const std::string& ns, const std::string& key,
                                       WaitCallback callback, uint64_t* waiter_id);
  // Unregisters a waiter. True when it was still pending, i.e. its callback will never run;
  // false when it already ran (or is running) or never existed.
  bool CancelWait(uint64_t waiter_id);
  // Drops every pending waiter without running it (shutdown).
  void CancelAllWaits();

  size_t KeyCount(const std::string& ns) const;

 private:
  using Slot = std::pair<std::string, std::string>;  // (namespace, key)
  struct Waiter {
    uint64_t id;
    WaitCallback callback;
  };
  struct Scope {
    int64_t expected = 0;
    std::set<uint64_t> finished;
  };

  // Removes and returns the waiters of `slot`; the caller runs them after unlocking.
  std::vector<Waiter> TakeWaitersLocked(const Slot& slot);

  mutable std::mutex mu_;
  std::map<Slot, std::string> data_;
  std::map<Slot, std::vector<Waiter>> waiters_;
  std::unordered_map<uint64_t, Slot> waiter_slots_;
  std::map<Slot, Scope> scopes_;  // (namespace, prefix)
  uint64_t next_waiter_id_ = 1;
};

}  // namespace hvd::control

#endif  // HVD_COMMON_KV_STORE_H_
