#ifndef HVD_LAUNCHER_LOCAL_RANK_SPAWNER_H_
#define HVD_LAUNCHER_LOCAL_RANK_SPAWNER_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

// What to start for one rank.
struct SpawnRequest {
  int rank = 0;
  std::string host;
  std::vector<std::string> argv;           // program and arguments; argv[0] is looked up in PATH
  std::map<std::string, std::string> env;  // the complete environment
  // true: the rank reads a pipe whose write end is SpawnedRank::stdin_fd; false: /dev/null.
  bool stdin_pipe = false;
  // One descriptor above 2 the rank inherits (the job key's memfd, HVD_SECRET_FD); every
  // other one is closed at exec, as Python's subprocess does. -1 = none.
  int inherited_fd = -1;
  // true: `host` is another machine; the rank is started there (over SSH) and `env` holds
  // only what is sent, merged there over the remote login environment.
  bool remote = false;
  // true: start the process without a guardian and without a parent-death signal, so it
  // outlives hvdrun (LocalSpawner). Only for a process that ends by itself once its stdin
  // pipe closes, as the srun step running an hvd-agent does (StartProcessAgent,
  // launcher/agents/agent_link.h): hvdrun's death closes that pipe.
  bool outlives_launcher = false;
  // With --bind-to core: this rank's index among, and the number of, the ranks hvdrun starts on
  // this machine under any host name (-H localhost:2,127.0.0.1:2 is one machine, 4 ranks).
  // Unset: the rank's HVD_LOCAL_RANK and HVD_LOCAL_SIZE.
  std::optional<std::pair<int, int>> machine_slot;
};

// A rank job control cannot waitpid() for (one running on another host): it reports its end
// on an event descriptor and is signalled through its transport. Thread-safe.
class RankHandle {
 public:
  virtual ~RankHandle() = default;
  // Becomes readable when TryWait() has a value.
  virtual int exit_event_fd() const = 0;
  // A waitpid()-style status once the rank has ended (or its connection was lost).
  virtual std::optional<int> TryWait() = 0;
  // Delivers `signo` to the rank's process group; ignored once it has ended.
  virtual void Signal(int signo) = 0;
  // Gives the rank up: it is terminated remotely (SIGTERM, SIGKILL after the grace period).
  virtual void Close() = 0;
  // Why the connection ended before the rank reported its status; "" when it did not.
  virtual std::string TransportError() const = 0;
  // Why the host says the rank died, when it was killed by SIGKILL that nobody of the job sent
  // (the kernel's OOM killer: launcher/local/oom_kills.h); nullopt when it does not know.
  virtual std::optional<std::string> KillCause() const { return std::nullopt; }
};

// Delivers `signo` to the process group `group` leads: a rank and everything it started. A
// SIGTERM is followed by SIGCONT, since a stopped rank (SIGSTOP, a debugger's ^Z) would hold it
// pending until the SIGKILL at the end of the grace period. kStackSignal goes only to the
// processes that dump their stacks on it (launcher/local/stack_dump.h). What hvdrun, its
// elastic jobs and hvd-agent signal ranks with.
void SignalRankGroup(pid_t group, int signo);

// A started rank. The rank leads its own process group (pgid == pid), so signalling -pid
// reaches everything it started. The caller owns the descriptors (non-blocking,
// close-on-exec) and must reap `pid`.
struct SpawnedRank {
  pid_t pid = -1;
  // The process the rank's command runs as (the guardian's child, for a local rank with a
  // guardian; else `pid`); -1 where unknown. Never waited for or signalled: for naming it
  // (the kernel's OOM killer names it).
  pid_t rank_pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int stdin_fd = -1;  // write end of the rank's stdin (non-blocking), when stdin_pipe
  // Set when the program could not be executed ("cannot execute 'trian.py': No such file or
  // directory"). The child has then already exited 127 (not found) or 126 (not executable),
  // like a shell, and been reaped: `exec_wait_status` holds its status and `pid` must not be
  // waited for or signalled.
  std::optional<std::string> exec_error;
  int exec_wait_status = 0;
  // Set for a rank that is not a child of hvdrun (then `pid` is -1).
  std::unique_ptr<RankHandle> handle;
};

// Starts ranks: locally by fork/exec, or over SSH. The seam job control is written against.
// Implementations are used from one thread.
class RankSpawner {
 public:
  virtual ~RankSpawner() = default;
  // Called once with every request before the first Spawn, so slow starts (SSH) can run in
  // parallel; each must be done by `deadline`.
  virtual void Prepare(const std::vector<SpawnRequest>& requests,
                       std::chrono::steady_clock::time_point deadline) {
    (void)requests;
    (void)deadline;
  }
  virtual Result<SpawnedRank> Spawn(const SpawnRequest& request) = 0;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_RANK_SPAWNER_H_
