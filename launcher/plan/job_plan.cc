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
  HVD_ASSIGN_OR_RETURN(plan.ranks, discovery::PlanRanks(plan.allocation.hosts, num_proc));
  ClassifyHosts(plan);
  if (!plan.remote_hosts.empty()) {
    plan.srun = DetectSrunLaunch(plan.remote_hosts, env, &plan.srun_note);
  }
  return plan;
}

}  // namespace hvd::launcher
