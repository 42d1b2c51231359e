#ifndef HVD_LAUNCHER_MULTI_HOST_H_
#define HVD_LAUNCHER_MULTI_HOST_H_

#include <string>

#include "common/env_registry.h"
#include "common/status.h"
#include "launcher/job_plan.h"
#include "launcher/launch_spec.h"
#include "launcher/network_interface.h"
#include "launcher/ssh_options.h"

namespace hvd::launcher {

// What a job with remote hosts needs before its ranks start.
struct MultiHostSetup {
  SshOptions ssh;
  std::string agent_path;  // hvd-agent, expected at the same path on every host
  NetworkChoice network;   // where the rendezvous server listens, MASTER_ADDR
};

// The SSH options of a job: user/home/agent socket from `env`, -p, -i, --ssh-known-hosts,
// --ssh-accept-new-host-keys; each connection attempt is bounded by min(10 s, start
// timeout) and transient failures are retried within the start timeout.
SshOptions SshOptionsFor(const LaunchSpec& spec, const env::Environment& env);

// The hvd-agent next to this hvdrun; NotFound with the places looked at otherwise.
Result<std::string> LocalAgentPath();

// For a plan with remote hosts: finds hvd-agent, checks SSH to every remote host in
// parallel (Horovod's "Checking ssh on all remote hosts." lines with --verbose) and chooses
// the network. Errors name every failing host. Prints only --verbose steps.
Result<MultiHostSetup> PrepareMultiHost(const LaunchSpec& spec, const env::Environment& env,
                                        const JobPlan& plan);

// For a plan whose remote ranks start with srun (plan.srun): finds hvd-agent and chooses
// the network as PrepareMultiHost does; there is no SSH to check (ssh stays default).
Result<MultiHostSetup> PrepareSrunHosts(const LaunchSpec& spec, const JobPlan& plan);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_MULTI_HOST_H_
