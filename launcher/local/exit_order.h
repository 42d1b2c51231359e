#ifndef HVD_LAUNCHER_LOCAL_EXIT_ORDER_H_
#define HVD_LAUNCHER_LOCAL_EXIT_ORDER_H_

#include <sys/types.h>

#include <functional>
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
