#ifndef HVD_LAUNCHER_PLAN_JOB_PLAN_H_
#define HVD_LAUNCHER_PLAN_JOB_PLAN_H_

#include <optional>
#include <string>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "discovery/allocation.h"
#include "discovery/rank_plan.h"
#include "launcher/plan/launch_spec.h"
#include "launcher/schedulers/srun_command.h"

namespace hvd::launcher {

// Where every rank of a static job runs.
struct JobPlan {
  discovery::Allocation allocation;
  std::vector<discovery::RankInfo> ranks;
  // The hosts of `ranks` that are not this machine (launcher/local/local_host.h), each once, in
  // rank order: their ranks are started over SSH.
  std::vector<std::string> remote_hosts;
  // Set inside a Slurm allocation whose nodes are the remote hosts and where srun is on
  // PATH (DetectSrunLaunch): remote ranks then start as srun job steps instead of over SSH.
  std::optional<SrunLaunch> srun;
  std::string srun_note;  // why srun is not used, for --verbose ("" = not in Slurm)
  // A one-machine allocation widened to -np (PlanJob), for --verbose and --dry-run.
  std::string allocation_note;
  bool IsRemote(const std::string& host) const;
};

// Validates `spec` against what this build can do, resolves the allocation and plans the
// ranks. Every error is a usage error (nothing has started) whose message names the input:
// no command; a feature not built yet (--jsrun); a bad host list; more
// processes than slots. Hosts that are not this machine are listed in remote_hosts, and
// whether srun starts them is decided here.
Result<JobPlan> PlanJob(const LaunchSpec& spec, const env::Environment& env);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_PLAN_JOB_PLAN_H_
