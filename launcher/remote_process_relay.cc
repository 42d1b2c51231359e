// RemoteProcess's relay thread: the only user of the SSH session once the rank has started.
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "launcher/remote_process.h"

namespace hvd::launcher {
namespace {

constexpr int kLostConnectionExitCode = 255;  // what ssh(1) exits with
constexpr auto kCloseTimeout = std::chrono::seconds(5);

int SignalFromName(const std::string& name) {
  for (int signo = 1; signo < 65; ++signo) {
    const char* abbrev = sigabbrev_np(signo);
    if (abbrev != nullptr && name == abbrev) return signo;
  }
  return 0;
}

}  // namespace

void RemoteProcess::RelayMain() {
  for (;;) {
    bool progress = false;
    if (!RelayStep(&progress)) return;
    if (progress) continue;
    int seconds_to_keepalive = 0;
    int keepalive = libssh2_keepalive_send(session_->raw(), &seconds_to_keepalive);
    if (keepalive != 0 && keepalive != LIBSSH2_ERROR_EAGAIN) {
      FinishRelay(W_EXITCODE(kLostConnectionExitCode, 0),
                  Status::IoError("connection to " + session_->where() +
                                  " lost while the rank was running: " + session_->LastError()));
      return;
    }
    // Woken by the socket, Signal()/Close() or a pipe with room. The 1 s cap bounds the
    // stall should libssh2 have queued channel data while sending (it may read the socket
    // inside a write), which no poll() on the socket would report.
    (void)seconds_to_keepalive;
    WaitForEvents(1);
  }
}

bool RemoteProcess::RelayStep(bool* progress) {
  bool close = false;
  bool abandon = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sending_ += queued_;
    queued_.clear();
    close = close_requested_;
    abandon = abandon_;
  }
  if (abandon) {
    FinishRelay(W_EXITCODE(kLostConnectionExitCode, 0),
                Status::Aborted("gave up waiting for the rank on " + host_ + " to exit"));
    return false;
  }
  uint64_t drained;
  while (::read(wake_fd_, &drained, sizeof(drained)) > 0) {
  }
  auto lost = [&](const char* during) {
    FinishRelay(W_EXITCODE(kLostConnectionExitCode, 0),
                Status::IoError("connection to " + session_->where() + " lost while " + during +
                                ": " + session_->LastError()));
    return false;
  };
  if (!sending_.empty()) {
    ssize_t n = libssh2_channel_write(channel_, sending_.data(), sending_.size());
    if (n > 0) {
      sending_.erase(0, static_cast<size_t>(n));
      *progress = true;
    } else if (n != LIBSSH2_ERROR_EAGAIN) {
      return lost("signalling the rank");
    }
  }
  if (close && sending_.empty() && !eof_sent_) {
    int rc = libssh2_channel_send_eof(channel_);
    if (rc == 0) {
      eof_sent_ = true;
      *progress = true;
    } else if (rc != LIBSSH2_ERROR_EAGAIN) {
      return lost("closing the rank's input");
    }
  }
  if (!PumpStream(0, &out_pending_, &stdout_write_fd_, progress)) return lost("reading output");
  if (!PumpStream(1, &err_pending_, &stderr_write_fd_, progress)) return lost("reading output");
  if (!out_done_ || !err_done_) return true;

  // Both streams ended: the agent is exiting. Its exit status precedes the channel close.
  auto deadline = Clock::now() + kCloseTimeout;
  int rc;
  while ((rc = libssh2_channel_close(channel_)) == LIBSSH2_ERROR_EAGAIN) {
    if (!session_->WaitSocket(deadline, "closing the channel").ok()) break;
  }
  while ((rc = libssh2_channel_wait_closed(channel_)) == LIBSSH2_ERROR_EAGAIN) {
    if (!session_->WaitSocket(deadline, "closing the channel").ok()) break;
  }
  FinishRelay(ChannelExitStatus(), Status::OK());
  return false;
}

bool RemoteProcess::PumpStream(int stream, std::string* pending, int* pipe_fd, bool* progress) {
  bool& done = stream == 0 ? out_done_ : err_done_;
  FlushPipe(pending, pipe_fd, progress);
  if (!pending->empty() || done) return true;  // backpressure: the pipe is full
  char buffer[32768];
  ssize_t n = libssh2_channel_read_ex(channel_, stream, buffer, sizeof(buffer));
  if (n > 0) {
    *progress = true;
    if (*pipe_fd >= 0) pending->assign(buffer, static_cast<size_t>(n));
    FlushPipe(pending, pipe_fd, progress);
    return true;
  }
  if (n == LIBSSH2_ERROR_EAGAIN) return true;
  if (n == 0) {
    done = true;
    *progress = true;
    if (*pipe_fd >= 0) ::close(*pipe_fd);
    *pipe_fd = -1;
    return true;
  }
  return false;
}

void RemoteProcess::FlushPipe(std::string* pending, int* pipe_fd, bool* progress) {
  while (!pending->empty()) {
    if (*pipe_fd < 0) {
      pending->clear();  // nobody reads this stream any more
      return;
    }
    ssize_t n = ::write(*pipe_fd, pending->data(), pending->size());
    if (n > 0) {
      pending->erase(0, static_cast<size_t>(n));
      *progress = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    ::close(*pipe_fd);  // EPIPE: the reader closed its end
    *pipe_fd = -1;
  }
}

void RemoteProcess::WaitForEvents(int timeout_s) {
  pollfd fds[4];
  int n = 0;
  short socket_events = POLLIN;
  if (libssh2_session_block_directions(session_->raw()) & LIBSSH2_SESSION_BLOCK_OUTBOUND) {
    socket_events |= POLLOUT;
  }
  fds[n++] = {session_->socket_fd(), socket_events, 0};
  fds[n++] = {wake_fd_, POLLIN, 0};
  if (!out_pending_.empty() && stdout_write_fd_ >= 0) fds[n++] = {stdout_write_fd_, POLLOUT, 0};
  if (!err_pending_.empty() && stderr_write_fd_ >= 0) fds[n++] = {stderr_write_fd_, POLLOUT, 0};
  int rc;
  do {
    rc = ::poll(fds, static_cast<nfds_t>(n), timeout_s > 0 ? timeout_s * 1000 : -1);
  } while (rc < 0 && errno == EINTR);
}

int RemoteProcess::ChannelExitStatus() {
  char* signal_name = nullptr;
  size_t length = 0;
  libssh2_channel_get_exit_signal(channel_, &signal_name, &length, nullptr, nullptr, nullptr,
                                  nullptr);
  if (signal_name != nullptr) {
    int signo = SignalFromName(std::string(signal_name, length));
    libssh2_free(session_->raw(), signal_name);
    if (signo > 0) return signo;  // waitpid's encoding of "killed by signo"
  }
  return W_EXITCODE(libssh2_channel_get_exit_status(channel_) & 0xff, 0);
}

void RemoteProcess::FinishRelay(int wait_status, Status transport) {
  for (int* fd : {&stdout_write_fd_, &stderr_write_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  {
    // The event fd is signalled under the lock, so whoever sees it readable, and whoever
    // Wait()s, finds the status already set.
    std::lock_guard<std::mutex> lock(mutex_);
    wait_status_ = wait_status;
    transport_status_ = std::move(transport);
    uint64_t one = 1;
    ssize_t ignored = ::write(exit_event_fd_, &one, sizeof(one));
    (void)ignored;
  }
  finished_cv_.notify_all();
}

}  // namespace hvd::launcher
