#include "launcher/multi_host.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "launcher/agents/remote_agent_path.h"
#include "launcher/agents/ssh_agent_link.h"
#include "launcher/dry_run.h"
#include "launcher/output/console.h"
#include "launcher/worker/runtime_library.h"

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kMaxConnectTimeoutS = 10;  // per attempt, as Horovod's ssh ConnectTimeout
constexpr int kConnectAttempts = 3;
constexpr double kMaxHeartbeatIntervalS = 1;
// A srun that has not ended this long after its agent's stdin closed is cancelled.
constexpr std::chrono::seconds kSrunStopAfter{10};

Clock::time_point StartDeadline(const LaunchSpec& spec) {
  return Clock::now() +
         std::chrono::milliseconds(static_cast<int64_t>(spec.start_timeout_s * 1000));
}

std::string Elapsed(Clock::time_point since) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s",
                std::chrono::duration<double>(Clock::now() - since).count());
  return text;
}

Status ChooseJobNetwork(const LaunchSpec& spec, const JobPlan& plan, MultiHostSetup& setup) {
  HVD_ASSIGN_OR_RETURN(setup.network, ChooseNetwork(plan.remote_hosts, spec.network_interfaces));
  PrintStep(spec.verbose, "Common interface found: " + setup.network.interface.name + " (" +
                              setup.network.interface.address + ", " + setup.network.reason + ")");
  return Status::OK();
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

AgentSession::Options AgentSessionOptions(const LaunchSpec& spec, const control::JobKey& key) {
  AgentSession::Options options;
  options.hello.job_key = key;
  options.hello.grace_period_s = spec.grace_period_s;
  options.hello.heartbeat_timeout_s = spec.heartbeat_timeout_s;
  options.hello.heartbeat_interval_s =
      spec.heartbeat_timeout_s > 0 ? std::min(kMaxHeartbeatIntervalS, spec.heartbeat_timeout_s / 5)
                                   : 0;
  char cwd[4096];
  if (::getcwd(cwd, sizeof(cwd)) != nullptr) options.hello.cwd = cwd;
  return options;
}

Result<std::string> LocalAgentPath() {
  std::string self = SelfExecutablePath();
  if (std::optional<std::string> agent = FindAgentBinary(self)) return *agent;
  return Status::NotFound("hvd-agent is not next to hvdrun (" + self +
                          "): remote hosts need it; install hvd (both binaries) on every host");
}

Result<MultiHostSetup> PrepareMultiHost(const LaunchSpec& spec, const env::Environment& env,
                                        const JobPlan& plan, const control::JobKey& key) {
  MultiHostSetup setup;
  setup.ssh = SshOptionsFor(spec, env);
  HVD_ASSIGN_OR_RETURN(setup.agent_path, LocalAgentPath());
  PrintStep(spec.verbose, "Filtering local host names.");
  for (const std::string& host : plan.remote_hosts) {
    PrintStep(spec.verbose, "Remote host found: " + host);
  }
  PrintStep(spec.verbose, "Checking ssh on all remote hosts.");
  const Clock::time_point begin = Clock::now();
  AgentLinkFactory connect = [ssh = setup.ssh, agent = setup.agent_path](
                                 const std::string& host, Clock::time_point deadline) {
    return ConnectSshAgent(SshTarget{host, ssh}, agent, deadline);
  };
  HVD_ASSIGN_OR_RETURN(setup.agents,
                       AgentFleet::Open(plan.remote_hosts, connect, AgentSessionOptions(spec, key),
                                        StartDeadline(spec)));
  PrintStep(spec.verbose, "SSH was successful into all the remote hosts.");
  PrintStep(spec.verbose, "hvd-agent running on " + std::to_string(plan.remote_hosts.size()) +
                              " remote hosts after " + Elapsed(begin));
  HVD_RETURN_IF_ERROR(ChooseJobNetwork(spec, plan, setup));
  return setup;
}

AgentLinkFactory SrunAgentConnector(const SrunLaunch& launch, const std::string& agent_path,
                                    const env::Environment& env, bool verbose) {
  return [launch, agent_path, srun_env = env.all(), verbose](const std::string& host,
                                                             Clock::time_point) {
    std::vector<std::string> argv = SrunAgentArgv(launch, host, agent_path);
    PrintStep(verbose, "hvd-agent on " + host + ": " + ShellJoin(argv));
    return StartProcessAgent(argv, srun_env, "srun step on " + host, kSrunStopAfter);
  };
}

Result<MultiHostSetup> PrepareSrunHosts(const LaunchSpec& spec, const env::Environment& env,
                                        const JobPlan& plan, const control::JobKey& key) {
  MultiHostSetup setup;
  HVD_ASSIGN_OR_RETURN(setup.agent_path, LocalAgentPath());
  PrintStep(spec.verbose, "Inside Slurm job " + plan.srun->job_id + ": hvd-agent starts with " +
                              plan.srun->srun_path + " on " +
                              fmt::to_string(fmt::join(plan.remote_hosts, ", ")));
  const Clock::time_point begin = Clock::now();
  AgentLinkFactory connect = SrunAgentConnector(*plan.srun, setup.agent_path, env, spec.verbose);
  HVD_ASSIGN_OR_RETURN(setup.agents,
                       AgentFleet::Open(plan.remote_hosts, connect, AgentSessionOptions(spec, key),
                                        StartDeadline(spec)));
  PrintStep(spec.verbose, "hvd-agent running on " + std::to_string(plan.remote_hosts.size()) +
                              " nodes after " + Elapsed(begin));
  HVD_RETURN_IF_ERROR(ChooseJobNetwork(spec, plan, setup));
  return setup;
}

}  // namespace hvd::launcher
