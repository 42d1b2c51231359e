#ifndef HVD_LAUNCHER_AGENTS_AGENT_FLEET_H_
#define HVD_LAUNCHER_AGENTS_AGENT_FLEET_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/agents/agent_session.h"

namespace hvd::launcher {

// Opens the link to one host's agent (ConnectSshAgent, a srun step, a local process in tests).
using AgentLinkFactory = std::function<Result<std::unique_ptr<AgentLink>>(
    const std::string& host, std::chrono::steady_clock::time_point deadline)>;

// One agent session per remote host of a job.
//
// Open connects every host at once, bounded: at most `max_parallel` connections are being set
// up at a time (each is a thread doing TCP connect, SSH handshake and authentication, exec of
// the agent, Hello/Ready), so start-up takes about ceil(hosts / max_parallel) connection times
// and hvdrun's threads and descriptors stay bounded. It is all or nothing: when any host
// fails, every session already open is closed (no rank was started anywhere) and the error
// has one line per failing host, "<host>: <reason>: <message>", the reason being one of
// "host key", "auth", "refused", "timeout", "unreachable", "name", "agent" or "error".
//
// The destructor closes every session first, so all agents stop their ranks concurrently,
// then waits for each (one grace period in all, not one per host).
//
// Threading: session() and Add() are thread-safe; sessions stay until the fleet is destroyed.
class AgentFleet {
 public:
  static constexpr int kDefaultMaxParallel = 32;

  static Result<std::unique_ptr<AgentFleet>> Open(const std::vector<std::string>& hosts,
                                                  const AgentLinkFactory& connect,
                                                  const AgentSession::Options& options,
                                                  std::chrono::steady_clock::time_point deadline,
                                                  int max_parallel = kDefaultMaxParallel);
  AgentFleet() = default;
  ~AgentFleet();
  AgentFleet(const AgentFleet&) = delete;
  AgentFleet& operator=(const AgentFleet&) = delete;

  // The session of `host`; nullptr for a host that is not part of the fleet.
  AgentSession* session(const std::string& host) const;
  // Adds a session opened separately (a host joining later); replaces none.
  Status Add(std::unique_ptr<AgentSession> session);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<AgentSession>> sessions_;
};

// The reason word of a failed connection (see AgentFleet), from the Status an SshSession,
// the link factory or AgentSession::Open returned.
std::string ConnectFailureReason(const Status& status);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_AGENTS_AGENT_FLEET_H_
