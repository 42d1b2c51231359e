#include "launcher/schedulers/srun_command.h"

#include <algorithm>

#include "common/printable.h"
#include "discovery/slurm.h"
#include "launcher/local/exec_search.h"

namespace hvd::launcher {
namespace {

std::optional<SrunLaunch> NotUsed(std::string* why_not, std::string reason) {
  if (why_not != nullptr) *why_not = std::move(reason);
  return std::nullopt;
}

}  // namespace

std::optional<SrunLaunch> DetectSrunLaunch(const std::vector<std::string>& remote_hosts,
                                           const env::Environment& env, std::string* why_not) {
  std::optional<std::string> job_id = env.Raw("SLURM_JOB_ID");
  if (!job_id) job_id = env.Raw("SLURM_JOBID");
  if (!job_id || job_id->empty()) return NotUsed(why_not, "");
  // Slurm's job ids are numbers (an array task or a het job component has its own number too);
  // anything else is not Slurm's, and would go into srun's --jobid= as it is.
  if (job_id->size() > 20 || job_id->find_first_not_of("0123456789") != std::string::npos) {
    return NotUsed(
        why_not, "SLURM_JOB_ID '" + Printable(*job_id, 64) + "' is not a Slurm job id; using ssh");
  }
  std::optional<std::string> nodelist = env.Raw("SLURM_JOB_NODELIST");
  if (!nodelist) nodelist = env.Raw("SLURM_NODELIST");
  if (!nodelist) {
    return NotUsed(why_not, "Slurm job " + *job_id + " has no SLURM_JOB_NODELIST; using ssh");
  }
  Result<std::vector<std::string>> nodes = discovery::ExpandSlurmHostlist(*nodelist);
  if (!nodes.ok()) return NotUsed(why_not, nodes.status().message() + "; using ssh");
  for (const std::string& host : remote_hosts) {
    if (std::find(nodes->begin(), nodes->end(), host) == nodes->end()) {
      return NotUsed(why_not, "host " + Printable(host, 256) + " is not a node of Slurm job " +
                                  *job_id + " (" + Printable(*nodelist, 256) + "); using ssh");
    }
  }
  std::optional<std::string> srun = FindExecutable("srun", env.all());
  if (!srun) {
    return NotUsed(why_not, "inside Slurm job " + *job_id + " but srun is not on PATH; using ssh");
  }
  return SrunLaunch{*srun, *job_id};
}

std::vector<std::string> SrunAgentArgv(const SrunLaunch& launch, const std::string& host,
                                       const std::string& agent_path) {
  return {launch.srun_path,
          "--jobid=" + launch.job_id,
          "--nodes=1",
          "--ntasks=1",
          "--ntasks-per-node=1",
          "--nodelist=" + host,
          "--overlap",
          "--job-name=hvd-agent",
          "--mpi=none",
          "--unbuffered",
          "--quiet",
          agent_path};
}

}  // namespace hvd::launcher
