#ifndef HVD_LAUNCHER_LOCAL_JOB_TIMEOUT_H_
#define HVD_LAUNCHER_LOCAL_JOB_TIMEOUT_H_

#include <chrono>
#include <optional>
#include <string>

namespace hvd::launcher {

// hvdrun --timeout, for job control and elastic jobs alike: past the limit the job's processes
// are asked for their Python stacks (launcher/local/stack_dump.h), and kStackDumpWait later the
// job is stopped as on a failure, so the stacks come first. The caller's event loop polls at
// most until NextDeadline() and acts on what Check() says is due. Not thread-safe.
class JobTimeout {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Due {
    kNothing,
    kStacks,  // the limit passed: say ExpiryLine(), ask every process for its stacks
    kStop,    // kStackDumpWait after kStacks: stop the job
  };

  // `limit_s` from `start`; 0 = no limit (never due).
  explicit JobTimeout(double limit_s, Clock::time_point start = Clock::now());

  // What is due at `now`, each at most once. `stopping`: the job is already being stopped for
  // another reason (a failure, a signal to hvdrun), so the limit no longer matters.
  Due Check(Clock::time_point now, bool stopping);
  // The next time Check may have something due, if any.
  std::optional<Clock::time_point> NextDeadline(bool stopping) const;

  // The limit passed (the job ends with exit code 124).
  bool expired() const { return expired_; }
  double limit_s() const { return limit_s_; }
  // "the job ran past --timeout (2.5 s): every <process> prints its Python stacks, then the job
  // is stopped".
  std::string ExpiryLine(const std::string& process) const;

 private:
  double limit_s_;
  Clock::time_point deadline_;
  bool expired_ = false;
  std::optional<Clock::time_point> stop_at_;  // kStackDumpWait after the expiry
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_JOB_TIMEOUT_H_
