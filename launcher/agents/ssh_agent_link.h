#ifndef HVD_LAUNCHER_AGENTS_SSH_AGENT_LINK_H_
#define HVD_LAUNCHER_AGENTS_SSH_AGENT_LINK_H_

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "launcher/agents/agent_link.h"
#include "launcher/ssh/ssh_options.h"

namespace hvd::launcher {

// Connects to `target` (SshSession::Connect: host key, authentication, every wait bounded by
// `deadline`) and runs `exec '<agent_path>'` as the remote command: only the agent's path is
// on any command line. Returns an AgentLink whose descriptors are one end of a local
// socketpair: a bridge thread owns the SSH session from then on and copies the socketpair to
// the channel's stdin, the channel's stdout back to it, and the channel's stderr to the diag
// pipe, with backpressure both ways (SSH flow control does the rest). It keeps the connection
// alive (SSH keepalives, TCP_USER_TIMEOUT; launcher/ssh/ssh_options.h) and records why the
// channel ended: "hvd-agent exited with code 127", "connection to root@h2:22 lost while
// reading output: ...". Errors name user@host:port.
Result<std::unique_ptr<AgentLink>> ConnectSshAgent(const SshTarget& target,
                                                   const std::string& agent_path,
                                                   std::chrono::steady_clock::time_point deadline);

// The remote command hvdrun runs on every SSH host (also what --dry-run shows).
std::string SshAgentCommand(const std::string& agent_path);

// POSIX shell single-quoting: 'it'\''s'.
std::string ShellQuote(const std::string& word);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_AGENTS_SSH_AGENT_LINK_H_
