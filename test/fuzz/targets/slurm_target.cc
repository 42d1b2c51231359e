// Target "slurm": the Slurm job's variables as hvdrun reads them (discovery/slurm.h).
// Input: SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE and SLURM_NTASKS, separated by NUL bytes
// (which no variable can hold); a missing piece is an unset variable. Each expander also gets
// its variable alone, so a bad node list does not hide the task counts from the fuzzer.
#include <map>

#include "common/check.h"
#include "common/env_registry.h"
#include "discovery/slurm.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzSlurm(std::string_view input) {
  FuzzInput in(input);
  const char* const names[] = {"SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS"};
  std::map<std::string, std::string> vars;
  for (const char* name : names) {
    if (in.empty()) break;
    vars[name] = std::string(in.Until('\0'));
  }
  std::string outcome;
  if (auto it = vars.find(names[0]); it != vars.end()) {
    Note(&outcome, discovery::ExpandSlurmHostlist(it->second).status());
  }
  if (auto it = vars.find(names[1]); it != vars.end()) {
    Note(&outcome, discovery::ParseSlurmTasksPerNode(it->second).status());
  }
  Result<std::optional<discovery::Allocation>> allocation =
      discovery::SlurmAllocation(env::Environment::FromMap(vars));
  Note(&outcome, allocation.status());
  if (allocation.ok() && *allocation) {
    for (const discovery::HostSlots& host : (*allocation)->hosts) HVD_CHECK_GE(host.slots, 1);
  }
  return outcome;
}

}  // namespace hvd::fuzz
