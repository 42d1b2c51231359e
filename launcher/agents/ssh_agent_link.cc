#include "launcher/agents/ssh_agent_link.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "common/fd.h"
#include "launcher/outcome/wait_status.h"
#include "launcher/ssh/ssh_session.h"

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kCloseTimeout = std::chrono::seconds(5);
constexpr size_t kChunk = 32768;

int SignalFromName(const std::string& name) {
  for (int signo = 1; signo < 65; ++signo) {
    const char* abbrev = sigabbrev_np(signo);
    if (abbrev != nullptr && name == abbrev) return signo;
  }
  return 0;
}

// See ConnectSshAgent. The bridge thread is the only user of the SSH session.
class SshAgentLink : public AgentLink {
 public:
  SshAgentLink(std::unique_ptr<SshSession> session, LIBSSH2_CHANNEL* channel)
      : session_(std::move(session)), channel_(channel) {}

  ~SshAgentLink() override {
    abandon_ = true;
    Wake();
    if (bridge_.joinable()) bridge_.join();
    if (channel_ != nullptr) libssh2_channel_free(channel_);
    session_.reset();
    for (int* fd : {&local_fd_, &bridge_fd_, &diag_read_fd_, &diag_write_fd_, &wake_fd_}) {
      CloseFd(fd);
    }
  }

  Status Start() {
    int pair[2], diag[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
      return Status::IoError(std::string("socketpair: ") + strerror(errno));
    }
    local_fd_ = pair[0];
    bridge_fd_ = pair[1];
    if (::pipe2(diag, O_CLOEXEC | O_NONBLOCK) != 0) {
      return Status::IoError(std::string("pipe2: ") + strerror(errno));
    }
    diag_read_fd_ = diag[0];
    diag_write_fd_ = diag[1];
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) return Status::IoError(std::string("eventfd: ") + strerror(errno));
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    bridge_ = std::thread([this] { Bridge(); });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return Status::OK();
  }

  int to_agent_fd() const override { return local_fd_; }
  int from_agent_fd() const override { return local_fd_; }
  int diag_fd() const override { return diag_read_fd_; }
  void CloseToAgent() override { ::shutdown(local_fd_, SHUT_WR); }
  std::string EndReason() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return end_reason_.empty() ? "the SSH channel to " + session_->where() + " closed"
                               : end_reason_;
  }
  std::string Describe() const override { return session_->where(); }

 private:
  void Wake() {
    uint64_t one = 1;
    ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
    (void)ignored;
  }

  void Bridge();
  // One pass of copying; false once the channel is over (Finish was called).
  bool Step(bool* progress);
  bool PumpChannel(int stream, std::string* pending, int* fd, bool* done, bool* progress);
  void Flush(std::string* pending, int* fd, bool* progress);
  void WaitForEvents();
  std::string ExitDescription();
  void Finish(std::string reason);
  bool Lost(const char* during) {
    Finish("connection to " + session_->where() + " lost while " + during + ": " +
           session_->LastError());
    return false;
  }

  std::unique_ptr<SshSession> session_;
  LIBSSH2_CHANNEL* channel_;
  int local_fd_ = -1;  // the session's end of the socketpair
  int bridge_fd_ = -1;
  int diag_read_fd_ = -1;
  int diag_write_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> abandon_{false};
  std::thread bridge_;
  std::mutex mutex_;
  std::string end_reason_;

  // Bridge thread only.
  std::string sending_;  // from the session, for the channel's stdin
  bool input_ended_ = false;
  bool eof_sent_ = false;
  std::string out_pending_;  // channel stdout, for the session
  std::string err_pending_;  // channel stderr, for the diag pipe
  bool out_done_ = false;
  bool err_done_ = false;
};

void SshAgentLink::Bridge() {
  for (;;) {
    bool progress = false;
    if (!Step(&progress)) return;
    if (progress) continue;
    int seconds_to_keepalive = 0;
    int keepalive = libssh2_keepalive_send(session_->raw(), &seconds_to_keepalive);
    if (keepalive != 0 && keepalive != LIBSSH2_ERROR_EAGAIN) {
      Lost("the agent was running");
      return;
    }
    WaitForEvents();
  }
}

bool SshAgentLink::Step(bool* progress) {
  if (abandon_) {
    Finish("gave up on the connection to " + session_->where());
    return false;
  }
  uint64_t drained;
  while (::read(wake_fd_, &drained, sizeof(drained)) > 0) {
  }
  if (!input_ended_ && sending_.size() < kChunk) {
    char buffer[kChunk];
    ssize_t n = ::recv(bridge_fd_, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      sending_.append(buffer, static_cast<size_t>(n));
      *progress = true;
    } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      input_ended_ = true;  // the session closed the agent's stdin
      *progress = true;
    }
  }
  if (!sending_.empty()) {
    ssize_t n = libssh2_channel_write(channel_, sending_.data(), sending_.size());
    if (n > 0) {
      sending_.erase(0, static_cast<size_t>(n));
      *progress = true;
    } else if (n != LIBSSH2_ERROR_EAGAIN) {
      return Lost("writing to the agent");
    }
  }
  if (input_ended_ && sending_.empty() && !eof_sent_) {
    int rc = libssh2_channel_send_eof(channel_);
    if (rc == 0) {
      eof_sent_ = true;
      *progress = true;
    } else if (rc != LIBSSH2_ERROR_EAGAIN) {
      return Lost("closing the agent's input");
    }
  }
  if (!PumpChannel(0, &out_pending_, &bridge_fd_, &out_done_, progress)) {
    return Lost("reading the agent's output");
  }
  if (!PumpChannel(1, &err_pending_, &diag_write_fd_, &err_done_, progress)) {
    return Lost("reading the agent's output");
  }
  if (!out_done_ || !err_done_ || !out_pending_.empty() || !err_pending_.empty()) return true;
  // Both streams ended: the agent is exiting. Its exit status precedes the channel close.
  auto deadline = Clock::now() + kCloseTimeout;
  while (libssh2_channel_close(channel_) == LIBSSH2_ERROR_EAGAIN) {
    if (!session_->WaitSocket(deadline, "closing the channel").ok()) break;
  }
  while (libssh2_channel_wait_closed(channel_) == LIBSSH2_ERROR_EAGAIN) {
    if (!session_->WaitSocket(deadline, "closing the channel").ok()) break;
  }
  Finish(ExitDescription());
  return false;
}

bool SshAgentLink::PumpChannel(int stream, std::string* pending, int* fd, bool* done,
                               bool* progress) {
  Flush(pending, fd, progress);
  if (!pending->empty() || *done) return true;  // backpressure: the local side is full
  char buffer[kChunk];
  ssize_t n = libssh2_channel_read_ex(channel_, stream, buffer, sizeof(buffer));
  if (n > 0) {
    *progress = true;
    pending->assign(buffer, static_cast<size_t>(n));
    Flush(pending, fd, progress);
    return true;
  }
  if (n == LIBSSH2_ERROR_EAGAIN) return true;
  if (n == 0) {
    *done = true;
    *progress = true;
    return true;
  }
  return false;
}

void SshAgentLink::Flush(std::string* pending, int* fd, bool* progress) {
  while (!pending->empty()) {
    if (*fd < 0) {
      pending->clear();  // nobody reads this stream any more
      return;
    }
    ssize_t n = ::send(*fd, pending->data(), pending->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(*fd, pending->data(), pending->size());
    if (n > 0) {
      pending->erase(0, static_cast<size_t>(n));
      *progress = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    pending->clear();  // EPIPE: the session is gone; keep draining the channel
    return;
  }
}

void SshAgentLink::WaitForEvents() {
  pollfd fds[4];
  short socket_events = POLLIN;
  if (libssh2_session_block_directions(session_->raw()) & LIBSSH2_SESSION_BLOCK_OUTBOUND) {
    socket_events |= POLLOUT;
  }
  fds[0] = {session_->socket_fd(), socket_events, 0};
  fds[1] = {wake_fd_, POLLIN, 0};
  short local_events = 0;
  if (!input_ended_ && sending_.size() < kChunk) local_events |= POLLIN;
  if (!out_pending_.empty()) local_events |= POLLOUT;
  fds[2] = {local_events != 0 ? bridge_fd_ : -1, local_events, 0};
  fds[3] = {!err_pending_.empty() ? diag_write_fd_ : -1, POLLOUT, 0};
  // The 1 s cap bounds the stall should libssh2 have queued channel data while sending (it
  // may read the socket inside a write), which no poll() on the socket would report.
  int rc;
  do {
    rc = ::poll(fds, 4, 1000);
  } while (rc < 0 && errno == EINTR);
}

std::string SshAgentLink::ExitDescription() {
  char* signal_name = nullptr;
  size_t length = 0;
  libssh2_channel_get_exit_signal(channel_, &signal_name, &length, nullptr, nullptr, nullptr,
                                  nullptr);
  int status = W_EXITCODE(libssh2_channel_get_exit_status(channel_) & 0xff, 0);
  if (signal_name != nullptr) {
    int signo = SignalFromName(std::string(signal_name, length));
    libssh2_free(session_->raw(), signal_name);
    if (signo > 0) status = signo;  // waitpid's encoding of "killed by signo"
  }
  return "hvd-agent on " + session_->where() + " ended (" + DescribeWaitStatus(status) + ")";
}

void SshAgentLink::Finish(std::string reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    end_reason_ = std::move(reason);
  }
  ::shutdown(bridge_fd_, SHUT_WR);  // the session reads end of stream after what is queued
  CloseFd(&diag_write_fd_);
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

std::string SshAgentCommand(const std::string& agent_path) {
  return "exec " + ShellQuote(agent_path);
}

Result<std::unique_ptr<AgentLink>> ConnectSshAgent(const SshTarget& target,
                                                   const std::string& agent_path,
                                                   Clock::time_point deadline) {
  if (agent_path.empty() || agent_path[0] != '/') {
    return Status::InvalidArgument("the hvd-agent path must be absolute, got '" + agent_path + "'");
  }
  HVD_ASSIGN_OR_RETURN(std::unique_ptr<SshSession> session, SshSession::Connect(target, deadline));
  HVD_ASSIGN_OR_RETURN(LIBSSH2_CHANNEL * channel,
                       session->Exec(SshAgentCommand(agent_path), deadline));
  auto link = std::make_unique<SshAgentLink>(std::move(session), channel);
  HVD_RETURN_IF_ERROR(link->Start());
  return std::unique_ptr<AgentLink>(std::move(link));
}

}  // namespace hvd::launcher
