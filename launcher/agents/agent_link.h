#ifndef HVD_LAUNCHER_AGENTS_AGENT_LINK_H_
#define HVD_LAUNCHER_AGENTS_AGENT_LINK_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

// The byte streams between hvdrun and one running hvd-agent, as local descriptors: frames to
// the agent's stdin, frames from its stdout, and its stderr (diagnostic text). An SSH session
// (launcher/agents/ssh_agent_link.h) and a local child process (srun, or hvd-agent itself in tests;
// StartProcessAgent below) both look like this, so AgentSession speaks the protocol over
// either without knowing which. All descriptors are non-blocking and close-on-exec and stay
// owned by the link. Used by one thread at a time (the session's I/O thread).
class AgentLink {
 public:
  virtual ~AgentLink() = default;
  virtual int to_agent_fd() const = 0;
  virtual int from_agent_fd() const = 0;
  virtual int diag_fd() const = 0;  // -1 = none
  // End of the agent's stdin (it then terminates every rank and exits). Idempotent.
  virtual void CloseToAgent() = 0;
  // Why the agent's stdout ended, once it has: "hvd-agent exited with code 127", "connection
  // to root@h2:22 lost while reading output: ...". May wait briefly for the process to end.
  virtual std::string EndReason() = 0;
  // "root@hvd-h2:22", "srun step on hvd-h2": for messages.
  virtual std::string Describe() const = 0;
  // The agent is unreachable (its host was declared lost): the destructor should not wait for
  // it to end by itself.
  virtual void GiveUp() {}
};

// A link to a local child process whose stdin, stdout and stderr are pipes: `argv` run with
// `env` as its complete environment, leading its own process group, with no parent-death
// signal (it ends when its stdin closes, even after hvdrun is SIGKILLed: the kernel closes the
// pipe). The destructor closes its stdin and, should the process still run `stop_after`
// later (at once after GiveUp), sends it SIGTERM, then SIGKILL after 5 s, and reaps it. For srun
// (one step running hvd-agent on a node) and for tests (hvd-agent started directly).
Result<std::unique_ptr<AgentLink>> StartProcessAgent(const std::vector<std::string>& argv,
                                                     const std::map<std::string, std::string>& env,
                                                     std::string description,
                                                     std::chrono::milliseconds stop_after);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_AGENTS_AGENT_LINK_H_
