#ifndef HVD_LAUNCHER_AGENTS_AGENT_SESSION_H_
#define HVD_LAUNCHER_AGENTS_AGENT_SESSION_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/agents/agent_link.h"
#include "launcher/agents/agent_protocol.h"
#include "launcher/local/rank_spawner.h"

namespace hvd::launcher {

// hvdrun's side of one hvd-agent: the one connection to one remote host, over which every
// rank on that host is started, signalled, stopped, and reported (protocol:
// launcher/agents/agent_protocol.h; transport: launcher/agents/agent_link.h).
//
// Open sends Hello and waits for the agent's Ready. From then on StartRank may be called at
// any time, from any thread, for a rank id not currently running: it never waits for the
// network, and returns the rank's stdout/stderr pipes and a RankHandle, exactly what job
// control gets for a local rank (SpawnedRank with pid -1). Output frames are written to the
// rank's pipes; its Exit frame closes them and makes the handle's exit event readable, after
// all of its output. Signal/Stop are frames to the agent; per-rank exits are reported
// individually, so ranks can come and go on a live session (elastic jobs).
//
// Liveness: with a heartbeat timeout, a heartbeat is sent every interval, and a session that
// reads nothing from the agent for the timeout (while it is reading: time spent holding back
// because a rank's pipe is full does not count) declares the host lost: every rank still
// running ends with exit code 255 and RankHandle::TransportError "host <h> lost: no sign of
// life from its hvd-agent for <T> s". An agent stream that ends before a rank's Exit (the
// connection dropped, the agent was killed) does the same with the link's reason.
//
// Threading: one I/O thread per session (blocking no signals of the caller: it runs with all
// signals blocked); every public method is thread-safe. The destructor closes the agent's
// stdin (the agent stops every rank, SIGTERM then SIGKILL after the grace period), waits up
// to grace + kCloseSlack for the agent to report and end, then drops the link. Handles may
// outlive the session; they then report what they last knew.
class AgentSession {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kCloseSlack{2};
  // Output held for a rank whose pipe is full before the session stops reading the agent.
  static constexpr size_t kPipeHighWater = size_t{256} << 10;

  struct Options {
    std::string host;  // as named on the command line; in every message
    AgentHello hello;  // job key, grace period, heartbeat, cwd
  };

  // Sends Hello over `link` and waits for Ready until `deadline`. Errors name the host: the
  // agent ended first (with its stderr, e.g. "sh: 1: exec: /opt/hvd-agent: not found", and
  // the link's reason), it spoke another protocol version, or it did not answer in time.
  static Result<std::unique_ptr<AgentSession>> Open(std::unique_ptr<AgentLink> link,
                                                    Options options, Clock::time_point deadline);
  ~AgentSession();
  AgentSession(const AgentSession&) = delete;
  AgentSession& operator=(const AgentSession&) = delete;

  // Starts a rank: argv[0] is looked up in PATH on the host; `env` is merged over the
  // agent's login environment. kPreconditionFailed once the session ended or was closed,
  // kInvalidArgument when `id` is running. The program's own failure (not found: exit 127)
  // arrives later, as the rank's exit status with its message on the rank's stderr.
  Result<SpawnedRank> StartRank(uint32_t id, const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env);
  // Signals a running rank's process group; ignored once it has ended.
  void Signal(uint32_t id, int signo);
  // SIGTERM to a running rank's group, SIGKILL after the grace period; ignored once ended.
  void Stop(uint32_t id);
  // End of the agent's stdin: it stops every rank and exits; exits are still reported.
  void Close();

  const std::string& host() const;
  const AgentReady& ready() const;
  // OK while the agent is connected; afterwards why the session ended (OK after a clean
  // Close()).
  Status status() const;
  // True once the session has ended or Close() was called: StartRank refuses from then on, so
  // a caller that wants the host again needs a new session.
  bool ended() const;
  // Readable once the session has ended (the agent exited, the connection dropped, or the host
  // was lost: status() says which), with or without ranks running; for a caller's poll loop
  // (an elastic driver watching its hosts).
  int end_event_fd() const;

  struct Core;  // shared with the I/O thread and the handles (agent_session_io.cc)

 private:
  explicit AgentSession(std::shared_ptr<Core> core) : core_(std::move(core)) {}
  std::shared_ptr<Core> core_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_AGENTS_AGENT_SESSION_H_
