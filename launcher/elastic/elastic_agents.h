#ifndef HVD_LAUNCHER_ELASTIC_ELASTIC_AGENTS_H_
#define HVD_LAUNCHER_ELASTIC_ELASTIC_AGENTS_H_

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"
#include "launcher/agents/agent_fleet.h"
#include "launcher/agents/agent_session.h"

namespace hvd::launcher {

// The hvd-agent sessions of an elastic job's remote hosts, opened as hosts appear: Connect
// starts one connection (SSH handshake, agent start, Hello/Ready) on a thread of its own, so
// the job's event loop never waits for the network; event_fd() becomes readable when one
// finished, and TakeFinished() says which, with the error for a host that could not be
// reached. Sessions stay open until the object is destroyed, which closes them all at once
// (every agent stops its ranks) and then joins the connection threads.
//
// Threading: Connect, TakeFinished and session are called from the event loop's thread; the
// connection threads only touch the guarded members.
class ElasticAgents {
 public:
  ElasticAgents(AgentLinkFactory connect, AgentSession::Options options,
                std::chrono::steady_clock::duration connect_timeout);
  ~ElasticAgents();
  ElasticAgents(const ElasticAgents&) = delete;
  ElasticAgents& operator=(const ElasticAgents&) = delete;

  Status Init();  // the eventfd
  int event_fd() const { return event_fd_; }
  // Starts connecting to `host` unless a session or a connection attempt exists.
  void Connect(const std::string& host);
  // Hosts whose attempt finished since the last call: OK (session() has it) or why not.
  std::vector<std::pair<std::string, Status>> TakeFinished();
  // The open session of `host`, or nullptr.
  AgentSession* session(const std::string& host);

 private:
  AgentLinkFactory connect_;
  AgentSession::Options options_;
  std::chrono::steady_clock::duration timeout_;
  int event_fd_ = -1;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<AgentSession>> sessions_;
  std::set<std::string> connecting_;
  std::vector<std::pair<std::string, Status>> finished_;
  std::vector<std::thread> threads_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_ELASTIC_ELASTIC_AGENTS_H_
