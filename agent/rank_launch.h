#ifndef HVD_AGENT_RANK_LAUNCH_H_
#define HVD_AGENT_RANK_LAUNCH_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <variant>

#include "common/status.h"
#include "launcher/agents/agent_protocol.h"
#include "launcher/local/exec_search.h"

namespace hvd::agent {

// Exit codes of hvd-agent itself when the rank never ran, shell-style.
using launcher::kExitNotExecutable;          // it exists but cannot be executed (126)
using launcher::kExitNotFound;               // the program does not exist (127)
inline constexpr int kExitAgentError = 125;  // bad request, bad cwd, fork/pipe failure

// A started rank. It leads a new session and process group (pgid == pid) and gets SIGKILL
// if the agent dies (PR_SET_PDEATHSIG). The caller owns both non-blocking, close-on-exec
// pipe read ends and must reap `pid`.
struct LaunchedRank {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// A rank that could not be started: the agent prints `message` and exits `exit_code`.
struct LaunchFailure {
  int exit_code = kExitAgentError;
  std::string message;
};

// The rank's environment: `agent_env` (the remote login environment) overlaid with the
// request's, without HVD_SECRET_FD; with a job key (key_fd >= 0), HVD_SECRET_FD names it. When the
// rendezvous address is not loopback and no HVD_GLOO_IFACE was sent, HVD_GLOO_IFACE (and
// HOROVOD_GLOO_IFACE, and NCCL_SOCKET_IFNAME and torch's GLOO_SOCKET_IFNAME unless sent) name
// this host's interface toward that address. Under HVD_WORKER_THREADS=share, OMP_NUM_THREADS
// (unless set) is this host's physical cores (of the agent's affinity) / HVD_LOCAL_SIZE
// (launcher/worker/worker_threads.h).
std::map<std::string, std::string> MergeEnvironment(
    const std::map<std::string, std::string>& agent_env,
    const std::map<std::string, std::string>& request_env, int key_fd);

// Forks/execs the rank in the agent's working directory with stdin on /dev/null, inheriting
// `key_fd` (the job key's memfd, -1 = none). The exec outcome is known before this returns.
// Called from the agent's only thread; async-signal-safe calls only in the child.
using LaunchOutcome = std::variant<LaunchedRank, LaunchFailure>;
LaunchOutcome LaunchRank(const launcher::AgentStart& request,
                         const std::map<std::string, std::string>& agent_env, int key_fd);

}  // namespace hvd::agent

#endif  // HVD_AGENT_RANK_LAUNCH_H_
