#include "launcher/remote_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace hvd::launcher {
namespace {

void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

// Writes the whole start frame before the relay thread exists (the caller's thread owns the
// session until then).
Status WriteAll(SshSession& session, LIBSSH2_CHANNEL* channel, const std::string& bytes,
                RemoteProcess::Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = libssh2_channel_write(channel, bytes.data() + done, bytes.size() - done);
    if (n == LIBSSH2_ERROR_EAGAIN) {
      HVD_RETURN_IF_ERROR(session.WaitSocket(deadline, "sending the rank's start request"));
      continue;
    }
    if (n < 0) {
      return Status::IoError("ssh to " + session.where() +
                             ": sending the start request failed: " + session.LastError());
    }
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

}  // namespace

std::string ShellQuote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

Result<std::unique_ptr<RemoteProcess>> StartRemoteRank(const SshTarget& target,
                                                       const RemoteRankRequest& request,
                                                       RemoteProcess::Clock::time_point deadline) {
  if (request.argv.empty()) return Status::InvalidArgument("no command to run on " + target.host);
  if (request.agent_path.empty() || request.agent_path[0] != '/') {
    return Status::InvalidArgument("the hvd-agent path must be absolute, got '" +
                                   request.agent_path + "'");
  }
  HVD_ASSIGN_OR_RETURN(std::unique_ptr<SshSession> session, SshSession::Connect(target, deadline));
  // Only the agent's path is on the command line: argv, environment and key go over stdin.
  HVD_ASSIGN_OR_RETURN(LIBSSH2_CHANNEL * channel,
                       session->Exec("exec " + ShellQuote(request.agent_path), deadline));
  Status sent = WriteAll(*session, channel, EncodeStartFrame(request), deadline);
  if (!sent.ok()) {
    libssh2_channel_free(channel);
    return sent;
  }
  std::unique_ptr<RemoteProcess> process(
      new RemoteProcess(std::move(session), channel, request.grace_period_s));
  HVD_RETURN_IF_ERROR(process->StartRelay());
  return process;
}

RemoteProcess::RemoteProcess(std::unique_ptr<SshSession> session, LIBSSH2_CHANNEL* channel,
                             double grace_period_s)
    : session_(std::move(session)),
      channel_(channel),
      host_(session_->target().host),
      grace_period_s_(grace_period_s) {}

Status RemoteProcess::StartRelay() {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::IoError(std::string("pipe2: ") + strerror(errno));
  }
  if (::pipe2(err, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return Status::IoError(std::string("pipe2: ") + strerror(errno));
  }
  stdout_fd_ = out[0];
  stdout_write_fd_ = out[1];
  stderr_fd_ = err[0];
  stderr_write_fd_ = err[1];
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  exit_event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0 || exit_event_fd_ < 0) {
    return Status::IoError(std::string("eventfd: ") + strerror(errno));
  }
  // The relay thread takes no signals: SIGPIPE from a closed pipe becomes EPIPE, and the
  // launcher's SIGINT/SIGTERM/SIGCHLD stay with its signalfd.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  relay_ = std::thread([this] { RelayMain(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return Status::OK();
}

RemoteProcess::~RemoteProcess() {
  Close();
  if (relay_.joinable()) {
    auto patience = std::chrono::milliseconds(static_cast<int64_t>(grace_period_s_ * 1000.0)) +
                    std::chrono::seconds(2);
    (void)Wait(Clock::now() + patience);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      abandon_ = true;
    }
    Wake();
    relay_.join();
  }
  if (channel_ != nullptr) libssh2_channel_free(channel_);
  session_.reset();
  for (int* fd : {&stdout_fd_, &stderr_fd_, &stdout_write_fd_, &stderr_write_fd_, &wake_fd_,
                  &exit_event_fd_}) {
    CloseFd(fd);
  }
}

std::pair<int, int> RemoteProcess::ReleaseOutputFds() {
  std::pair<int, int> fds{stdout_fd_, stderr_fd_};
  stdout_fd_ = -1;
  stderr_fd_ = -1;
  return fds;
}

void RemoteProcess::Wake() {
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
  (void)ignored;
}

Status RemoteProcess::Signal(int signo) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (wait_status_ || close_requested_) {
      return Status::Aborted("cannot signal the rank on " + host_ + ": it has already " +
                             (wait_status_ ? "finished" : "been closed"));
    }
    queued_ += EncodeSignalFrame(signo);
  }
  Wake();
  return Status::OK();
}

void RemoteProcess::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (close_requested_) return;
    close_requested_ = true;
  }
  Wake();
}

std::optional<int> RemoteProcess::TryWait() {
  std::lock_guard<std::mutex> lock(mutex_);
  return wait_status_;
}

Result<int> RemoteProcess::Wait(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!finished_cv_.wait_until(lock, deadline, [this] { return wait_status_.has_value(); })) {
    return Status::Timeout("the rank on " + host_ + " has not finished yet");
  }
  return *wait_status_;
}

Status RemoteProcess::transport_status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return transport_status_;
}

}  // namespace hvd::launcher
