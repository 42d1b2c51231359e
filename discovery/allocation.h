#ifndef HVD_DISCOVERY_ALLOCATION_H_
#define HVD_DISCOVERY_ALLOCATION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "discovery/host_slots.h"

namespace hvd::discovery {

// Where a static job may run: hosts in rank order, the process count the source asks for
// (when it says), and a human description of the source for messages and --verbose
// ("-H", "--hostfile hosts.txt", "Slurm allocation (SLURM_JOB_NODELIST=node[1-4])",
// "LSF allocation (LSB_MCPU_HOSTS)", "default (localhost)").
struct Allocation {
  std::vector<HostSlots> hosts;
  std::optional<int> num_proc;
  std::string source;
};

// Decides where a static job runs. Precedence:
//   1. -H (`hosts_text`) or --hostfile (`hostfile_path`); giving both is an error.
//   2. else the Slurm allocation (SlurmAllocation), when inside one;
//   3. else the LSF allocation (LsfAllocation), when inside one;
//   4. else "localhost:<num_proc>", which needs `num_proc` ("-np is required ..."), or
//      `local_default` when given (hvdrun --check without hosts checks this machine).
// The returned num_proc is always set: an explicit `num_proc` wins, else the allocation's
// own (SLURM_NTASKS), else the sum of its slots. A `num_proc` <= 0 is an error. Whether the
// hosts have enough slots for num_proc is PlanRanks's check.
Result<Allocation> ResolveAllocation(std::string_view hosts_text, const std::string& hostfile_path,
                                     std::optional<int> num_proc, const env::Environment& env,
                                     std::optional<int> local_default = std::nullopt);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_ALLOCATION_H_
