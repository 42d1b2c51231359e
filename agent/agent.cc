#include "agent/agent.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <variant>
#include <vector>

#include "agent/rank_launch.h"
#include "common/duration.h"
#include "common/job_key.h"

namespace hvd::agent {
namespace {

int OpenSignalFd() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  return ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

// Drains the signalfd; returns the signal numbers read.
std::vector<int> ReadSignals(int signal_fd) {
  std::vector<int> out;
  signalfd_siginfo info;
  while (::read(signal_fd, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    out.push_back(static_cast<int>(info.ssi_signo));
  }
  return out;
}

bool IsTerminationSignal(int s) { return s == SIGTERM || s == SIGINT || s == SIGHUP; }

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

}  // namespace

Agent::Agent(Io io, std::map<std::string, std::string> login_env)
    : io_(io), login_env_(std::move(login_env)) {
  out_ = std::string(launcher::kAgentGreeting);  // before every frame: what came before is not ours
}

Agent::~Agent() {
  for (auto& [id, rank] : ranks_) CloseRankPipes(rank);
  if (key_fd_ >= 0) ::close(key_fd_);
}

void Agent::Diagnose(const std::string& message) {
  std::string line = "hvd-agent: " + message + "\n";
  ssize_t ignored = ::write(io_.diag_fd, line.data(), line.size());
  (void)ignored;
}

int Agent::Run() {
  int signal_fd = OpenSignalFd();
  if (signal_fd < 0) {
    Diagnose(std::string("signalfd failed: ") + strerror(errno));
    return kExitAgentError;
  }
  // Orphans of the ranks re-parent to us, so they can be reaped and never linger.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (ReadHello(signal_fd)) Loop(signal_fd);
  ::close(signal_fd);
  for (const std::string& line : leftovers_.CleanUp()) Diagnose(line);
  return exit_code_;
}

bool Agent::ReadHello(int signal_fd) {
  for (;;) {
    Result<std::optional<launcher::LauncherMessage>> next = reader_.Next();
    if (!next.ok()) {
      Diagnose(next.status().message());
      exit_code_ = kExitAgentError;
      return false;
    }
    if (next->has_value()) {
      ApplyHello(std::get<launcher::AgentHello>(std::move(**next)));
      return true;
    }
    pollfd fds[2] = {{io_.control_fd, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
      Diagnose(std::string("poll failed: ") + strerror(errno));
      exit_code_ = kExitAgentError;
      return false;
    }
    for (int s : ReadSignals(signal_fd)) {
      if (IsTerminationSignal(s)) {
        exit_code_ = 128 + s;
        return false;
      }
    }
    if (fds[0].revents == 0) continue;
    char buffer[65536];
    ssize_t n = ::read(io_.control_fd, buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      Diagnose("the launcher closed the connection before sending its hello");
      exit_code_ = kExitAgentError;
      return false;
    }
    reader_.Feed(std::string_view(buffer, static_cast<size_t>(n)));
  }
}

void Agent::ApplyHello(const launcher::AgentHello& hello) {
  hello_ = hello;
  if (hello.job_key) {
    Result<int> fd = control::WriteKeyToMemfd(*hello.job_key);
    if (fd.ok()) {
      key_fd_ = *fd;  // inherited by every rank; never close-on-exec
    } else {
      setup_error_ = fd.status().message();
    }
  }
  if (!hello.cwd.empty() && ::chdir(hello.cwd.c_str()) != 0) {
    setup_error_ = "cannot change to directory '" + hello.cwd + "': " + strerror(errno);
  }
  launcher::AgentReady ready;
  ready.hostname = HostName();
  ready.pid = static_cast<uint32_t>(::getpid());
  out_ += launcher::EncodeReady(ready);
  Clock::time_point now = Clock::now();
  last_heard_ = now;
  next_heartbeat_ = now + Millis(hello.heartbeat_interval_s);
}

void Agent::Loop(int signal_fd) {
  DrainFrames();  // what arrived together with the Hello
  std::vector<pollfd> fds;
  std::vector<std::pair<uint32_t, int>> owners;  // rank id and stream of each pipe entry
  for (;;) {
    Clock::time_point now = Clock::now();
    CheckTimers(now);
    ReportFinishedRanks(now);
    FlushOutput();
    if (Done(now)) break;
    fds.assign({{signal_fd, POLLIN, 0},
                {control_open_ ? io_.control_fd : -1, POLLIN, 0},
                {!out_.empty() && !out_broken_ ? io_.out_fd : -1, POLLOUT, 0}});
    owners.clear();
    const bool room = out_.size() < kOutputHighWater || launcher_gone_ || out_broken_;
    for (auto& [id, rank] : ranks_) {
      for (int which = 0; which < 2 && room; ++which) {
        if (rank.fds[which] < 0) continue;
        fds.push_back({rank.fds[which], POLLIN, 0});
        owners.emplace_back(id, which);
      }
    }
    const int timeout_ms = PollTimeoutMs(now);
    int rc = ::poll(fds.data(), fds.size(), timeout_ms);
    // Back from a poll much longer than asked for, this process was not running (stopped with
    // its whole job: Slurm's suspend, a paused VM, Ctrl-Z of the job). hvdrun's silence counts
    // from now: it may have been stopped as long, and its heartbeats come once it runs (until
    // 2026-12-01 each side, resumed, took the other for dead).
    if (timeout_ms >= 0 &&
        Clock::now() - now > std::chrono::milliseconds(timeout_ms) + launcher::kStoppedSlack) {
      last_heard_ = std::max(last_heard_, Clock::now());
    }
    if (rc < 0 && errno != EINTR) {
      Diagnose(std::string("poll failed: ") + strerror(errno));
      control_open_ = false;
      Shutdown(kExitAgentError, "");
      continue;
    }
    if (rc <= 0) continue;
    if (fds[0].revents != 0) OnSignals(signal_fd);
    if (fds[1].revents != 0) OnControlReadable();
    for (size_t i = 3; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = ranks_.find(owners[i - 3].first);
      if (it != ranks_.end()) PumpRank(it->first, it->second, owners[i - 3].second);
    }
  }
  for (auto& [id, rank] : ranks_) ::killpg(rank.pid, SIGKILL);
  ReapRemaining();
}

// As subreaper the agent inherits what its ranks left; a process SIGKILLed with its group may
// have closed its pipes without being a zombie yet. Reap until none is left (bounded).
void Agent::ReapRemaining() {
  Clock::time_point deadline = Clock::now() + kReapTime;
  for (;;) {
    pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
    if (pid > 0) continue;
    if ((pid < 0 && errno == ECHILD) || Clock::now() >= deadline) return;
    ::usleep(2000);
  }
}

void Agent::OnControlReadable() {
  char buffer[65536];
  ssize_t n = ::read(io_.control_fd, buffer, sizeof(buffer));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {  // the launcher closed the channel (or it is gone): end the session
    control_open_ = false;
    Shutdown(0, "");
    return;
  }
  last_heard_ = Clock::now();
  reader_.Feed(std::string_view(buffer, static_cast<size_t>(n)));
  DrainFrames();
}

// Acts on every complete frame received so far.
void Agent::DrainFrames() {
  for (;;) {
    Result<std::optional<launcher::LauncherMessage>> next = reader_.Next();
    if (!next.ok()) {
      Diagnose(next.status().message() + "; terminating every rank");
      control_open_ = false;
      Shutdown(kExitAgentError, "");
      return;
    }
    if (!next->has_value()) return;
    OnMessage(std::move(**next));
  }
}

void Agent::OnMessage(launcher::LauncherMessage message) {
  if (auto* start = std::get_if<launcher::AgentStart>(&message)) {
    if (shutting_down_) {
      FailStart(start->id, kExitAgentError, "the agent is shutting down");
    } else {
      StartRank(*start);
    }
  } else if (auto* signal = std::get_if<launcher::AgentSignal>(&message)) {
    SignalRank(signal->id, signal->signo);
  } else if (auto* stop = std::get_if<launcher::AgentStop>(&message)) {
    auto it = ranks_.find(stop->id);
    if (it != ranks_.end()) StopRank(it->second);
  }
}

void Agent::OnSignals(int signal_fd) {
  for (int s : ReadSignals(signal_fd)) {
    if (IsTerminationSignal(s)) Shutdown(128 + s, "");
  }
  // SIGCHLDs coalesce: reap everything (ranks and orphans we inherited as subreaper).
  ReapChildren();
}

void Agent::Shutdown(int exit_code, const std::string& why) {
  if (!why.empty()) Diagnose(why);
  if (shutting_down_) return;
  shutting_down_ = true;
  exit_code_ = exit_code;
  for (auto& [id, rank] : ranks_) StopRank(rank);
}

void Agent::CheckTimers(Clock::time_point now) {
  const double timeout = hello_.heartbeat_timeout_s;
  if (timeout > 0 && control_open_ && !launcher_gone_ && now - last_heard_ > Millis(timeout)) {
    launcher_gone_ = true;
    Shutdown(1, "no sign of life from hvdrun for " + SecondsText(timeout) +
                    " (HVD_HEARTBEAT_TIMEOUT_SECONDS); terminating every rank");
  }
  if (hello_.heartbeat_interval_s > 0 && !launcher_gone_ && now >= next_heartbeat_) {
    out_ += launcher::EncodeAgentHeartbeat();
    next_heartbeat_ = now + Millis(hello_.heartbeat_interval_s);
  }
  for (auto& [id, rank] : ranks_) {
    if (rank.terminating && !rank.killed && !rank.reaped && now >= rank.kill_deadline) {
      ::killpg(rank.pid, SIGKILL);
      rank.killed = true;
    }
  }
  if (shutting_down_ && ranks_.empty() && flush_deadline_ == Clock::time_point()) {
    flush_deadline_ = now + kFlushTime;
  }
}

bool Agent::Done(Clock::time_point now) const {
  if (!shutting_down_ || !ranks_.empty()) return false;
  return out_.empty() || out_broken_ || launcher_gone_ || now >= flush_deadline_;
}

int Agent::PollTimeoutMs(Clock::time_point now) const {
  Clock::time_point next = Clock::time_point::max();
  if (hello_.heartbeat_interval_s > 0 && !launcher_gone_) next = next_heartbeat_;
  if (hello_.heartbeat_timeout_s > 0 && control_open_ && !launcher_gone_) {
    next = std::min(
        next, last_heard_ + Millis(hello_.heartbeat_timeout_s) + std::chrono::milliseconds(1));
  }
  for (const auto& [id, rank] : ranks_) {
    if (rank.terminating && !rank.killed && !rank.reaped) next = std::min(next, rank.kill_deadline);
    if (rank.reaped) next = std::min(next, rank.drain_deadline);
  }
  if (flush_deadline_ != Clock::time_point()) next = std::min(next, flush_deadline_);
  if (next == Clock::time_point::max()) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 60000));
}

void Agent::FlushOutput() {
  while (!out_.empty() && !out_broken_) {
    ssize_t n = ::write(io_.out_fd, out_.data(), out_.size());
    if (n > 0) {
      out_.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    int error = errno;
    out_broken_ = true;
    out_.clear();
    launcher_gone_ = true;
    Shutdown(
        1, std::string("cannot write to hvdrun (") + strerror(error) + "); terminating every rank");
  }
}

}  // namespace hvd::agent
