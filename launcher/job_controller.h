#ifndef HVD_LAUNCHER_JOB_CONTROLLER_H_
#define HVD_LAUNCHER_JOB_CONTROLLER_H_

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/local/exit_order.h"
#include "launcher/local/job_timeout.h"
#include "launcher/local/rank_spawner.h"
#include "launcher/local/signal_channel.h"
#include "launcher/local/stack_dump.h"
#include "launcher/outcome/job_outcome.h"
#include "launcher/output/output_forwarder.h"
#include "launcher/output/stdin_pump.h"
#include "launcher/rendezvous/rendezvous_server.h"

namespace hvd::launcher {

struct JobControlOptions {
  double start_timeout_s = 30;  // bounds spawning every rank
  double grace_period_s = 5;    // SIGTERM -> SIGKILL
  // --timeout: from the start, how long the job may run before hvdrun asks every rank for its
  // stacks and, kStackDumpWait later, stops it (JobOutcome::job_timed_out_s). 0 = no limit.
  double timeout_s = 0;
  bool verbose = false;
  // Where the stdin of a rank spawned with stdin_pipe comes from (hvdrun's 0); -1 = none.
  int stdin_source_fd = -1;
  // The rank whose shutdown failed `rank`'s collectives, if it said so before exiting
  // (control::kShutdownCausePrefix); empty = nobody.
  std::function<std::optional<int>(int rank)> shutdown_cause = nullptr;
  // The runtime's requests for ranks' stacks (the stall inspector's missing ranks); null = none.
  StackRequests* stack_requests = nullptr;
};

// The rendezvous server's observer of the runtime's stack requests (control::kStackRequestKey),
// pushing them to `requests`, which must outlive the server.
RendezvousServerOptions::KeyObserver StackRequestObserver(StackRequests& requests);

// Starts every rank and watches them until all are gone, in one poll() loop that reads the
// rank pipes, the signalfd (SIGCHLD and hvdrun's own SIGINT/SIGTERM/SIGHUP) and the kill
// deadline; it never spins.
//
// Remote ranks (SpawnedRank::handle) have no pid: their exit event descriptor joins the poll
// set, they are signalled through the handle, and the final sweep closes the handle (the
// remote agent then kills what is left of the rank's process group).
//
// Stacks: SIGQUIT to hvdrun, or a request from the runtime (options.stack_requests), sends
// kStackSignal to the ranks still running (launcher/local/stack_dump.h); the job goes on.
// options.timeout_s: past it, every rank is asked for its stacks and the job stopped as on a
// failure (SIGTERM, then SIGKILL), kStackDumpWait later so the stacks come first.
//
// Who failed first: a rank whose collectives failed because a peer shut down (the peer
// raised, or called sys.exit(7): its exit shut the runtime down) often exits before that
// peer, whose own teardown is no faster. When the first rank to fail names such a peer
// (options.shutdown_cause) that is still running, the peer is spared the SIGTERM until the
// grace period ends: if it then exits failing on its own, it is the first failure (its exit
// code is hvdrun's), otherwise the rank that exited first stays so.
//
// Fail-fast: the first rank that exits non-zero or by a signal, a signal to hvdrun, its
// console output being closed (EPIPE, reported as SIGPIPE), an exec failure or the start
// timeout ends the job: every rank still running gets SIGTERM to
// its process group, then SIGKILL after the grace period (a second SIGINT/SIGTERM/SIGHUP
// skips the wait). When every rank has been reaped each process group gets a final
// SIGKILL, so nothing a rank started outlives the job.
//
// Threading: Run is called once, from the thread that owns `signals` and that lives for the
// whole job (see LocalSpawner).
class JobController {
 public:
  JobController(JobControlOptions options, RankSpawner& spawner, OutputForwarder& output,
                SignalChannel& signals);

  JobOutcome Run(const std::vector<SpawnRequest>& requests);

 private:
  using Clock = std::chrono::steady_clock;
  struct RankState {
    pid_t pid = -1;
    pid_t rank_pid = -1;            // SpawnedRank::rank_pid
    RankProcessWatch rank_process;  // rank_pid, when it runs under a guardian (pid)
    int fds[2] = {-1, -1};          // stdout, stderr
    bool signalled = false;
    bool ended = false;                  // its end was seen: in exits_, or taken (finished)
    std::unique_ptr<RankHandle> handle;  // remote ranks (pid is -1)
  };

  void SpawnAll(const std::vector<SpawnRequest>& requests);
  bool SpawnOne(const SpawnRequest& request);
  // The state of a started rank (its pipes, pid or handle).
  void TakeSpawned(const SpawnRequest& request, SpawnedRank&& spawned);
  // Takes in and signals the remote ranks of requests[from...] that Prepare started.
  void StopPrepared(const std::vector<SpawnRequest>& requests, size_t from);
  void EventLoop();
  void BuildPollSet(std::vector<pollfd>& fds, std::vector<std::pair<int, int>>& owners) const;
  int PollTimeoutMs() const;
  void HandleSignals();
  void OnLauncherSignal(int signo);
  // Asks `ranks` (those still running) for their Python stacks, saying `why` ("": silently).
  void RequestStacks(const std::vector<int>& ranks, const std::string& why);
  void RequestStacksOfAll(const std::string& why);
  void KillAndReapAll();
  // Collect the ranks that ended (into exits_) ...
  void ReapExited();
  void OnHandleEvent(int rank);
  // ... and take them (OnRankExit), likeliest first failure first.
  void TakeExits();
  void OnRankExit(int rank, int wait_status);
  // Why a rank that hvdrun did not stop was killed, where its host knows (the OOM killer).
  std::optional<std::string> KillCause(int rank, int wait_status) const;
  void SignalRank(int rank, int signo);
  // Fail-fast: signals every running rank to stop (SIGTERM, SIGKILL after the grace period).
  void BeginTermination();
  // The first failure named the peer whose shutdown or loss failed it: spare that peer, and the
  // one it names in turn, and so on, the SIGTERM for half the grace period (then
  // StopAwaitingCause sends it). The deepest of them that then fails on its own is the first.
  void AwaitShutdownCause(int failed);
  void ExtendCauseChain(int from);
  void StopAwaitingCause();
  void SignalRunning(int signo);
  void SweepProcessGroups();
  bool AllReaped() const;

  JobControlOptions options_;
  RankSpawner& spawner_;
  OutputForwarder& output_;
  SignalChannel& signals_;
  JobOutcome outcome_;
  std::vector<RankState> states_;
  std::unique_ptr<StdinPump> stdin_pump_;
  int stdin_rank_ = -1;
  PendingExits exits_;  // the ranks' ends seen but not yet taken
  // The peer whose shutdown or loss failed the first failure, the one that failed that peer,
  // and so on (AwaitShutdownCause): spared SIGTERM until cause_deadline_.
  std::vector<int> cause_chain_;
  int first_failure_depth_ = -1;  // where in cause_chain_ the first failure is; -1: before it
  Clock::time_point cause_deadline_;
  bool terminating_ = false;
  bool killed_ = false;
  std::optional<uint64_t> oom_kills_at_start_;  // this host's OOM kills before the first spawn
  Clock::time_point kill_deadline_;
  JobTimeout timeout_{0};  // options.timeout_s from the start
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_JOB_CONTROLLER_H_
