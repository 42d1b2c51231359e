#include "launcher/job_controller.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "common/kv_messages.h"
#include "launcher/local/child_process.h"
#include "launcher/local/oom_kills.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/wait_status.h"
#include "launcher/output/console.h"

namespace hvd::launcher {
namespace {

// Poll-set owners that are not ranks.
constexpr int kSignalOwner = -1;
constexpr int kStdinOwner = -2;
constexpr int kStackOwner = -3;
// Poll-set stream index of a remote rank's exit event.
constexpr int kExitEvent = 2;

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

}  // namespace

RendezvousServerOptions::KeyObserver StackRequestObserver(StackRequests& requests) {
  return {std::string(control::kStackRequestKey),
          [&requests](const std::string& key, const std::string& value) {
            if (key == control::kStackRequestKey) requests.Push(value);
          }};
}

JobController::JobController(JobControlOptions options, RankSpawner& spawner,
                             OutputForwarder& output, SignalChannel& signals)
    : options_(options), spawner_(spawner), output_(output), signals_(signals) {}

JobOutcome JobController::Run(const std::vector<SpawnRequest>& requests) {
  outcome_ = JobOutcome();
  states_.clear();
  states_.resize(requests.size());
  for (const SpawnRequest& request : requests) {
    RankOutcome rank;
    rank.rank = request.rank;
    rank.host = request.host;
    rank.remote = request.remote;
    outcome_.ranks.push_back(rank);
  }
  oom_kills_at_start_ = OomKillCount();
  timeout_ = JobTimeout(options_.timeout_s);
  spawner_.Prepare(requests, Clock::now() + Seconds(options_.start_timeout_s));
  SpawnAll(requests);
  EventLoop();
  SweepProcessGroups();
  return std::move(outcome_);
}

void JobController::SpawnAll(const std::vector<SpawnRequest>& requests) {
  Clock::time_point deadline = Clock::now() + Seconds(options_.start_timeout_s);
  for (size_t i = 0; i < requests.size(); ++i) {
    const SpawnRequest& request = requests[i];
    HandleSignals();
    if (terminating_) return StopPrepared(requests, i);
    if (!SpawnOne(request)) {
      BeginTermination();
      return StopPrepared(requests, i + 1);
    }
    if (Clock::now() > deadline && request.rank + 1 < static_cast<int>(requests.size())) {
      PrintToUser("start-up took longer than the start timeout (" +
                  std::to_string(options_.start_timeout_s) + " s): started " +
                  std::to_string(request.rank + 1) + " of " + std::to_string(requests.size()) +
                  " ranks");
      outcome_.start_timed_out = true;
      BeginTermination();
      return StopPrepared(requests, i + 1);
    }
  }
}

// The start-up stopped at requests[from - 1]: remote ranks after it already run (Prepare sent
// their Start frames before the local spawns). They are taken in and stopped like the others,
// their output forwarded and their ends awaited; until 2026-12-01 they ran unwatched, their
// output dropped, until the agent sessions closed (grace period + 2 s).
void JobController::StopPrepared(const std::vector<SpawnRequest>& requests, size_t from) {
  for (size_t i = from; i < requests.size(); ++i) {
    if (!requests[i].remote) continue;
    Result<SpawnedRank> spawned = spawner_.Spawn(requests[i]);
    if (!spawned.ok()) continue;  // its Start never went out
    TakeSpawned(requests[i], std::move(*spawned));
    states_[static_cast<size_t>(requests[i].rank)].signalled = true;
    SignalRank(requests[i].rank, killed_ ? SIGKILL : SIGTERM);
  }
}

// Returns false when the job must stop (the rank could not be spawned or executed).
bool JobController::SpawnOne(const SpawnRequest& request) {
  Result<SpawnedRank> spawned = spawner_.Spawn(request);
  if (!spawned.ok()) {
    std::string message = "cannot start rank " + std::to_string(request.rank) + " on " +
                          request.host + ": " + spawned.status().message();
    PrintToUser(message);
    outcome_.launch_error = message;
    return false;
  }
  TakeSpawned(request, std::move(*spawned));
  RankOutcome& rank = outcome_.ranks[static_cast<size_t>(request.rank)];
  if (spawned->exec_error) {
    PrintToUser("rank " + std::to_string(request.rank) + " on " + request.host + ": " +
                *spawned->exec_error);
    rank.exec_error = spawned->exec_error;
    if (!outcome_.first_failed_rank) outcome_.first_failed_rank = request.rank;
    OnRankExit(request.rank, spawned->exec_wait_status);
    return false;
  }
  return true;
}

void JobController::TakeSpawned(const SpawnRequest& request, SpawnedRank&& spawned) {
  RankState& state = states_[static_cast<size_t>(request.rank)];
  if (spawned.stdin_fd >= 0) {
    stdin_pump_ = std::make_unique<StdinPump>(options_.stdin_source_fd, spawned.stdin_fd);
    stdin_rank_ = request.rank;
    if (options_.stdin_source_fd < 0) stdin_pump_->Close();
  }
  state.pid = spawned.pid;
  state.rank_pid = spawned.rank_pid;
  if (!spawned.handle) state.rank_process = RankProcessWatch(spawned.rank_pid, spawned.pid);
  state.fds[0] = spawned.stdout_fd;
  state.fds[1] = spawned.stderr_fd;
  state.handle = std::move(spawned.handle);
  outcome_.ranks[static_cast<size_t>(request.rank)].started = true;
  PrintStep(options_.verbose, "started rank " + std::to_string(request.rank) + " on " +
                                  request.host +
                                  (state.handle ? std::string(" (remote, under hvd-agent)")
                                                : " (pid " + std::to_string(state.pid) + ")"));
}

bool JobController::AllReaped() const {
  for (size_t i = 0; i < states_.size(); ++i) {
    if (outcome_.ranks[i].started && !outcome_.ranks[i].finished) return false;
  }
  return true;
}

int JobController::PollTimeoutMs() const {
  std::optional<Clock::time_point> next;
  auto consider = [&next](Clock::time_point t) { next = next ? std::min(*next, t) : t; };
  if (terminating_ && !killed_) {
    consider(kill_deadline_);
    if (!cause_chain_.empty()) consider(cause_deadline_);
  }
  if (std::optional<Clock::time_point> t = timeout_.NextDeadline(terminating_)) consider(*t);
  if (std::optional<Clock::time_point> hold = exits_.hold_deadline()) consider(*hold);
  // The ranks' pipes wait for the console (BuildPollSet): look again soon.
  if (output_.backlogged()) {
    consider(Clock::now() + std::chrono::milliseconds(OutputForwarder::kBackloggedPollMs));
  }
  if (!next) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, 3600 * 1000));
}

void JobController::BuildPollSet(std::vector<pollfd>& fds,
                                 std::vector<std::pair<int, int>>& owners) const {
  fds.assign({{signals_.fd(), POLLIN, 0}});
  owners.assign({{kSignalOwner, 0}});
  if (stdin_pump_) {
    if (std::optional<pollfd> interest = stdin_pump_->Interest()) {
      fds.push_back(*interest);
      owners.emplace_back(kStdinOwner, 0);
    }
  }
  if (options_.stack_requests != nullptr) {
    fds.push_back({options_.stack_requests->event_fd(), POLLIN, 0});
    owners.emplace_back(kStackOwner, 0);
  }
  // While a stalled console holds too much of their output, the ranks' pipes are not read
  // (the ranks block on their writes); signals, exits and the timeout are still seen.
  const bool read_pipes = !output_.backlogged();
  for (size_t r = 0; r < states_.size(); ++r) {
    for (int which = 0; which < 2; ++which) {
      if (states_[r].fds[which] < 0 || !read_pipes) continue;
      fds.push_back({states_[r].fds[which], POLLIN, 0});
      owners.emplace_back(static_cast<int>(r), which);
    }
    if (states_[r].handle && !states_[r].ended) {
      fds.push_back({states_[r].handle->exit_event_fd(), POLLIN, 0});
      owners.emplace_back(static_cast<int>(r), kExitEvent);
    }
  }
}

void JobController::EventLoop() {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, int>> owners;  // (rank or k*Owner, stream) per entry
  while (!AllReaped()) {
    BuildPollSet(fds, owners);
    int ready = ::poll(fds.data(), fds.size(), PollTimeoutMs());
    if (ready < 0 && errno != EINTR) {
      outcome_.internal_error = std::string("poll failed: ") + strerror(errno);
      PrintToUser(*outcome_.internal_error + "; killing every rank (hvdrun exits " +
                  std::to_string(kExitInternal) + ")");
      KillAndReapAll();
      return;
    }
    for (size_t i = 1; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto [owner, which] = owners[i];
      if (owner == kStdinOwner) {
        stdin_pump_->OnReady();
      } else if (owner == kStackOwner) {
        RequestStacks(options_.stack_requests->TakeAll(),
                      "named by the stall inspector: missing from a collective");
      } else if (which == kExitEvent) {
        OnHandleEvent(owner);
      } else if (!output_.ReadPipe(owner, which, states_[static_cast<size_t>(owner)].fds)) {
        output_.ClosePipe(owner, which, states_[static_cast<size_t>(owner)].fds);
      }
    }
    if (ready > 0 && fds[0].revents != 0) {
      HandleSignals();  // takes every exit seen, the remote ranks' above too
    } else {
      TakeExits();  // the remote ranks' exits seen above, or a hold that is over
    }
    if (output_.console_closed()) OnLauncherSignal(SIGPIPE);
    if (!cause_chain_.empty() && Clock::now() >= cause_deadline_) StopAwaitingCause();
    switch (timeout_.Check(Clock::now(), terminating_)) {
      case JobTimeout::Due::kStacks:
        outcome_.job_timed_out_s = timeout_.limit_s();
        PrintToUser(timeout_.ExpiryLine("rank"));
        RequestStacksOfAll("");
        break;
      case JobTimeout::Due::kStop:
        BeginTermination();
        break;
      case JobTimeout::Due::kNothing:
        break;
    }
    if (terminating_ && !killed_ && Clock::now() >= kill_deadline_) {
      SignalRunning(SIGKILL);
      killed_ = true;
    }
  }
}

// The last resort when the event loop itself fails: nothing may outlive hvdrun.
void JobController::KillAndReapAll() {
  exits_.StopHolding();  // what was seen is taken now
  TakeExits();
  SignalRunning(SIGKILL);
  killed_ = true;
  for (size_t r = 0; r < states_.size(); ++r) {
    if (!outcome_.ranks[r].started || outcome_.ranks[r].finished) continue;
    int status = W_EXITCODE(0, SIGKILL);
    if (states_[r].handle) {
      states_[r].handle->Close();
    } else {
      while (::waitpid(states_[r].pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    OnRankExit(static_cast<int>(r), status);
  }
}

void JobController::HandleSignals() {
  bool child_exited = false;
  for (int signo : signals_.ReadPending()) {
    if (signo == SIGCHLD) {
      child_exited = true;
      continue;
    }
    if (signo == SIGQUIT) {
      RequestStacksOfAll("hvdrun received SIGQUIT");
      continue;
    }
    if (signo != SIGPIPE) OnLauncherSignal(signo);  // SIGPIPE: a write already saw EPIPE
  }
  if (child_exited) ReapExited();
  TakeExits();
}

void JobController::OnLauncherSignal(int signo) {
  if (!outcome_.launcher_signal) {
    outcome_.launcher_signal = signo;
    PrintToUser(signo == SIGPIPE ? std::string("hvdrun's output was closed, stopping the job")
                                 : "received " + SignalName(signo) + ", stopping the job");
    BeginTermination();
  } else if (signo != SIGPIPE && !killed_) {
    PrintToUser("received " + SignalName(signo) + " again, killing every rank now");
    SignalRunning(SIGKILL);
    killed_ = true;
  }
}

void JobController::RequestStacksOfAll(const std::string& why) {
  std::vector<int> all(states_.size());
  std::iota(all.begin(), all.end(), 0);
  RequestStacks(all, why);
}

void JobController::RequestStacks(const std::vector<int>& ranks, const std::string& why) {
  std::vector<int> asked;
  for (int rank : ranks) {
    if (rank < 0 || static_cast<size_t>(rank) >= states_.size()) continue;
    const RankOutcome& outcome = outcome_.ranks[static_cast<size_t>(rank)];
    if (outcome.started && !outcome.finished) asked.push_back(rank);
  }
  if (asked.empty()) return;
  if (!why.empty()) PrintToUser(StackRequestLine("rank", asked, why, !terminating_));
  for (int rank : asked) {
    output_.ShowStderrFor(rank, kStackDumpWait);  // past --console-ranks
    RankState& state = states_[static_cast<size_t>(rank)];
    if (!AskForStacks(state.handle.get(), state.pid)) {
      PrintToUser(NoStackDumperLine("rank", rank, outcome_.ranks[static_cast<size_t>(rank)].host));
    }
  }
}

void JobController::ReapExited() {
  for (size_t r = 0; r < states_.size(); ++r) {
    if (!outcome_.ranks[r].started || states_[r].ended || states_[r].handle) continue;
    int status = 0;
    pid_t pid;
    do {
      pid = ::waitpid(states_[r].pid, &status, WNOHANG);
    } while (pid < 0 && errno == EINTR);
    if (pid == states_[r].pid) {
      states_[r].ended = true;
      exits_.Add(static_cast<int>(r), status);
    }
  }
}

// Likeliest first failure first (launcher/local/exit_order.h): a death by a signal hvdrun did
// not send, then the other failures, then the rest. A rank under a guardian has ended when its
// own process has, and the guardian then ends the same way a moment later; a peer that failed
// on that rank's death may be seen first (its guardian was quicker): it is not the first
// failure, so it waits for the guardian.
void JobController::TakeExits() {
  PendingExits::Hooks hooks;
  hooks.signalled = [this](int rank) { return states_[static_cast<size_t>(rank)].signalled; };
  hooks.unreported = [this]() -> std::optional<int> {
    if (outcome_.first_failed_rank || terminating_) return std::nullopt;
    for (size_t r = 0; r < states_.size(); ++r) {
      const RankState& state = states_[r];
      if (outcome_.ranks[r].started && !state.ended && state.rank_process.Ended()) {
        return static_cast<int>(r);
      }
    }
    return std::nullopt;
  };
  hooks.on_hold = [this](int failed, int waited_for) {
    PrintStep(options_.verbose, "rank " + std::to_string(failed) + " failed after rank " +
                                    std::to_string(waited_for) +
                                    "'s process ended; waiting for rank " +
                                    std::to_string(waited_for) + "'s status");
  };
  hooks.take = [this](int rank, int wait_status) { OnRankExit(rank, wait_status); };
  exits_.Take(hooks);
}

void JobController::OnHandleEvent(int rank) {
  RankState& state = states_[static_cast<size_t>(rank)];
  std::optional<int> status = state.handle->TryWait();
  if (!status || state.ended) return;
  state.ended = true;
  std::string transport = state.handle->TransportError();
  if (!transport.empty()) {
    outcome_.ranks[static_cast<size_t>(rank)].transport_error = transport;
    if (!state.signalled) PrintToUser("rank " + std::to_string(rank) + ": " + transport);
  }
  exits_.Add(rank, *status);
}

void JobController::OnRankExit(int rank, int wait_status) {
  RankOutcome& outcome = outcome_.ranks[static_cast<size_t>(rank)];
  outcome.finished = true;
  states_[static_cast<size_t>(rank)].ended = true;  // also for one that never got to exits_
  outcome.wait_status = wait_status;
  if (!WaitStatusIsSuccess(wait_status) && !states_[static_cast<size_t>(rank)].signalled) {
    outcome.kill_cause = KillCause(rank, wait_status);
  }
  if (stdin_pump_ && stdin_rank_ == rank) stdin_pump_->Close();
  output_.DrainAndClosePipes(rank, states_[static_cast<size_t>(rank)].fds);
  PrintStep(options_.verbose, "rank " + std::to_string(rank) + " finished: " +
                                  DescribeWaitStatus(wait_status, outcome.kill_cause.value_or("")));
  if (auto link = std::ranges::find(cause_chain_, rank); link != cause_chain_.end()) {
    const int depth = static_cast<int>(link - cause_chain_.begin());
    // A SIGKILL before hvdrun sent one is its own end even where it got the SIGTERM (it joined
    // the chain after the others' SIGTERM: its peer named it late). Within the chain's time
    // no hvd-agent has escalated a SIGTERM yet: they wait the whole grace period.
    const bool own = !states_[static_cast<size_t>(rank)].signalled ||
                     (WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL && !killed_);
    if (!WaitStatusIsSuccess(wait_status) && own && depth > first_failure_depth_) {
      // It failed on its own after all: the first failure, ahead of the ranks it failed.
      if (!outcome_.exited_before_cause) outcome_.exited_before_cause = outcome_.first_failed_rank;
      outcome_.first_failed_rank = rank;
      first_failure_depth_ = depth;
      if (!outcome.kill_cause) outcome.kill_cause = KillCause(rank, wait_status);
      ExtendCauseChain(rank);
    }
    if (std::ranges::all_of(cause_chain_, [this](int r) {
          return outcome_.ranks[static_cast<size_t>(r)].finished;
        })) {
      cause_chain_.clear();
    }
  }
  if (WaitStatusIsSuccess(wait_status) || outcome_.first_failed_rank == rank) return;
  // Signalled by hvdrun and ended as its signals end a rank (or with an exit code, as a rank
  // that handles them does): stopped. A crash signal (SIGSEGV, SIGABRT, SIGBUS, ...) is the
  // rank's own: a remote rank that crashed just before the SIGTERM went out (its Exit still on
  // the way) was counted as stopped until 2026-12-01, and the summary blamed only its peer.
  const bool crashed = WIFSIGNALED(wait_status) && WTERMSIG(wait_status) != SIGTERM &&
                       WTERMSIG(wait_status) != SIGKILL && WTERMSIG(wait_status) != SIGINT &&
                       WTERMSIG(wait_status) != SIGHUP && WTERMSIG(wait_status) != SIGPIPE;
  if (states_[static_cast<size_t>(rank)].signalled && !crashed) {
    outcome.stopped_by_hvdrun = true;
    return;
  }
  if (states_[static_cast<size_t>(rank)].signalled) return;  // listed as failed, not first
  if (!outcome_.first_failed_rank && !terminating_) {
    outcome_.first_failed_rank = rank;
    AwaitShutdownCause(rank);
    BeginTermination();
  }
}

std::optional<std::string> JobController::KillCause(int rank, int wait_status) const {
  const RankState& state = states_[static_cast<size_t>(rank)];
  if (killed_) return std::nullopt;
  if (state.handle) return state.handle->KillCause();
  if (state.pid <= 0) return std::nullopt;
  return ExplainKill(state.rank_pid, wait_status, oom_kills_at_start_);
}

void JobController::AwaitShutdownCause(int failed) {
  if (!options_.shutdown_cause || options_.grace_period_s <= 0) return;
  cause_chain_.clear();
  first_failure_depth_ = -1;
  cause_deadline_ = Clock::now() + Seconds(options_.grace_period_s / 2);
  ExtendCauseChain(failed);
}

void JobController::ExtendCauseChain(int from) {
  for (int at = from;;) {
    std::optional<int> cause = options_.shutdown_cause(at);
    if (!cause || *cause < 0 || static_cast<size_t>(*cause) >= outcome_.ranks.size() ||
        *cause == outcome_.first_failed_rank || std::ranges::count(cause_chain_, *cause) != 0) {
      return;
    }
    const RankOutcome& peer = outcome_.ranks[static_cast<size_t>(*cause)];
    if (!peer.started || peer.finished) return;
    cause_chain_.push_back(*cause);
    PrintStep(options_.verbose, "rank " + std::to_string(at) + " failed after rank " +
                                    std::to_string(*cause) + " shut down or was lost; rank " +
                                    std::to_string(*cause) +
                                    " is spared the SIGTERM for half the grace period");
    at = *cause;
  }
}

void JobController::StopAwaitingCause() {
  std::vector<int> chain = std::move(cause_chain_);
  cause_chain_.clear();
  if (killed_) return;
  for (int rank : chain) {
    if (outcome_.ranks[static_cast<size_t>(rank)].finished) continue;
    states_[static_cast<size_t>(rank)].signalled = true;
    SignalRank(rank, SIGTERM);
  }
}

void JobController::BeginTermination() {
  if (terminating_) return;
  terminating_ = true;
  kill_deadline_ = Clock::now() + Seconds(options_.grace_period_s);
  if (options_.grace_period_s <= 0) {
    SignalRunning(SIGKILL);
    killed_ = true;
    return;
  }
  SignalRunning(SIGTERM);
}

void JobController::SignalRunning(int signo) {
  for (size_t r = 0; r < states_.size(); ++r) {
    // An end already seen (exits_, not yet taken) is not hvdrun's doing: no signal reaches it.
    if (!outcome_.ranks[r].started || states_[r].ended) continue;
    if (signo == SIGTERM && std::ranges::count(cause_chain_, static_cast<int>(r)) != 0) {
      continue;  // SIGKILL only
    }
    states_[r].signalled = true;
    SignalRank(static_cast<int>(r), signo);
  }
  if (signo == SIGTERM) {
    PrintStep(options_.verbose, "sent SIGTERM to every running rank; SIGKILL follows in " +
                                    std::to_string(options_.grace_period_s) + " s");
  }
}

void JobController::SignalRank(int rank, int signo) {
  RankState& state = states_[static_cast<size_t>(rank)];
  if (state.handle) {
    state.handle->Signal(signo);  // hvd-agent signals the rank's group alike
  } else {
    SignalRankGroup(state.pid, signo);
  }
}

// Kills whatever the ranks left behind in their process groups. A group whose members are
// all gone answers ESRCH; Linux does not reuse a pid while it still names a process group. So a
// reaped rank whose pid is alive again has no group left: that pid is another process's now,
// maybe the leader of a group of its own (another job's rank, a daemon) which the kill took
// down with everything in it (until 2026-12-01).
void JobController::SweepProcessGroups() {
  for (size_t r = 0; r < states_.size(); ++r) {
    states_[r].rank_process.Close();
    const pid_t pid = states_[r].pid;
    if (pid > 0 && !(states_[r].ended && PidInUse(pid))) ::kill(-pid, SIGKILL);
    if (states_[r].handle) states_[r].handle->Close();
  }
}

}  // namespace hvd::launcher
