#ifndef HVD_LAUNCHER_SSH_SSH_CHECK_H_
#define HVD_LAUNCHER_SSH_SSH_CHECK_H_

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/ssh/ssh_options.h"

namespace hvd::launcher {

// The result of connecting to one host.
struct SshCheckResult {
  std::string host;
  Status status;          // OK, or why (the SshSession::Connect error, naming the host)
  double latency_ms = 0;  // connect + handshake + authentication
};

// Connects to every host of `hosts` in parallel, one thread each (TCP, handshake, host key,
// authentication; no command is run), and disconnects. Every attempt ends by `deadline`.
// Results are in the order of `hosts`. Thread-safe.
std::vector<SshCheckResult> CheckSshHosts(const std::vector<std::string>& hosts,
                                          const SshOptions& options,
                                          std::chrono::steady_clock::time_point deadline);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_SSH_SSH_CHECK_H_
