#ifndef HVD_LAUNCHER_ELASTIC_ELASTIC_AGENTS_H_
#define HVD_LAUNCHER_ELASTIC_ELASTIC_AGENTS_H_

#include <atomic>
#include <functional>
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

// The hvd-agent sessions of an elastic job's remote hosts, opened as hosts appear and dropped
// as they go: Connect starts one connection (SSH handshake or srun step, agent start,
// Hello/Ready) on a thread of its own, so the job's event loop never waits for the network;
// event_fd() becomes readable when one finished, and TakeFinished() says which, with the error
// for a host that could not be reached.
//
// A host's session lives as long as the host is in the job. One that has ended (the host was
// lost: heartbeat timeout, connection dropped, agent killed) is dropped the next time the
// host is looked at (session(), Connect(), DropIfEnded()), and Release() closes the session
// of a host that left the job; either way the next Connect to that host opens a new session
// (a new SSH connection, a new srun step). Dropped sessions are closed and destroyed on a
// thread of their own (a lost host's link may take seconds to let go). The destructor closes
// every session at once (every agent stops its ranks), then joins every thread.
//
// Threading: Connect, TakeFinished, session, DropIfEnded and Release are called from the
// event loop's thread; the connection threads only touch the guarded members.
class ElasticAgents {
 public:
  ElasticAgents(AgentLinkFactory connect, AgentSession::Options options,
                std::chrono::steady_clock::duration connect_timeout);
  ~ElasticAgents();
  ElasticAgents(const ElasticAgents&) = delete;
  ElasticAgents& operator=(const ElasticAgents&) = delete;

  Status Init();  // the eventfd
  int event_fd() const { return event_fd_; }
  // Starts connecting to `host` unless it has a live session or an attempt is under way.
  void Connect(const std::string& host);
  // Hosts whose attempt finished since the last call: OK (session() has it) or why not.
  std::vector<std::pair<std::string, Status>> TakeFinished();
  // The live session of `host`, or nullptr (an ended one is dropped).
  AgentSession* session(const std::string& host);
  // Drops `host`'s session if it has ended.
  void DropIfEnded(const std::string& host);
  // Closes `host`'s session without waiting: its agent stops what still runs there and exits.
  // A connection under way for it is closed as soon as it is made.
  void Release(const std::string& host);

 private:
  using SessionMap = std::map<std::string, std::unique_ptr<AgentSession>>;
  void StartThread(std::function<void()> body);
  void RetireLocked(SessionMap::iterator it);
  void DropIfEndedLocked(const std::string& host);
  void JoinFinishedLocked();
  void ConnectThread(const std::string& host);

  AgentLinkFactory connect_;
  AgentSession::Options options_;
  std::chrono::steady_clock::duration timeout_;
  int event_fd_ = -1;
  std::mutex mu_;
  SessionMap sessions_;
  std::set<std::string> connecting_;
  std::set<std::string> released_while_connecting_;
  std::vector<std::pair<std::string, Status>> finished_;
  struct Thread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Thread> threads_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_ELASTIC_ELASTIC_AGENTS_H_
