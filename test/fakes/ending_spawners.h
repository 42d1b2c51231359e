#ifndef HVD_TEST_FAKES_ENDING_SPAWNERS_H_
#define HVD_TEST_FAKES_ENDING_SPAWNERS_H_

// Spawners that arrange how the ends of ranks reach the launcher, for the tests of which end is
// the first failure (launcher/local/exit_order.h): job control's and the elastic job's.
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "launcher/local/local_spawner.h"

namespace hvd::launcher {

// Starts ranks like LocalSpawner, but returns from the last spawn only once every rank has
// ended (unreaped): the launcher then sees all their ends in one pass.
class AllEndedSpawner : public RankSpawner {
 public:
  explicit AllEndedSpawner(int size) : size_(size) {}
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override {
    Result<SpawnedRank> spawned = local_.Spawn(request);
    if (!spawned.ok()) return spawned;
    pids_.push_back(spawned->pid);
    if (static_cast<int>(pids_.size()) == size_) {
      for (pid_t pid : pids_) {
        siginfo_t info{};
        while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 &&
               errno == EINTR) {
        }
      }
    }
    return spawned;
  }

 private:
  int size_;
  std::vector<pid_t> pids_;
  LocalSpawner local_;
};

// Starts ranks (in order, 0 first) like LocalSpawner, but the last rank's guardian is slow: its
// rank process (a stand-in, ended at once) is dead, and the guardian (the command, given the
// first rank's pid as WAIT_PID) can wait to pass on its end until the launcher has reaped the
// first rank.
class LateGuardianSpawner : public RankSpawner {
 public:
  explicit LateGuardianSpawner(int size) : size_(size) {}
  ~LateGuardianSpawner() override {
    if (dead_ > 0) waitpid(dead_, nullptr, 0);
  }
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override {
    SpawnRequest copy = request;
    if (request.rank == size_ - 1) {
      copy.env["WAIT_PID"] = std::to_string(first_pid_);
      dead_ = fork();
      if (dead_ == 0) _exit(0);
      siginfo_t info{};
      while (waitid(P_PID, static_cast<id_t>(dead_), &info, WEXITED | WNOWAIT) < 0 &&
             errno == EINTR) {
      }
    }
    Result<SpawnedRank> spawned = local_.Spawn(copy);
    if (!spawned.ok()) return spawned;
    if (request.rank == 0) first_pid_ = spawned->pid;
    if (request.rank == size_ - 1) spawned->rank_pid = dead_;
    return spawned;
  }

 private:
  int size_;
  pid_t first_pid_ = -1;
  pid_t dead_ = -1;
  LocalSpawner local_;
};

}  // namespace hvd::launcher

#endif  // HVD_TEST_FAKES_ENDING_SPAWNERS_H_
