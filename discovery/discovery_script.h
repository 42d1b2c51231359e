#ifndef HVD_DISCOVERY_DISCOVERY_SCRIPT_H_
#define HVD_DISCOVERY_DISCOVERY_SCRIPT_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "discovery/host_slots.h"

namespace hvd::discovery {

struct DiscoveryScriptOptions {
  // Run as `/bin/sh -c <command>` (horovodrun runs it through a shell too), so it may carry
  // arguments. Its stdin is /dev/null; it leads its own process group.
  std::string command;
  std::optional<int> default_slots;  // --slots-per-host, for lines without ":N"
  std::chrono::milliseconds timeout{10000};
  // More stdout than this is bad output: the script is killed and the run fails.
  size_t max_output_bytes = size_t{1} << 20;
  // When set and it becomes true, the run stops early (the script is killed): kAborted.
  const std::atomic<bool>* cancel = nullptr;
};

// Runs the elastic job's --host-discovery-script once and parses its stdout
// (ParseDiscoveryOutput: "host" / "host:slots" lines). Errors name the script and say why:
//   "discovery script './hosts.sh' exited with code 3; its stderr: ..."
//   "discovery script './hosts.sh' was killed by SIGSEGV (signal 11); its stderr: ..."
//   "discovery script './hosts.sh' did not finish within 10 s and was killed"
//   "discovery script './hosts.sh' printed more than 1048576 bytes and was killed"
//   "discovery script './hosts.sh': discovery script output line 2: ...; line: 'h:x'"
// Nothing the script started survives the call: its whole process group is killed when it
// times out or floods its output, and it gets SIGKILL if the calling thread dies (so call
// it from a thread that lives for the job). Blocks up to about `timeout`.
Result<std::vector<HostSlots>> RunDiscoveryScript(const DiscoveryScriptOptions& options);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_DISCOVERY_SCRIPT_H_
