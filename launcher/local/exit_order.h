#ifndef HVD_LAUNCHER_LOCAL_EXIT_ORDER_H_
#define HVD_LAUNCHER_LOCAL_EXIT_ORDER_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

// Which of the ranks' ends, seen together, is the first failure. Rank order is not the order
// of failure: when a rank is SIGKILLed and its peers exit 1 because of it, all of them are
// often seen at once (one SIGCHLD pass, one poll's events), and the peer of lower rank would
// be taken first. And a local rank runs under a guardian that relays its end: the guardian of a
// peer that failed on the rank's death may relay first. Job control (launcher/job_controller.h)
// and elastic jobs (launcher/elastic/elastic_job.h) take the ends in this order, and hold a
// plain failure while a rank's own process has ended but its guardian has not said so.
namespace hvd::launcher {

// How long a first failure waits for a guardian to pass on its rank's end; it takes
// microseconds, unless the machine is overloaded.
inline constexpr double kHoldForGuardianS = 2;

// The rank of an end in the order it is taken: 0 a death by a signal nobody of the job sent
// (`signalled`: hvdrun signalled it), 1 any other failure, 2 a success.
int ExitPriority(int wait_status, bool signalled);

// Sorts (id, wait status) pairs by ExitPriority, keeping the order of equals.
void OrderExits(std::vector<std::pair<int, int>>& exits,
                const std::function<bool(int id)>& signalled);

// The ranks' ends seen but not yet taken (job control's ranks, an elastic job's workers, by id),
// taken likeliest first failure first. Not thread-safe: the launcher's event loop owns it.
class PendingExits {
 public:
  using Clock = std::chrono::steady_clock;
  struct Hooks {
    std::function<bool(int id)> signalled;  // hvdrun signalled it
    // A rank whose own process has ended while its guardian has not yet said so, when the first
    // failure should wait for it; nullopt: none, or no wait (a first failure already taken).
    std::function<std::optional<int>()> unreported;
    std::function<void(int failed, int waited_for)> on_hold;  // when a wait begins
    std::function<void(int id, int wait_status)> take;
  };

  void Add(int id, int wait_status) { exits_.emplace_back(id, wait_status); }
  bool empty() const { return exits_.empty(); }
  // While a first failure waits for a guardian: when that wait ends (the event loop's timer).
  std::optional<Clock::time_point> hold_deadline() const { return hold_deadline_; }
  // Ends a wait: the next Take takes whatever was seen.
  void StopHolding() {
    if (hold_deadline_) hold_deadline_ = Clock::now();
  }
  // Takes every end seen, in ExitPriority order (hooks.take, one by one), unless the first is
  // a plain failure and hooks.unreported names a rank to wait for: then nothing is taken, for
  // at most kHoldForGuardianS from the first such call.
  void Take(const Hooks& hooks);

 private:
  // Whether the first failure, `failed`'s, waits now (starting the wait if it must).
  bool Holds(int failed, const Hooks& hooks);

  std::vector<std::pair<int, int>> exits_;  // (id, wait status)
  std::optional<Clock::time_point> hold_deadline_;
};

// A watch on a rank's own process under its guardian (SpawnedRank::rank_pid, when it is not the
// guardian's pid): has it ended, whether or not the guardian has relayed that? A pidfd; it
// never waits for or signals the process. Move-only.
class RankProcessWatch {
 public:
  RankProcessWatch() = default;
  // Watches `rank_pid` when it is a process of its own (> 0 and not `pid`); else nothing.
  RankProcessWatch(pid_t rank_pid, pid_t pid);
  RankProcessWatch(RankProcessWatch&& other) noexcept : fd_(std::exchange(other.fd_, kNone)) {}
  RankProcessWatch& operator=(RankProcessWatch&& other) noexcept;
  RankProcessWatch(const RankProcessWatch&) = delete;
  RankProcessWatch& operator=(const RankProcessWatch&) = delete;
  ~RankProcessWatch() { Close(); }

  // Whether the watched process has ended (or had before the watch began); false when nothing
  // is watched.
  bool Ended() const;
  void Close();

 private:
  static constexpr int kNone = -1;
  static constexpr int kGone = -2;  // it had ended before a pidfd could be opened
  int fd_ = kNone;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_EXIT_ORDER_H_
