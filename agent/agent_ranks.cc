// The agent's rank table: starting, signalling, reaping and reporting ranks.
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <variant>

#include "agent/agent.h"
#include "agent/rank_launch.h"
#include "launcher/local/rank_spawner.h"
#include "launcher/local/stack_dump.h"

namespace hvd::agent {

void Agent::StartRank(const launcher::AgentStart& start) {
  if (ranks_.count(start.id) > 0) {
    Diagnose("rank id " + std::to_string(start.id) + " is already running; start ignored");
    return;
  }
  if (!setup_error_.empty()) return FailStart(start.id, kExitAgentError, setup_error_);
  LaunchOutcome outcome = LaunchRank(start, login_env_, key_fd_);
  if (auto* failure = std::get_if<LaunchFailure>(&outcome)) {
    return FailStart(start.id, failure->exit_code, failure->message);
  }
  leftovers_.Add(MergeEnvironment(login_env_, start.env, -1));
  const LaunchedRank& launched = std::get<LaunchedRank>(outcome);
  Rank& rank = ranks_[start.id];
  rank.pid = launched.pid;
  rank.fds[0] = launched.stdout_fd;
  rank.fds[1] = launched.stderr_fd;
  out_ += launcher::EncodeStarted(start.id, static_cast<uint32_t>(launched.pid));
}

// A rank that never ran: its message on its stderr, then its exit code, as a shell reports.
void Agent::FailStart(uint32_t id, int exit_code, const std::string& message) {
  launcher::AppendOutput(id, 2, "hvd-agent: " + message + "\n", &out_);
  out_ += launcher::EncodeExit(id, W_EXITCODE(exit_code, 0));
}

void Agent::SignalRank(uint32_t id, int signo) {
  auto it = ranks_.find(id);
  if (it == ranks_.end() || it->second.reaped) return;
  if (signo == launcher::kStackSignal) {
    // Said on the rank's stderr, as hvdrun says it of a local rank.
    if (launcher::SignalStackDumpers(it->second.pid) == 0) {
      launcher::AppendOutput(id, 2,
                             "hvd-agent: no process of this rank prints stacks (hvd's Python "
                             "module does, once imported)\n",
                             &out_);
    }
    return;
  }
  launcher::SignalRankGroup(it->second.pid, signo);
}

void Agent::StopRank(Rank& rank) {
  if (rank.terminating || rank.reaped) return;
  rank.terminating = true;
  if (hello_.grace_period_s <= 0) {
    ::killpg(rank.pid, SIGKILL);
    rank.killed = true;
    return;
  }
  launcher::SignalRankGroup(rank.pid, SIGTERM);
  rank.kill_deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(hello_.grace_period_s * 1000));
}

void Agent::ReapChildren() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (auto& [id, rank] : ranks_) {
      if (rank.pid != pid || rank.reaped) continue;
      rank.reaped = true;
      rank.status = status;
      ::killpg(pid, SIGKILL);  // nothing the rank started outlives it
      rank.drain_deadline = Clock::now() + kDrainTime;
    }
  }
}

void Agent::PumpRank(uint32_t id, Rank& rank, int which) {
  int& fd = rank.fds[which];
  char buffer[launcher::kMaxOutputChunk];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      if (!launcher_gone_ && !out_broken_) {
        launcher::AppendOutput(id, which + 1, std::string_view(buffer, static_cast<size_t>(n)),
                               &out_);
      }
      if (out_.size() >= kOutputHighWater && !launcher_gone_ && !out_broken_) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    ::close(fd);  // end of the stream, or a read error
    fd = -1;
    return;
  }
}

void Agent::ReportFinishedRanks(Clock::time_point now) {
  // While the launcher is behind (out_ full) the agent reads no rank's pipes: that time is no
  // drain time. Until 2026-11-30 it was, and a rank that exited then lost the tail of its
  // output (its traceback, often) when the 2 s ran out unread.
  const bool reading = out_.size() < kOutputHighWater || launcher_gone_ || out_broken_;
  for (auto it = ranks_.begin(); it != ranks_.end();) {
    Rank& rank = it->second;
    const bool drained = rank.fds[0] < 0 && rank.fds[1] < 0;
    if (rank.reaped && !drained && !reading) rank.drain_deadline = now + kDrainTime;
    if (!rank.reaped || (!drained && now < rank.drain_deadline)) {
      ++it;
      continue;
    }
    // A process that escaped the group may still hold the pipes: stop waiting for their end.
    CloseRankPipes(rank);
    std::optional<std::string> cause;  // the OOM killer, when it was (launcher/local/oom_kills.h)
    if (!rank.terminating) {
      cause = launcher::ExplainKill(rank.pid, rank.status, oom_kills_at_start_);
    }
    out_ += launcher::EncodeExit(it->first, rank.status, cause.value_or(""));
    it = ranks_.erase(it);
  }
}

void Agent::CloseRankPipes(Rank& rank) {
  for (int& fd : rank.fds) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

}  // namespace hvd::agent
