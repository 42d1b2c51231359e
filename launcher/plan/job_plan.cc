#include "launcher/plan/job_plan.h"

#include <algorithm>
#include <set>
#include <string>

#include "launcher/local/local_host.h"

namespace hvd::launcher {
namespace {

Status CheckBuiltFeatures(const LaunchSpec& spec) {
  if (spec.command.empty() && !spec.check) {
    return Status::InvalidArgument("no command given: usage is hvdrun [options] <program> [args]");
  }
  if (spec.controller == Controller::kJsrun) {
    return Status::Unimplemented("launching through jsrun (--jsrun) is not built yet; use --gloo");
  }
  return Status::OK();
}

void ClassifyHosts(JobPlan& plan) {
  std::set<std::string> checked;
  for (const discovery::RankInfo& rank : plan.ranks) {
    if (!checked.insert(rank.host).second) continue;
    if (!IsLocalHost(rank.host)) plan.remote_hosts.push_back(rank.host);
  }
}

}  // namespace

bool JobPlan::IsRemote(const std::string& host) const {
  return std::find(remote_hosts.begin(), remote_hosts.end(), host) != remote_hosts.end();
}

Result<JobPlan> PlanJob(const LaunchSpec& spec, const env::Environment& env) {
  HVD_RETURN_IF_ERROR(CheckBuiltFeatures(spec));
  JobPlan plan;
  HVD_ASSIGN_OR_RETURN(plan.allocation, discovery::ResolveAllocation(
                                            spec.hosts, spec.hostfile, spec.num_proc, env,
                                            spec.check ? std::optional<int>(1) : std::nullopt));
  int num_proc = 0;
  if (spec.num_proc) {
    num_proc = *spec.num_proc;
  } else if (plan.allocation.num_proc) {
    num_proc = *plan.allocation.num_proc;
  } else {
    for (const discovery::HostSlots& host : plan.allocation.hosts) num_proc += host.slots;
  }
  // A scheduler's allocation of this machine alone that counts fewer tasks than -np asks for (a
  // one-task batch job with four GPUs, `sbatch --ntasks=1 --gres=gpu:4` then `hvdrun -np 4`):
  // -np ranks run here, as horovodrun runs them (it reads no allocation): until 2026-12-01 this
  // failed with "requested 4 processes but the hosts provide only 1 slots". An allocation of
  // other nodes too is kept (its slots are what Slurm placed).
  const bool from_scheduler = plan.allocation.source.rfind("Slurm allocation", 0) == 0 ||
                              plan.allocation.source.rfind("LSF allocation", 0) == 0;
  if (from_scheduler && spec.num_proc && plan.allocation.hosts.size() == 1 &&
      IsLocalHost(plan.allocation.hosts.front().host) &&
      plan.allocation.hosts.front().slots < num_proc) {
    plan.allocation_note = plan.allocation.source + " gives this machine " +
                           std::to_string(plan.allocation.hosts.front().slots) + " task(s); -np " +
                           std::to_string(num_proc) + " runs " + std::to_string(num_proc) +
                           " ranks here";
    plan.allocation.hosts.front().slots = num_proc;
  }
  HVD_ASSIGN_OR_RETURN(plan.ranks, discovery::PlanRanks(plan.allocation.hosts, num_proc));
  ClassifyHosts(plan);
  if (!plan.remote_hosts.empty()) {
    plan.srun = DetectSrunLaunch(plan.remote_hosts, env, &plan.srun_note);
  }
  return plan;
}

}  // namespace hvd::launcher
