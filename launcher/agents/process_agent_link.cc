// StartProcessAgent: an AgentLink over a local child's pipes (srun, or hvd-agent in tests).
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "launcher/agents/agent_link.h"
#include "launcher/local/local_spawner.h"
#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// How long the process gets to end after SIGTERM before SIGKILL.
constexpr std::chrono::seconds kTermGrace{5};
// How long EndReason waits for the process to exit after its stdout ended.
constexpr std::chrono::seconds kExitWait{1};

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

void PidfdSignal(int pidfd, int signo) {
  ::syscall(SYS_pidfd_send_signal, pidfd, signo, nullptr, 0);
}

// True when `pidfd` became readable (the process ended) within `timeout`.
bool WaitPidfd(int pidfd, std::chrono::milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p = {pidfd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (ready > 0) return true;
    if (ready == 0 || (ready < 0 && errno != EINTR)) return false;
  }
}

class ProcessAgentLink : public AgentLink {
 public:
  ProcessAgentLink(SpawnedRank spawned, int pidfd, std::string description,
                   std::chrono::milliseconds stop_after)
      : pid_(spawned.pid),
        pidfd_(pidfd),
        stdin_fd_(spawned.stdin_fd),
        stdout_fd_(spawned.stdout_fd),
        stderr_fd_(spawned.stderr_fd),
        description_(std::move(description)),
        stop_after_(stop_after) {}

  ~ProcessAgentLink() override {
    CloseToAgent();
    if (!Reap(false)) {
      if (!WaitPidfd(pidfd_, stop_after_)) {
        PidfdSignal(pidfd_, SIGTERM);  // srun cancels its step on SIGTERM
        if (!WaitPidfd(pidfd_, kTermGrace)) PidfdSignal(pidfd_, SIGKILL);
      }
      Reap(true);
    }
    for (int fd : {stdout_fd_, stderr_fd_, pidfd_}) ::close(fd);
  }

  int to_agent_fd() const override { return stdin_fd_; }
  int from_agent_fd() const override { return stdout_fd_; }
  int diag_fd() const override { return stderr_fd_; }
  void CloseToAgent() override {
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    stdin_fd_ = -1;
  }
  std::string EndReason() override {
    if (!status_ && WaitPidfd(pidfd_, kExitWait)) Reap(true);
    if (!status_) return description_ + " closed its output but is still running";
    return description_ + " ended (" + DescribeWaitStatus(*status_) + ")";
  }
  std::string Describe() const override { return description_; }
  void GiveUp() override { stop_after_ = std::chrono::milliseconds(0); }

 private:
  // Reaps the process if it has ended (or waits for it when `block`); true once reaped.
  bool Reap(bool block) {
    if (status_) return true;
    int status = 0;
    pid_t done;
    do {
      done = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
    } while (done < 0 && errno == EINTR);
    if (done == pid_) status_ = status;
    return status_.has_value();
  }

  const pid_t pid_;
  const int pidfd_;
  int stdin_fd_;
  const int stdout_fd_;
  const int stderr_fd_;
  const std::string description_;
  std::chrono::milliseconds stop_after_;
  std::optional<int> status_;
};

}  // namespace

Result<std::unique_ptr<AgentLink>> StartProcessAgent(const std::vector<std::string>& argv,
                                                     const std::map<std::string, std::string>& env,
                                                     std::string description,
                                                     std::chrono::milliseconds stop_after) {
  SpawnRequest request;
  request.argv = argv;
  request.env = env;
  request.stdin_pipe = true;
  request.outlives_launcher = true;
  LocalSpawner spawner;
  HVD_ASSIGN_OR_RETURN(SpawnedRank spawned, spawner.Spawn(request));
  if (spawned.exec_error) {
    for (int fd : {spawned.stdin_fd, spawned.stdout_fd, spawned.stderr_fd}) ::close(fd);
    return Status::NotFound(description + ": " + *spawned.exec_error);
  }
  int pidfd = PidfdOpen(spawned.pid);
  if (pidfd < 0) {
    Status error = Status::IoError(description + ": pidfd_open: " + strerror(errno));
    ::kill(-spawned.pid, SIGKILL);
    while (::waitpid(spawned.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    for (int fd : {spawned.stdin_fd, spawned.stdout_fd, spawned.stderr_fd}) ::close(fd);
    return error;
  }
  return std::unique_ptr<AgentLink>(
      new ProcessAgentLink(std::move(spawned), pidfd, std::move(description), stop_after));
}

}  // namespace hvd::launcher
