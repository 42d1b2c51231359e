#include "launcher/multi_host.h"

#include <algorithm>
#include <chrono>

#include "launcher/console.h"
#include "launcher/remote_agent_path.h"
#include "launcher/runtime_library.h"
#include "launcher/ssh_check.h"

namespace hvd::launcher {
namespace {

constexpr double kMaxConnectTimeoutS = 10;  // per attempt, as Horovod's ssh ConnectTimeout
constexpr int kConnectAttempts = 3;

std::string Join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : separator) + word;
  return out;
}

}  // namespace

SshOptions SshOptionsFor(const LaunchSpec& spec, const env::Environment& env) {
  SshOptions options = SshOptions::FromEnvironment(env);
  if (spec.ssh_port) options.port = *spec.ssh_port;
  options.identity_file = spec.ssh_identity_file;
  options.known_hosts_file = spec.ssh_known_hosts_file;
  options.host_key_policy =
      spec.ssh_accept_new_host_keys ? HostKeyPolicy::kAcceptNew : HostKeyPolicy::kStrict;
  options.connect_timeout_s = std::max(0.1, std::min(kMaxConnectTimeoutS, spec.start_timeout_s));
  options.connect_attempts = kConnectAttempts;
  return options;
}

Result<std::string> LocalAgentPath() {
  std::string self = SelfExecutablePath();
  if (std::optional<std::string> agent = FindAgentBinary(self)) return *agent;
  return Status::NotFound("hvd-agent is not next to hvdrun (" + self +
                          "): remote hosts need it; install hvd (both binaries) on every host");
}

Result<MultiHostSetup> PrepareMultiHost(const LaunchSpec& spec, const env::Environment& env,
                                        const JobPlan& plan) {
  MultiHostSetup setup;
  setup.ssh = SshOptionsFor(spec, env);
  HVD_ASSIGN_OR_RETURN(setup.agent_path, LocalAgentPath());
  PrintStep(spec.verbose, "Filtering local host names.");
  for (const std::string& host : plan.remote_hosts) {
    PrintStep(spec.verbose, "Remote host found: " + host);
  }
  PrintStep(spec.verbose, "Checking ssh on all remote hosts.");
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(spec.start_timeout_s * 1000));
  std::vector<std::string> failures;
  for (const SshCheckResult& result : CheckSshHosts(plan.remote_hosts, setup.ssh, deadline)) {
    if (result.status.ok()) continue;
    const std::string& message = result.status.message();
    failures.push_back(
        message.find(result.host) != std::string::npos ? message : result.host + ": " + message);
  }
  if (!failures.empty()) {
    return Status::IoError("SSH check failed for " + std::to_string(failures.size()) + " of " +
                           std::to_string(plan.remote_hosts.size()) + " remote hosts:\n  " +
                           Join(failures, "\n  "));
  }
  PrintStep(spec.verbose, "SSH was successful into all the remote hosts.");
  HVD_ASSIGN_OR_RETURN(setup.network, ChooseNetwork(plan.remote_hosts, spec.network_interfaces));
  PrintStep(spec.verbose, "Common interface found: " + setup.network.interface.name + " (" +
                              setup.network.interface.address + ", " + setup.network.reason + ")");
  return setup;
}

Result<MultiHostSetup> PrepareSrunHosts(const LaunchSpec& spec, const JobPlan& plan) {
  MultiHostSetup setup;
  HVD_ASSIGN_OR_RETURN(setup.agent_path, LocalAgentPath());
  PrintStep(spec.verbose, "Inside Slurm job " + plan.srun->job_id + ": remote ranks start with " +
                              plan.srun->srun_path + " on " + Join(plan.remote_hosts, ", "));
  HVD_ASSIGN_OR_RETURN(setup.network, ChooseNetwork(plan.remote_hosts, spec.network_interfaces));
  PrintStep(spec.verbose, "Common interface found: " + setup.network.interface.name + " (" +
                              setup.network.interface.address + ", " + setup.network.reason + ")");
  return setup;
}

}  // namespace hvd::launcher
