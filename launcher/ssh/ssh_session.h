#ifndef HVD_LAUNCHER_SSH_SSH_SESSION_H_
#define HVD_LAUNCHER_SSH_SSH_SESSION_H_

#include <libssh2.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "launcher/ssh/ssh_options.h"

namespace hvd::launcher {

// One authenticated SSH connection (libssh2, non-blocking; every wait is a poll() on the
// socket bounded by a deadline).
//
// Connect: resolve the host, TCP connect, SSH handshake, host key check against known_hosts
// (launcher/ssh/ssh_known_hosts.h), then public-key authentication: the identity file if one is
// given, else the ssh-agent, else the default ~/.ssh keys. Each attempt is bounded by
// options.connect_timeout_s and the caller's deadline; refused, unreachable and timed-out
// attempts are retried (options.connect_attempts), a host key or login problem is not.
// Errors are Status values that name "user@host:port" and the reason: kTimeout (no answer),
// kIoError (refused, unreachable, reset, not an SSH server), kPermissionDenied (host key,
// authentication), kInvalidArgument (unreadable identity file, unresolvable name).
//
// Threading: a session and its channels are used by one thread at a time (libssh2 is not
// thread-safe per session). Distinct sessions may be connected and used concurrently, which
// is how the launcher reaches many hosts in parallel.
class SshSession {
 public:
  using Clock = std::chrono::steady_clock;

  static Result<std::unique_ptr<SshSession>> Connect(const SshTarget& target,
                                                     Clock::time_point deadline);
  ~SshSession();
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  // Opens a session channel and runs `command` (through the remote user's shell).
  Result<LIBSSH2_CHANNEL*> Exec(const std::string& command, Clock::time_point deadline);

  // After a libssh2 call returned LIBSSH2_ERROR_EAGAIN: waits until the socket can move in
  // the direction libssh2 is blocked on. kTimeout names `what` and the host.
  Status WaitSocket(Clock::time_point deadline, const std::string& what);

  // libssh2's last error text for this session, e.g. "Timeout waiting for ...".
  std::string LastError() const;

  LIBSSH2_SESSION* raw() const { return session_; }
  int socket_fd() const { return fd_; }
  const SshTarget& target() const { return target_; }
  std::string where() const { return target_.Describe(); }

 private:
  SshSession(SshTarget target, int fd, LIBSSH2_SESSION* session)
      : target_(std::move(target)), fd_(fd), session_(session) {}

  static Result<std::unique_ptr<SshSession>> ConnectOnce(const SshTarget& target,
                                                         Clock::time_point deadline);
  Status Handshake(Clock::time_point deadline);
  Status Authenticate(Clock::time_point deadline);
  Status AuthenticateWithFile(const std::string& path, Clock::time_point deadline);
  Status AuthenticateWithAgent(Clock::time_point deadline, bool* tried);
  void ConfigureKeepalive();

  SshTarget target_;
  int fd_ = -1;
  LIBSSH2_SESSION* session_ = nullptr;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_SSH_SSH_SESSION_H_
