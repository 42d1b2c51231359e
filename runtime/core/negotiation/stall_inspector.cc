#include "runtime/core/negotiation/stall_inspector.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/logging.h"

namespace {

// "60" for whole seconds, "0.2" otherwise.
std::string Seconds(std::chrono::milliseconds ms) {
  std::ostringstream s;
  s << static_cast<double>(ms.count()) / 1000.0;
  return s.str();
}

}  // namespace

namespace hvd::runtime {

StallInspector::StallInspector(bool enabled, std::chrono::milliseconds check_time,
                               std::chrono::milliseconds shutdown_time,
                               std::vector<int32_t> global_ranks)
    : enabled_(enabled && check_time.count() > 0),
      check_time_(check_time),
      shutdown_time_(shutdown_time),
      global_ranks_(std::move(global_ranks)) {
  if (enabled_ && shutdown_time_.count() > 0 && shutdown_time_ < check_time_) {
    HVD_LOG_WARNING(
        "HVD_STALL_SHUTDOWN_TIME_SECONDS is less than HVD_STALL_CHECK_TIME_SECONDS; stall "
        "shutdown is disabled.");
    shutdown_time_ = std::chrono::milliseconds(0);
  }
}

std::string StallInspector::Check(std::chrono::steady_clock::time_point now,
                                  const std::vector<PendingTensor>& pending) {
  if (!enabled_ || pending.empty()) return "";
  if (checked_once_ && now - last_check_ < check_time_) return "";
  bool shut_down = false;
  std::vector<int32_t> missing;
  std::string report = Report(now, pending, &shut_down, &missing);
  if (report.empty()) {
    last_missing_.clear();  // the stall is over: a rank missing again is asked again
    return "";
  }
  for (int32_t rank : missing) {
    if (!std::binary_search(last_missing_.begin(), last_missing_.end(), rank)) {
      newly_missing_.push_back(rank);
    }
  }
  last_missing_ = std::move(missing);
  checked_once_ = true;
  last_check_ = now;
  ++warnings_;
  last_warning_ = report;
  HVD_LOG_WARNING("{}", report);
  if (!shut_down) return "";
  std::string reason = "One or more rank (marked by \"!\") is stalled for longer than " +
                       Seconds(shutdown_time_) + " seconds. Will shutdown.";
  HVD_LOG_ERROR("{}", reason);
  return reason + "\n" + report;
}

std::string StallInspector::Report(std::chrono::steady_clock::time_point now,
                                   const std::vector<PendingTensor>& pending, bool* shut_down,
                                   std::vector<int32_t>* missing_ranks) const {
  std::map<int32_t, std::vector<std::string>> missing;  // global rank -> tensors
  std::map<int32_t, bool> past_shutdown;
  for (const PendingTensor& p : pending) {
    auto waited = now - p.first_seen;
    if (waited < check_time_) continue;
    bool fatal = shutdown_time_.count() > 0 && waited >= shutdown_time_;
    for (size_t r = 0; r < p.reported.size(); ++r) {
      if (p.reported[r]) continue;
      int32_t global = r < global_ranks_.size() ? global_ranks_[r] : static_cast<int32_t>(r);
      missing[global].push_back(p.name);
      past_shutdown[global] = past_shutdown[global] || fatal;
      *shut_down = *shut_down || fatal;
    }
  }
  if (missing.empty()) return "";
  for (const auto& [rank, names] : missing) missing_ranks->push_back(rank);  // ascending
  std::ostringstream s;
  s << "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of "
       "ranks and are waiting for remainder of ranks for more than "
    << Seconds(check_time_)
    << " seconds. This may indicate that different ranks are trying to submit different tensors "
       "or that only subset of ranks is submitting tensors, which will cause deadlock. \n"
       "Missing ranks:";
  for (const auto& [rank, names] : missing) {
    s << "\n" << rank << (past_shutdown.at(rank) ? "!" : "") << ": [";
    for (size_t i = 0; i < names.size() && i < 5; ++i) s << (i ? ", " : "") << names[i];
    if (names.size() > 5) s << " ...";
    s << "]";
  }
  return s.str();
}

}  // namespace hvd::runtime
