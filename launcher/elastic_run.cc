#include "launcher/elastic_run.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "discovery/allocation.h"
#include "discovery/host_spec.h"
#include "discovery/rank_plan.h"
#include "launcher/console.h"
#include "launcher/dry_run.h"
#include "launcher/elastic_summary.h"
#include "launcher/exit_codes.h"

namespace hvd::launcher {
namespace {

int PrintDryRun(const LaunchSpec& spec, const env::Environment& env) {
  std::string text = "hvdrun dry run: nothing is started\n\n" + DescribeElastic(spec);
  if (spec.host_discovery_script.empty()) {
    Result<discovery::Allocation> allocation =
        discovery::ResolveAllocation(spec.hosts, spec.hostfile, spec.num_proc, env);
    if (!allocation.ok()) {
      PrintToUser("error: " + allocation.status().message());
      return kExitUsage;
    }
    JobPlan plan;
    plan.allocation = *allocation;
    int slots = 0;
    for (const discovery::HostSlots& host : allocation->hosts) slots += host.slots;
    if (spec.max_num_proc) slots = std::min(slots, *spec.max_num_proc);
    Result<std::vector<discovery::RankInfo>> ranks =
        discovery::PlanRanks(allocation->hosts, std::max(slots, spec.num_proc.value_or(slots)));
    if (!ranks.ok()) {
      PrintToUser("error: " + ranks.status().message());
      return kExitUsage;
    }
    plan.ranks = *ranks;
    text += "\nfirst rank plan (hosts from " + allocation->source + "):\n" + FormatPlanTable(plan);
  } else {
    text += "\nthe first rank plan depends on what the discovery script prints at launch\n";
  }
  text += "\ncommand of every rank: " + ShellJoin(spec.command) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

int RunElastic(const LaunchSpec& spec, const env::Environment& env) {
  if (spec.check) {
    PrintToUser("error: --check does not apply to elastic jobs (their hosts change at run time)");
    return kExitUsage;
  }
  if (spec.dry_run) return PrintDryRun(spec, env);
  PrintToUser(
      "error: elastic mode (--elastic / --min-np / --host-discovery-script) is not built yet");
  return kExitUsage;
}

}  // namespace hvd::launcher
