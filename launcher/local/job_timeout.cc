#include "launcher/local/job_timeout.h"

#include <sstream>

#include "launcher/local/stack_dump.h"

namespace hvd::launcher {

JobTimeout::JobTimeout(double limit_s, Clock::time_point start)
    : limit_s_(limit_s),
      deadline_(start + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(limit_s > 0 ? limit_s : 0))) {}

JobTimeout::Due JobTimeout::Check(Clock::time_point now, bool stopping) {
  if (limit_s_ > 0 && !expired_ && !stopping && now >= deadline_) {
    expired_ = true;
    stop_at_ = now + kStackDumpWait;
    return Due::kStacks;
  }
  if (stop_at_ && now >= *stop_at_) {
    stop_at_.reset();
    return Due::kStop;
  }
  return Due::kNothing;
}

std::optional<JobTimeout::Clock::time_point> JobTimeout::NextDeadline(bool stopping) const {
  if (stop_at_) return stop_at_;
  if (limit_s_ > 0 && !expired_ && !stopping) return deadline_;
  return std::nullopt;
}

std::string JobTimeout::ExpiryLine(const std::string& process) const {
  std::ostringstream limit;
  limit << limit_s_;
  return "the job ran past --timeout (" + limit.str() + " s): every " + process +
         " prints its Python stacks, then the job is stopped";
}

}  // namespace hvd::launcher
