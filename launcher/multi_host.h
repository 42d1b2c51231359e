#ifndef HVD_LAUNCHER_MULTI_HOST_H_
#define HVD_LAUNCHER_MULTI_HOST_H_

#include <memory>
#include <string>

#include "common/env_registry.h"
#include "common/job_key.h"
#include "common/status.h"
#include "launcher/agents/agent_fleet.h"
#include "launcher/plan/job_plan.h"
#include "launcher/plan/launch_spec.h"
#include "launcher/rendezvous/network_interface.h"
#include "launcher/schedulers/srun_command.h"
#include "launcher/ssh/ssh_options.h"

namespace hvd::launcher {

// What a job with remote hosts needs before its ranks start.
struct MultiHostSetup {
  SshOptions ssh;
  std::string agent_path;              // hvd-agent, expected at the same path on every host
  NetworkChoice network;               // where the rendezvous server listens, MASTER_ADDR
  std::unique_ptr<AgentFleet> agents;  // one running hvd-agent per remote host
};

// The SSH options of a job: user/home/agent socket from `env`, -p, -i, --ssh-known-hosts,
// --ssh-accept-new-host-keys; each connection attempt is bounded by min(10 s, start
// timeout) and transient failures are retried within the start timeout.
SshOptions SshOptionsFor(const LaunchSpec& spec, const env::Environment& env);

// What every agent session of the job is told: the job key, the grace period, the
// heartbeat (timeout spec.heartbeat_timeout_s, interval a fifth of it, at most 1 s) and
// hvdrun's working directory.
AgentSession::Options AgentSessionOptions(const LaunchSpec& spec, const control::JobKey& key);

// The hvd-agent next to this hvdrun; NotFound with the places looked at otherwise.
Result<std::string> LocalAgentPath();

// For a plan with remote hosts reached over SSH: finds hvd-agent, starts one agent per remote
// host (AgentFleet: bounded parallel connections, all or nothing; Horovod's "Checking ssh on
// all remote hosts." lines with --verbose) and chooses the network. Errors name every failing
// host with its reason. Prints only --verbose steps.
Result<MultiHostSetup> PrepareMultiHost(const LaunchSpec& spec, const env::Environment& env,
                                        const JobPlan& plan, const control::JobKey& key);

// Connects to `host`'s hvd-agent through a one-task srun step on that node (SrunAgentArgv),
// the step's stdin/stdout carrying the agent protocol; --verbose prints each srun command.
AgentLinkFactory SrunAgentConnector(const SrunLaunch& launch, const std::string& agent_path,
                                    const env::Environment& env, bool verbose);

// For a plan whose remote hosts are nodes of the Slurm allocation (plan.srun): the same, with
// one srun step per node running its agent (SrunAgentArgv) instead of SSH.
Result<MultiHostSetup> PrepareSrunHosts(const LaunchSpec& spec, const env::Environment& env,
                                        const JobPlan& plan, const control::JobKey& key);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_MULTI_HOST_H_
