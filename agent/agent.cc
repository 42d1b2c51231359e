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
#include <utility>
#include <variant>

#include "agent/rank_launch.h"

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

}  // namespace

Agent::Agent(Io io, std::map<std::string, std::string> login_env)
    : io_(io), login_env_(std::move(login_env)) {}

void Agent::Diagnose(const std::string& message) {
  std::string line = "hvd-agent: " + message + "\n";
  ssize_t ignored = ::write(io_.stderr_fd, line.data(), line.size());
  (void)ignored;
}

int Agent::Run() {
  int signal_fd = OpenSignalFd();
  if (signal_fd < 0) {
    Diagnose(std::string("signalfd failed: ") + strerror(errno));
    return W_EXITCODE(kExitAgentError, 0);
  }
  // Orphans of the rank re-parent to us, so they can be reaped and never linger.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  launcher::RemoteRankRequest request;
  int status = 0;
  if (!ReadStartFrame(signal_fd, &request, &status)) {
    ::close(signal_fd);
    return status;
  }
  grace_period_s_ = request.grace_period_s;
  LaunchOutcome outcome = LaunchRank(request, login_env_);
  if (auto* failure = std::get_if<LaunchFailure>(&outcome)) {
    Diagnose(failure->message);
    ::close(signal_fd);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return W_EXITCODE(failure->exit_code, 0);
  }
  const LaunchedRank& rank = std::get<LaunchedRank>(outcome);
  rank_pid_ = rank.pid;
  out_ = OutputRelay(rank.stdout_fd, io_.stdout_fd);
  err_ = OutputRelay(rank.stderr_fd, io_.stderr_fd);
  Supervise(signal_fd);
  ::close(signal_fd);
  return rank_status_;
}

bool Agent::ReadStartFrame(int signal_fd, launcher::RemoteRankRequest* request, int* status) {
  for (;;) {
    Result<std::optional<launcher::AgentMessage>> next = reader_.Next();
    if (!next.ok()) {
      Diagnose(next.status().message());
      *status = W_EXITCODE(kExitAgentError, 0);
      return false;
    }
    if (next->has_value()) {
      *request = std::get<launcher::RemoteRankRequest>(std::move(**next));
      return true;
    }
    pollfd fds[2] = {{io_.control_fd, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
      Diagnose(std::string("poll failed: ") + strerror(errno));
      *status = W_EXITCODE(kExitAgentError, 0);
      return false;
    }
    for (int s : ReadSignals(signal_fd)) {
      if (IsTerminationSignal(s)) {
        *status = s;  // as if killed by it: nothing was started yet
        return false;
      }
    }
    if (fds[0].revents == 0) continue;
    char buffer[65536];
    ssize_t n = ::read(io_.control_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Diagnose("the launcher closed the connection before sending the start request");
      *status = W_EXITCODE(kExitAgentError, 0);
      return false;
    }
    reader_.Feed(std::string_view(buffer, static_cast<size_t>(n)));
  }
}

void Agent::BeginTermination() {
  if (terminating_ || reaped_) return;
  terminating_ = true;
  ::killpg(rank_pid_, SIGTERM);
  kill_deadline_ =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace_period_s_ * 1000.0));
}

void Agent::OnControlReadable() {
  char buffer[4096];
  ssize_t n = ::read(io_.control_fd, buffer, sizeof(buffer));
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) {
    control_open_ = false;
    BeginTermination();
    return;
  }
  reader_.Feed(std::string_view(buffer, static_cast<size_t>(n)));
  for (;;) {
    Result<std::optional<launcher::AgentMessage>> next = reader_.Next();
    if (!next.ok()) {
      Diagnose(next.status().message() + "; terminating the rank");
      control_open_ = false;
      BeginTermination();
      return;
    }
    if (!next->has_value()) return;
    if (auto* signal = std::get_if<launcher::AgentSignal>(&**next)) {
      if (!reaped_) ::killpg(rank_pid_, signal->signo);
    }
  }
}

void Agent::OnSignals(int signal_fd) {
  for (int s : ReadSignals(signal_fd)) {
    if (IsTerminationSignal(s)) BeginTermination();
  }
  // SIGCHLDs coalesce: reap everything (the rank and any orphan we inherited as subreaper).
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    if (pid == rank_pid_) {
      reaped_ = true;
      rank_status_ = status;
      ::killpg(rank_pid_, SIGKILL);  // nothing the rank started outlives it
      drain_deadline_ = Clock::now() + kDrainTime;
    }
  }
}

bool Agent::Finished(Clock::time_point now) {
  if (!reaped_) return false;
  if (now >= drain_deadline_) {
    // A process that escaped the group still holds the pipes: stop waiting for their end.
    out_.CloseInput();
    err_.CloseInput();
    if (!control_open_) return true;  // nobody is reading what is left
  }
  return !out_.input_open() && !err_.input_open() && out_.flushed() && err_.flushed();
}

int Agent::PollTimeoutMs(Clock::time_point now) const {
  Clock::time_point next = Clock::time_point::max();
  if (terminating_ && !killed_ && !reaped_) next = kill_deadline_;
  if (reaped_) next = std::min(next, drain_deadline_);
  if (next == Clock::time_point::max()) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 60000));
}

void Agent::Supervise(int signal_fd) {
  for (;;) {
    Clock::time_point now = Clock::now();
    if (terminating_ && !killed_ && !reaped_ && now >= kill_deadline_) {
      ::killpg(rank_pid_, SIGKILL);
      killed_ = true;
    }
    if (Finished(now)) break;
    pollfd fds[4];
    fds[0] = {signal_fd, POLLIN, 0};
    fds[1] = {control_open_ ? io_.control_fd : -1, POLLIN, 0};
    out_.PreparePoll(&fds[2]);
    err_.PreparePoll(&fds[3]);
    int rc = ::poll(fds, 4, PollTimeoutMs(now));
    if (rc < 0 && errno != EINTR) {
      Diagnose(std::string("poll failed: ") + strerror(errno));
      BeginTermination();
      control_open_ = false;
    }
    if (rc <= 0) continue;
    if (fds[0].revents != 0) OnSignals(signal_fd);
    if (fds[1].revents != 0) OnControlReadable();
    if (fds[2].revents != 0) out_.Pump();
    if (fds[3].revents != 0) err_.Pump();
  }
  ::killpg(rank_pid_, SIGKILL);
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace hvd::agent
