#ifndef HVD_LAUNCHER_JOB_PLAN_H_
#define HVD_LAUNCHER_JOB_PLAN_H_

#include <string>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "discovery/allocation.h"
#include "discovery/rank_plan.h"
#include "launcher/launch_spec.h"

namespace hvd::launcher {

// Where every rank of a static job runs.
struct JobPlan {
  discovery::Allocation allocation;
  std::vector<discovery::RankInfo> ranks;
  // The hosts of `ranks` that are not this machine (launcher/local_host.h), each once, in
  // rank order: their ranks are started over SSH.
  std::vector<std::string> remote_hosts;
  bool IsRemote(const std::string& host) const;
};

// Validates `spec` against what this build can do, resolves the allocation and plans the
// ranks. Every error is a usage error (nothing has started) whose message names the input:
// no command; a feature not built yet (elastic mode, --jsrun); a bad host list; more
// processes than slots. Hosts that are not this machine are listed in remote_hosts.
Result<JobPlan> PlanJob(const LaunchSpec& spec, const env::Environment& env);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_JOB_PLAN_H_
