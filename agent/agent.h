#ifndef HVD_AGENT_AGENT_H_
#define HVD_AGENT_AGENT_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>

#include "agent/output_relay.h"
#include "launcher/remote_protocol.h"

namespace hvd::agent {

// hvd-agent's whole job, as an object so tests can run it over pipes: read the start frame
// from `control_fd`, start the rank (agent/rank_launch.h), relay its stdout/stderr unchanged
// to `stdout_fd`/`stderr_fd`, apply Signal frames to its process group, and supervise it.
// The protocol is described in launcher/remote_protocol.h.
//
// Lifetime rules: end of `control_fd` (the launcher or its connection is gone), a malformed
// control frame, or SIGTERM/SIGINT/SIGHUP to the agent sends SIGTERM to the rank's process
// group and SIGKILL after the request's grace period. When the rank has been reaped, the
// group gets a final SIGKILL and the agent, a child subreaper, reaps whatever the rank left
// behind; output still in the pipes is drained for up to kDrainTime.
//
// Threading: single-threaded. Run() expects SIGCHLD, SIGTERM, SIGINT and SIGHUP to be
// blocked (agent_main does it before anything else) and SIGPIPE ignored.
class Agent {
 public:
  struct Io {
    int control_fd = 0;
    int stdout_fd = 1;
    int stderr_fd = 2;
  };
  static constexpr std::chrono::milliseconds kDrainTime{2000};

  Agent(Io io, std::map<std::string, std::string> login_env);

  // Returns the rank's waitpid() status, or W_EXITCODE(kExit*, 0) when it never ran.
  int Run();

 private:
  using Clock = std::chrono::steady_clock;

  bool ReadStartFrame(int signal_fd, launcher::RemoteRankRequest* request, int* status);
  void Supervise(int signal_fd);
  void OnControlReadable();
  void OnSignals(int signal_fd);
  void BeginTermination();
  bool Finished(Clock::time_point now);
  int PollTimeoutMs(Clock::time_point now) const;
  void Diagnose(const std::string& message);

  Io io_;
  std::map<std::string, std::string> login_env_;
  launcher::AgentFrameReader reader_;
  double grace_period_s_ = 5;
  pid_t rank_pid_ = -1;
  bool reaped_ = false;
  int rank_status_ = 0;
  bool control_open_ = true;
  bool terminating_ = false;
  bool killed_ = false;
  Clock::time_point kill_deadline_;
  Clock::time_point drain_deadline_;
  OutputRelay out_;
  OutputRelay err_;
};

}  // namespace hvd::agent

#endif  // HVD_AGENT_AGENT_H_
