#ifndef HVD_LAUNCHER_SCHEDULERS_SRUN_COMMAND_H_
#define HVD_LAUNCHER_SCHEDULERS_SRUN_COMMAND_H_

#include <optional>
#include <string>
#include <vector>

#include "common/env_registry.h"

// Inside a Slurm allocation, hvdrun starts one hvd-agent on each other node as a one-task job
// step, `srun ... hvd-agent`, and speaks the hvd-agent protocol (launcher/agents/agent_protocol.h)
// over srun's stdin and stdout exactly as it does over an SSH channel. Pure functions;
// thread-safe.
namespace hvd::launcher {

// How remote ranks of a job start when it runs inside a Slurm allocation.
struct SrunLaunch {
  std::string srun_path;  // absolute
  std::string job_id;     // SLURM_JOB_ID (or SLURM_JOBID)
};

// The srun launch for a job whose ranks on `remote_hosts` would otherwise start over SSH:
// set when SLURM_JOB_ID (or SLURM_JOBID) is in `env`, `srun` is found on env's PATH, and
// every remote host is a node of the allocation (SLURM_JOB_NODELIST / SLURM_NODELIST).
// Otherwise nullopt, with `why_not` (when given) saying which condition failed, for
// --verbose ("" when not inside an allocation at all).
std::optional<SrunLaunch> DetectSrunLaunch(const std::vector<std::string>& remote_hosts,
                                           const env::Environment& env,
                                           std::string* why_not = nullptr);

// The command that starts the agent of `host`: a one-task step on that node only, allowed
// to share the allocation's CPUs, memory and GPUs with the job's other steps (--overlap),
// without CPU binding or MPI plugin set-up, with output passed through unbuffered (the
// agent's stdout carries binary frames) and srun's own informational lines suppressed. The
// step is named hvd-agent (squeue -s). The agent gets the ranks' argv, environment and the
// job key on stdin; the agent forks that node's ranks itself.
std::vector<std::string> SrunAgentArgv(const SrunLaunch& launch, const std::string& host,
                                       const std::string& agent_path);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_SCHEDULERS_SRUN_COMMAND_H_
