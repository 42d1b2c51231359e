#ifndef HVD_LAUNCHER_PREFLIGHT_H_
#define HVD_LAUNCHER_PREFLIGHT_H_

#include <string>
#include <vector>

#include "common/env_registry.h"
#include "launcher/plan/job_plan.h"
#include "launcher/plan/launch_spec.h"

namespace hvd::launcher {

// One host's preflight result (hvdrun --check).
struct HostCheck {
  std::string host;
  bool remote = false;
  std::string ssh;        // "ok (23 ms)", "local", or the error
  std::string agent;      // the agent's --version line, or the error
  std::string interface;  // "hvd-br0 10.77.0.1"
  std::string port;       // "ok (45123)" or the error
  // A remote host: its connection to hvdrun's address at that port ("ok" or the error: what
  // every rank there needs for the rendezvous); "local" here.
  std::string reach;
  bool ok = false;
};

// Checks every host of `plan` in parallel: SSH reachability and latency (connect, handshake,
// host key, authentication), that `<agent_path> --version` runs there and prints this
// build's AgentVersionLine(), and locally the interface/address the job would use and that a
// port can be bound on it. Deadline: spec.start_timeout_s.
std::vector<HostCheck> RunPreflight(const LaunchSpec& spec, const env::Environment& env,
                                    const JobPlan& plan);

// The table hvdrun --check prints, one row per host, then "all N hosts OK" or the failing
// hosts by name.
std::string FormatPreflight(const std::vector<HostCheck>& checks);

// hvdrun --check: runs, prints the table on stdout, returns 0 when every host is OK and
// kExitLaunchFailed otherwise.
int RunCheckMode(const LaunchSpec& spec, const env::Environment& env, const JobPlan& plan);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_PREFLIGHT_H_
