#include "launcher/srun_spawner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <thread>

#include "launcher/console.h"
#include "launcher/dry_run.h"
#include "launcher/remote_protocol.h"

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// How long srun gets to end after SIGTERM before SIGKILL.
constexpr std::chrono::seconds kSrunTermGrace{5};
// Bounds writing one Signal frame into a full pipe.
constexpr std::chrono::seconds kSignalWriteTimeout{1};

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

// Writes all of `bytes` to the non-blocking `fd` before `deadline`.
Status WriteAll(int fd, std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return Status::IoError(std::string("write: ") + strerror(errno));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Status::Timeout("srun did not read its stdin in time");
    pollfd p = {fd, POLLOUT, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
  return Status::OK();
}

// RankHandle over one local srun child that runs hvd-agent as a one-task step. srun's exit
// is seen through a pidfd (the exit event descriptor) and reaped here, never by job control.
// Thread-safe; the stop thread touches only the pidfd.
class SrunRankHandle : public RankHandle {
 public:
  SrunRankHandle(pid_t pid, int pidfd, int stdin_fd)
      : pid_(pid), pidfd_(pidfd), stdin_fd_(stdin_fd) {}

  // Closes srun's stdin (the agent then stops the rank), makes sure srun ends (the stop
  // thread) and reaps it.
  ~SrunRankHandle() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      CloseStdinLocked();
      if (!status_ && !stopper_.joinable()) StartStopperLocked();
    }
    if (stopper_.joinable()) stopper_.join();
    if (!status_) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    ::close(pidfd_);
  }

  int exit_event_fd() const override { return pidfd_; }

  std::optional<int> TryWait() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_) return status_;
    int status = 0;
    pid_t done;
    do {
      done = ::waitpid(pid_, &status, WNOHANG);
    } while (done < 0 && errno == EINTR);
    if (done == pid_) status_ = status;
    return status_;
  }

  void Signal(int signo) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_ || stdin_fd_ < 0) return;
    (void)WriteAll(stdin_fd_, EncodeSignalFrame(signo), Clock::now() + kSignalWriteTimeout);
    if (signo != SIGKILL) return;
    CloseStdinLocked();
    if (!stopper_.joinable()) StartStopperLocked();
  }

  void Close() override {
    std::lock_guard<std::mutex> lock(mutex_);
    CloseStdinLocked();
  }

  std::string TransportError() const override { return ""; }

  Status SendStart(const std::string& frame, Clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mutex_);
    // A frame that fits the pipe never waits for srun to start reading.
    ::fcntl(stdin_fd_, F_SETPIPE_SZ, static_cast<int>(std::min<size_t>(frame.size(), 1 << 20)));
    return WriteAll(stdin_fd_, frame, deadline);
  }

 private:
  void CloseStdinLocked() {
    if (stdin_fd_ >= 0) ::close(stdin_fd_);
    stdin_fd_ = -1;
  }

  // srun normally ends once the agent does; one that does not (its step never started, or
  // its node is lost) is cancelled: SIGTERM makes srun cancel the step, SIGKILL ends srun.
  void StartStopperLocked() {
    int pidfd = pidfd_;
    stopper_ = std::thread([pidfd] {
      if (WaitPidfd(pidfd, SrunSpawner::kSrunStopAfter)) return;
      PidfdSignal(pidfd, SIGTERM);
      if (WaitPidfd(pidfd, kSrunTermGrace)) return;
      PidfdSignal(pidfd, SIGKILL);
    });
  }

  const pid_t pid_;
  const int pidfd_;
  std::mutex mutex_;
  int stdin_fd_;
  std::optional<int> status_;
  std::thread stopper_;
};

}  // namespace

void SrunSpawner::Prepare(const std::vector<SpawnRequest>& requests,
                          std::chrono::steady_clock::time_point deadline) {
  (void)requests;
  deadline_ = deadline;
}

Result<SpawnedRank> SrunSpawner::Spawn(const SpawnRequest& request) {
  if (!request.remote) return local_.Spawn(request);
  SpawnRequest srun;
  srun.rank = request.rank;
  srun.host = request.host;
  srun.argv = SrunRankArgv(options_.launch, request.host, request.rank, options_.agent_path);
  srun.env = options_.srun_env;
  srun.stdin_pipe = true;
  srun.outlives_launcher = true;
  PrintStep(options_.verbose, "rank " + std::to_string(request.rank) + " on " + request.host +
                                  ": " + ShellJoin(srun.argv));
  HVD_ASSIGN_OR_RETURN(SpawnedRank spawned, local_.Spawn(srun));
  if (spawned.exec_error) {
    ::close(spawned.stdin_fd);
    spawned.stdin_fd = -1;
    return spawned;  // job control reports "cannot execute 'srun'" with exit code 126/127
  }
  int pidfd = PidfdOpen(spawned.pid);
  if (pidfd < 0) {
    Status error = Status::IoError(std::string("pidfd_open for srun: ") + strerror(errno));
    ::kill(-spawned.pid, SIGKILL);
    while (::waitpid(spawned.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    for (int fd : {spawned.stdin_fd, spawned.stdout_fd, spawned.stderr_fd}) ::close(fd);
    return error;
  }
  auto handle = std::make_unique<SrunRankHandle>(spawned.pid, pidfd, spawned.stdin_fd);

  RemoteRankRequest remote;
  remote.argv = request.argv;
  remote.env = request.env;
  remote.cwd = options_.cwd;
  remote.job_key = options_.job_key;
  remote.grace_period_s = options_.grace_period_s;
  remote.agent_path = options_.agent_path;
  Status sent = handle->SendStart(EncodeStartFrame(remote), deadline_);
  if (!sent.ok()) {
    ::close(spawned.stdout_fd);
    ::close(spawned.stderr_fd);
    return sent.WithContext("cannot send the start frame to srun for " + request.host);
  }  // the handle's destructor stops and reaps srun
  SpawnedRank out;
  out.stdout_fd = spawned.stdout_fd;
  out.stderr_fd = spawned.stderr_fd;
  out.handle = std::move(handle);
  return out;
}

}  // namespace hvd::launcher
