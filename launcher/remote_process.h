#ifndef HVD_LAUNCHER_REMOTE_PROCESS_H_
#define HVD_LAUNCHER_REMOTE_PROCESS_H_

#include <libssh2.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "common/status.h"
#include "launcher/remote_protocol.h"
#include "launcher/ssh_options.h"
#include "launcher/ssh_session.h"

namespace hvd::launcher {

// One rank running under hvd-agent on a remote host, reached over its own SSH connection
// (protocol: launcher/remote_protocol.h).
//
// The rank's output arrives on two local pipes, so the launcher's poll()-based output
// forwarding reads a remote rank exactly like a local one; they reach EOF when the remote
// streams do. A relay thread owns the SSH session after StartRemoteRank returns: it copies
// the channel's stdout/stderr into the pipes (with backpressure: it stops reading the
// channel while a pipe is full), sends queued control frames, keeps the connection alive,
// and records how the agent ended.
//
// The exit status is a waitpid()-style word (launcher/wait_status.h understands it): the
// rank's exit code, or its fatal signal (sshd's exit-signal). When the connection is lost
// before the agent reports, it is exit code 255 (as ssh(1) does) and transport_status()
// says why. On the remote side, losing the connection closes the agent's stdin, so the
// agent terminates the rank's process group.
//
// Threading: every public method is thread-safe. Descriptors stay owned by this object
// unless released. The destructor closes stdin, waits up to the grace period plus a little
// for the agent to finish, then drops the connection.
class RemoteProcess {
 public:
  using Clock = std::chrono::steady_clock;

  ~RemoteProcess();
  RemoteProcess(const RemoteProcess&) = delete;
  RemoteProcess& operator=(const RemoteProcess&) = delete;

  // Read ends of the output pipes: non-blocking, close-on-exec; -1 once released.
  int stdout_fd() const { return stdout_fd_; }
  int stderr_fd() const { return stderr_fd_; }
  // Hands both read ends to the caller, who then closes them.
  std::pair<int, int> ReleaseOutputFds();
  // An eventfd that becomes readable when TryWait() has a value; for a caller's poll loop.
  int exit_event_fd() const { return exit_event_fd_; }

  // Delivers `signo` to the rank's process group through the agent. kAborted once the
  // process has finished or was closed.
  Status Signal(int signo);
  // Closes the agent's stdin: it sends SIGTERM to the rank's group, SIGKILL after the grace
  // period, and exits. Output and the exit status still arrive. Idempotent.
  void Close();

  // The exit status once the agent has finished (or the connection was lost).
  std::optional<int> TryWait();
  // Waits for it; kTimeout naming the host when the deadline passes first.
  Result<int> Wait(Clock::time_point deadline);
  // OK, or why the connection ended before the agent reported an exit status.
  Status transport_status() const;

  const std::string& host() const { return host_; }

 private:
  friend Result<std::unique_ptr<RemoteProcess>> StartRemoteRank(const SshTarget&,
                                                                const RemoteRankRequest&,
                                                                Clock::time_point);
  RemoteProcess(std::unique_ptr<SshSession> session, LIBSSH2_CHANNEL* channel,
                double grace_period_s);
  Status StartRelay();
  void Wake();

  // Relay thread (remote_process_relay.cc).
  void RelayMain();
  bool RelayStep(bool* progress);
  bool PumpStream(int stream, std::string* pending, int* pipe_fd, bool* progress);
  void FlushPipe(std::string* pending, int* pipe_fd, bool* progress);
  void WaitForEvents(int keepalive_s);
  void FinishRelay(int wait_status, Status transport);
  int ChannelExitStatus();

  std::unique_ptr<SshSession> session_;
  LIBSSH2_CHANNEL* channel_ = nullptr;
  const std::string host_;
  const double grace_period_s_;
  int stdout_fd_ = -1;  // read ends handed out
  int stderr_fd_ = -1;
  int stdout_write_fd_ = -1;  // relay thread only
  int stderr_write_fd_ = -1;
  int wake_fd_ = -1;        // eventfd: a control frame or Close() is queued
  int exit_event_fd_ = -1;  // eventfd: finished

  // Relay-thread-only state.
  std::string out_pending_;
  std::string err_pending_;
  std::string sending_;
  bool eof_sent_ = false;
  bool out_done_ = false;
  bool err_done_ = false;

  mutable std::mutex mutex_;
  std::condition_variable finished_cv_;
  std::string queued_;  // control frames not yet handed to the relay
  bool close_requested_ = false;
  bool abandon_ = false;  // destructor gave up waiting: drop the connection now
  std::optional<int> wait_status_;
  Status transport_status_;
  std::thread relay_;
};

// Connects to `target`, runs `exec '<request.agent_path>'` and sends the start frame, all
// before `deadline`. Errors name user@host:port (see SshSession::Connect).
Result<std::unique_ptr<RemoteProcess>> StartRemoteRank(const SshTarget& target,
                                                       const RemoteRankRequest& request,
                                                       RemoteProcess::Clock::time_point deadline);

// POSIX shell single-quoting: 'it'\''s'.
std::string ShellQuote(const std::string& word);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_REMOTE_PROCESS_H_
