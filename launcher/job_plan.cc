#include "launcher/job_plan.h"

#include <set>
#include <string>

#include "launcher/local_host.h"

namespace hvd::launcher {
namespace {

Status CheckBuiltFeatures(const LaunchSpec& spec) {
  if (spec.command.empty()) {
    return Status::InvalidArgument("no command given: usage is hvdrun [options] <program> [args]");
  }
  if (spec.elastic()) {
    return Status::Unimplemented(
        "elastic mode (--min-np / --max-np / --host-discovery-script) is not built yet");
  }
  if (spec.controller == Controller::kMpi) {
    return Status::Unimplemented("launching through mpirun (--mpi) is not built yet; use --gloo");
  }
  if (spec.controller == Controller::kJsrun) {
    return Status::Unimplemented("launching through jsrun (--jsrun) is not built yet; use --gloo");
  }
  return Status::OK();
}

Status CheckAllLocal(const JobPlan& plan) {
  std::set<std::string> checked;
  for (const discovery::RankInfo& rank : plan.ranks) {
    if (!checked.insert(rank.host).second) continue;
    if (!IsLocalHost(rank.host)) {
      return Status::Unimplemented("host '" + rank.host + "' (from " + plan.allocation.source +
                                   ") is not this machine: remote hosts need SSH spawning, "
                                   "which this build does not have yet");
    }
  }
  return Status::OK();
}

}  // namespace

Result<JobPlan> PlanJob(const LaunchSpec& spec, const env::Environment& env) {
  HVD_RETURN_IF_ERROR(CheckBuiltFeatures(spec));
  JobPlan plan;
  HVD_ASSIGN_OR_RETURN(plan.allocation,
                       discovery::ResolveAllocation(spec.hosts, spec.hostfile, spec.num_proc, env));
  int num_proc = 0;
  if (spec.num_proc) {
    num_proc = *spec.num_proc;
  } else if (plan.allocation.num_proc) {
    num_proc = *plan.allocation.num_proc;
  } else {
    for (const discovery::HostSlots& host : plan.allocation.hosts) num_proc += host.slots;
  }
  HVD_ASSIGN_OR_RETURN(plan.ranks, discovery::PlanRanks(plan.allocation.hosts, num_proc));
  HVD_RETURN_IF_ERROR(CheckAllLocal(plan));
  return plan;
}

}  // namespace hvd::launcher
