#ifndef HVD_RUNTIME_CORE_NEGOTIATION_STALL_INSPECTOR_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_STALL_INSPECTOR_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/negotiation/coordinator.h"

namespace hvd::runtime {

// StallInspector runs on a set's rank 0: when a tensor has waited longer than the check time
// for some ranks, it logs Horovod's warning naming the missing (global) ranks and their
// tensors, at most once per check interval; when one waited longer than the shutdown time
// (if that is > check time > 0) it returns a reason to shut the job down. Background thread.
class StallInspector {
 public:
  StallInspector(bool enabled, std::chrono::milliseconds check_time,
                 std::chrono::milliseconds shutdown_time, std::vector<int32_t> global_ranks);

  // Returns a non-empty shutdown reason when the job must stop.
  std::string Check(std::chrono::steady_clock::time_point now,
                    const std::vector<PendingTensor>& pending);
  int64_t warnings() const { return warnings_; }
  // The (global) ranks the last Check's warning named that the warning before it did not:
  // hvdrun asks these for their stacks once per stall (control::kStackRequestKey). Cleared here.
  std::vector<int32_t> TakeNewlyMissing() { return std::exchange(newly_missing_, {}); }
  const std::string& last_warning() const { return last_warning_; }

 private:
  std::string Report(std::chrono::steady_clock::time_point now,
                     const std::vector<PendingTensor>& pending, bool* shut_down,
                     std::vector<int32_t>* missing_ranks) const;

  bool enabled_;
  std::chrono::milliseconds check_time_;
  std::chrono::milliseconds shutdown_time_;
  std::vector<int32_t> global_ranks_;
  std::chrono::steady_clock::time_point last_check_;
  bool checked_once_ = false;
  int64_t warnings_ = 0;
  std::string last_warning_;
  std::vector<int32_t> last_missing_;   // named by the last warning, ascending
  std::vector<int32_t> newly_missing_;  // see TakeNewlyMissing
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_STALL_INSPECTOR_H_
