#ifndef HVD_COMMON_REJECTION_LOG_H_
#define HVD_COMMON_REJECTION_LOG_H_

#include <chrono>
#include <cstdint>

namespace hvd {

// Which refused connections get a warning: anyone who can reach a listening port can open
// connections, and each warning is a blocking write to stderr on a thread that serves the job
// (hvdrun's rendezvous server until 2026-12-01, a rank's TCP acceptor until 2026-12-02: one per
// refusal, unbounded). The first kFree are logged, then one per kInterval with the count of
// those not shown. One thread's (not thread-safe).
class RejectionLog {
 public:
  static constexpr int kFree = 10;                      // the first ones, each logged
  static constexpr std::chrono::seconds kInterval{10};  // then one per interval
  // Whether this refusal is logged; `*unlogged` is how many were not since the last that was.
  bool Allow(std::chrono::steady_clock::time_point now, uint64_t* unlogged) {
    *unlogged = 0;
    if (logged_ < kFree || now >= next_) {
      ++logged_;
      *unlogged = skipped_;
      skipped_ = 0;
      if (logged_ >= kFree) next_ = now + kInterval;
      return true;
    }
    ++skipped_;
    return false;
  }

 private:
  int logged_ = 0;
  uint64_t skipped_ = 0;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace hvd

#endif  // HVD_COMMON_REJECTION_LOG_H_
