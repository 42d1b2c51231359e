#ifndef HVD_AGENT_AGENT_H_
#define HVD_AGENT_AGENT_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "launcher/agents/agent_protocol.h"
#include "launcher/local/oom_kills.h"
#include "launcher/local/rank_leftovers.h"

namespace hvd::agent {

// hvd-agent's whole job, as an object so tests can run it over pipes: one agent supervises
// every rank hvdrun places on its host. It reads the launcher's frames from `control_fd`
// (Hello first, then Start / Signal / Stop / Heartbeat at any time), forks each rank
// (agent/rank_launch.h), relays the ranks' stdout and stderr as Output frames and their
// ends as Exit frames on `out_fd`, and answers Hello with Ready. The protocol is described
// once, in launcher/agents/agent_protocol.h.
//
// Lifetime rules. A rank leads its own session and process group and dies with the agent
// (PR_SET_PDEATHSIG). When a rank is reaped its group gets a final SIGKILL, so nothing it
// started outlives it; the agent, a child subreaper, reaps whatever is re-parented to it;
// output still in the rank's pipes is drained for up to kDrainTime (counted while the agent
// reads: not while a slow launcher holds it back) before its Exit frame.
// End of `control_fd`, a malformed frame, a write error on `out_fd`, no sign of life from
// the launcher for the heartbeat timeout, or SIGTERM/SIGINT/SIGHUP to the agent shut it
// down: every rank gets SIGTERM to its group and SIGKILL after the grace period; the agent
// exits once every rank is reaped and reported (or, when the launcher is unreachable, once
// every rank is reaped). With no rank running the agent waits for more Start frames.
//
// Output toward the launcher is buffered up to kOutputHighWater; above it the agent stops
// reading the ranks' pipes, so a slow launcher slows the ranks instead of growing memory.
//
// Threading: single-threaded. Run() expects SIGCHLD, SIGTERM, SIGINT and SIGHUP to be
// blocked (agent_main does it before anything else) and SIGPIPE ignored; `out_fd` should be
// non-blocking.
class Agent {
 public:
  struct Io {
    int control_fd = 0;
    int out_fd = 1;
    int diag_fd = 2;  // the agent's own messages, "hvd-agent: ..." lines
  };
  static constexpr std::chrono::milliseconds kDrainTime{2000};
  static constexpr size_t kOutputHighWater = size_t{1} << 20;
  // How long a shut-down agent keeps trying to deliver its last frames.
  static constexpr std::chrono::milliseconds kFlushTime{2000};
  // How long the exiting agent waits for what its ranks left behind to be reaped.
  static constexpr std::chrono::milliseconds kReapTime{1000};

  Agent(Io io, std::map<std::string, std::string> login_env);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Returns the agent's exit code: 0 after the launcher closed the channel, 1 after it went
  // silent, 128+N after signal N, kExitAgentError (125) after a protocol or set-up error.
  int Run();

 private:
  using Clock = std::chrono::steady_clock;
  struct Rank {
    pid_t pid = -1;
    int fds[2] = {-1, -1};  // stdout, stderr pipes (read ends)
    bool reaped = false;
    int status = 0;
    bool terminating = false;
    bool killed = false;
    Clock::time_point kill_deadline;
    Clock::time_point drain_deadline;
  };

  // agent.cc: the session.
  bool ReadHello(int signal_fd);
  void ApplyHello(const launcher::AgentHello& hello);
  void Loop(int signal_fd);
  void OnControlReadable();
  void DrainFrames();
  void OnMessage(launcher::LauncherMessage message);
  void OnSignals(int signal_fd);
  void CheckTimers(Clock::time_point now);
  int PollTimeoutMs(Clock::time_point now) const;
  void Shutdown(int exit_code, const std::string& why);
  bool Done(Clock::time_point now) const;
  void FlushOutput();
  void Diagnose(const std::string& message);
  void ReapRemaining();

  // agent_ranks.cc: the rank table.
  void StartRank(const launcher::AgentStart& start);
  void FailStart(uint32_t id, int exit_code, const std::string& message);
  void SignalRank(uint32_t id, int signo);
  void StopRank(Rank& rank);
  void ReapChildren();
  void PumpRank(uint32_t id, Rank& rank, int which);
  void ReportFinishedRanks(Clock::time_point now);
  void CloseRankPipes(Rank& rank);

  Io io_;
  std::map<std::string, std::string> login_env_;
  launcher::LauncherFrameReader reader_;
  launcher::AgentHello hello_;
  std::string setup_error_;  // why no rank can start (cwd, key memfd); "" = none
  int key_fd_ = -1;
  std::map<uint32_t, Rank> ranks_;
  launcher::RankLeftovers leftovers_;  // cleaned up once every rank has ended (Run)
  // This host's OOM kills when the agent started: a rank killed by the OOM killer since is
  // reported so (launcher/local/oom_kills.h).
  std::optional<uint64_t> oom_kills_at_start_ = launcher::OomKillCount();
  std::string out_;  // frames not yet written to out_fd
  bool out_broken_ = false;
  bool control_open_ = true;
  bool shutting_down_ = false;
  bool launcher_gone_ = false;  // no one will read what is left in out_
  int exit_code_ = 0;
  Clock::time_point last_heard_;
  Clock::time_point next_heartbeat_;
  Clock::time_point flush_deadline_;
};

}  // namespace hvd::agent

#endif  // HVD_AGENT_AGENT_H_
