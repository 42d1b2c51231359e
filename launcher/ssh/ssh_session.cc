#include "launcher/ssh/ssh_session.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "common/duration.h"
#include "launcher/ssh/ssh_known_hosts.h"

namespace hvd::launcher {
namespace {

using Clock = SshSession::Clock;

// libssh2_init is not thread-safe; the launcher may connect to many hosts in parallel.
void InitLibssh2Once() {
  static std::once_flag once;
  std::call_once(once, [] { libssh2_init(0); });
}

int RemainingMs(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(ms.count(), 0, 1 << 30));
}

bool Transient(const Status& s) {
  return s.code() == StatusCode::kTimeout || s.code() == StatusCode::kIoError;
}

// Non-blocking TCP connect to every address of `host` in turn until one answers.
Result<int> ConnectTcp(const SshTarget& target, Clock::time_point deadline) {
  const std::string where = target.Describe();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::string port = std::to_string(target.options.port);
  int rc = ::getaddrinfo(target.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    return Status::InvalidArgument("ssh to " + where + ": cannot resolve host name '" +
                                   target.host + "': " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(list, ::freeaddrinfo);
  Status last = Status::IoError("ssh to " + where + ": no address");
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Status::IoError("ssh to " + where + ": socket: " + strerror(errno));
      continue;
    }
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = Status::IoError("ssh to " + where + ": connect: " + strerror(errno));
      ::close(fd);
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int n;
    do {
      n = ::poll(&p, 1, RemainingMs(deadline));
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
      ::close(fd);
      return Status::Timeout("ssh to " + where + ": TCP connect got no answer within " +
                             SecondsText(target.options.connect_timeout_s) +
                             " (host down or unreachable?)");
    }
    int error = 0;
    socklen_t len = sizeof(error);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      last = Status::IoError(
          "ssh to " + where + ": " + strerror(error) +
          (error == ECONNREFUSED ? " (is sshd listening on port " + port + "?)" : ""));
      ::close(fd);
      continue;
    }
    return fd;
  }
  return last;
}

}  // namespace

Result<std::unique_ptr<SshSession>> SshSession::Connect(const SshTarget& target,
                                                        Clock::time_point deadline) {
  InitLibssh2Once();
  const int attempts = std::max(1, target.options.connect_attempts);
  for (int attempt = 1;; ++attempt) {
    auto attempt_deadline =
        std::min(deadline, Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(
                                              target.options.connect_timeout_s * 1000.0)));
    Result<std::unique_ptr<SshSession>> session = ConnectOnce(target, attempt_deadline);
    if (session.ok()) return session;
    auto backoff =
        std::chrono::milliseconds(static_cast<int64_t>(target.options.retry_backoff_s * 1000.0));
    if (!Transient(session.status()) || attempt >= attempts || Clock::now() + backoff >= deadline) {
      if (attempt == 1) return session.status();
      return Status(session.status().code(), session.status().message() + " (after " +
                                                 std::to_string(attempt) + " attempts)");
    }
    std::this_thread::sleep_for(backoff);
  }
}

Result<std::unique_ptr<SshSession>> SshSession::ConnectOnce(const SshTarget& target,
                                                            Clock::time_point deadline) {
  HVD_ASSIGN_OR_RETURN(int fd, ConnectTcp(target, deadline));
  LIBSSH2_SESSION* raw = libssh2_session_init();
  if (raw == nullptr) {
    ::close(fd);
    return Status::Internal("libssh2_session_init failed");
  }
  std::unique_ptr<SshSession> session(new SshSession(target, fd, raw));
  libssh2_session_set_blocking(raw, 0);
  HVD_RETURN_IF_ERROR(session->Handshake(deadline));
  HVD_RETURN_IF_ERROR(VerifyHostKey(raw, target.host, target.options.port,
                                    target.options.KnownHostsPath(),
                                    target.options.host_key_policy));
  HVD_RETURN_IF_ERROR(session->Authenticate(deadline));
  session->ConfigureKeepalive();
  return session;
}

SshSession::~SshSession() {
  if (session_ != nullptr) {
    // Polite, bounded goodbye; the socket is closed regardless.
    auto deadline = Clock::now() + std::chrono::milliseconds(500);
    while (libssh2_session_disconnect(session_, "hvdrun done") == LIBSSH2_ERROR_EAGAIN) {
      if (!WaitSocket(deadline, "disconnect").ok()) break;
    }
    libssh2_session_free(session_);
  }
  if (fd_ >= 0) ::close(fd_);
}

std::string SshSession::LastError() const {
  char* message = nullptr;
  int length = 0;
  libssh2_session_last_error(session_, &message, &length, 0);
  return message != nullptr && length > 0 ? std::string(message, static_cast<size_t>(length))
                                          : "unknown libssh2 error";
}

Status SshSession::WaitSocket(Clock::time_point deadline, const std::string& what) {
  int directions = libssh2_session_block_directions(session_);
  short events = 0;
  if (directions & LIBSSH2_SESSION_BLOCK_INBOUND) events |= POLLIN;
  if (directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) events |= POLLOUT;
  if (events == 0) events = POLLIN;
  pollfd p{fd_, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, RemainingMs(deadline));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    return Status::Timeout("ssh to " + where() + ": timed out during " + what);
  }
  return Status::OK();
}

Status SshSession::Handshake(Clock::time_point deadline) {
  // OpenSSH's preference: the key type most likely recorded in known_hosts first.
  libssh2_session_method_pref(session_, LIBSSH2_METHOD_HOSTKEY,
                              "ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,"
                              "ecdsa-sha2-nistp521,rsa-sha2-512,rsa-sha2-256,ssh-rsa");
  int rc;
  while ((rc = libssh2_session_handshake(session_, fd_)) == LIBSSH2_ERROR_EAGAIN) {
    HVD_RETURN_IF_ERROR(WaitSocket(deadline, "the SSH handshake"));
  }
  if (rc != 0) {
    return Status::IoError("ssh to " + where() + ": SSH handshake failed: " + LastError() +
                           " (is it an SSH server?)");
  }
  return Status::OK();
}

void SshSession::ConfigureKeepalive() {
  const SshOptions& o = target_.options;
  if (o.keepalive_interval_s > 0) {
    libssh2_keepalive_config(session_, 1,
                             static_cast<unsigned>(std::max(1.0, o.keepalive_interval_s)));
  }
  if (o.dead_peer_timeout_s > 0) {
    unsigned timeout_ms = static_cast<unsigned>(o.dead_peer_timeout_s * 1000.0);
    ::setsockopt(fd_, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout_ms, sizeof(timeout_ms));
    int on = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  }
  int on = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

Result<LIBSSH2_CHANNEL*> SshSession::Exec(const std::string& command, Clock::time_point deadline) {
  LIBSSH2_CHANNEL* channel = nullptr;
  while ((channel = libssh2_channel_open_session(session_)) == nullptr) {
    if (libssh2_session_last_errno(session_) != LIBSSH2_ERROR_EAGAIN) {
      return Status::IoError("ssh to " + where() + ": cannot open a channel: " + LastError());
    }
    HVD_RETURN_IF_ERROR(WaitSocket(deadline, "opening a channel"));
  }
  int rc;
  while ((rc = libssh2_channel_process_startup(channel, "exec", 4, command.data(),
                                               static_cast<unsigned>(command.size()))) ==
         LIBSSH2_ERROR_EAGAIN) {
    Status waited = WaitSocket(deadline, "starting the remote command");
    if (!waited.ok()) {
      libssh2_channel_free(channel);
      return waited;
    }
  }
  if (rc != 0) {
    std::string error = LastError();
    libssh2_channel_free(channel);
    return Status::IoError("ssh to " + where() + ": cannot run the remote command: " + error);
  }
  return channel;
}

}  // namespace hvd::launcher
