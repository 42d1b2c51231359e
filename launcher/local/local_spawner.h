#ifndef HVD_LAUNCHER_LOCAL_LOCAL_SPAWNER_H_
#define HVD_LAUNCHER_LOCAL_LOCAL_SPAWNER_H_

#include "launcher/local/rank_spawner.h"

namespace hvd::launcher {

// Starts ranks on this machine with fork/execve.
//
// Each rank runs under a small guardian process, forked from hvdrun, that leads the rank's
// new process group (setpgid, also done by the parent to close the race with an early
// killpg) and whose pid is the one reported and waited for. The guardian asks for a signal
// when hvdrun dies (PR_SET_PDEATHSIG, then re-checks getppid() in case hvdrun died before
// that call) and answers it by SIGKILLing the whole group, so nothing the rank started
// survives hvdrun, not even after SIGKILL; otherwise it exits with the rank's own status (a
// rank killed by signal N makes it die of signal N). The rank itself gets SIGKILL when its
// guardian dies, clears the signal mask hvdrun blocks for its signalfd (ignored dispositions
// are inherited on purpose, as nohup expects) and gets stdout/stderr pipes and, as stdin, a
// pipe from hvdrun or /dev/null (its set-up between fork and exec: ChildPlan,
// launcher/local/child_process.h). The PATH search happens in the parent over the rank's
// own PATH; the children only call async-signal-safe functions, because hvdrun has other
// threads when it forks.
//
// A request with outlives_launcher is forked and exec'd directly (no guardian, no death
// signal), still as the leader of its own process group.
//
// An exec failure travels back through a close-on-exec pipe, so Spawn knows the outcome
// before it returns.
//
// Threading: PR_SET_PDEATHSIG fires when the *thread* that forked exits, so Spawn must be
// called from a thread that lives as long as the job (job control's main thread).
class LocalSpawner : public RankSpawner {
 public:
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_LOCAL_SPAWNER_H_
