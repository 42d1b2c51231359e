#include "discovery/allocation.h"

#include <limits>

#include "discovery/host_spec.h"
#include "discovery/hostfile.h"
#include "discovery/lsf.h"
#include "discovery/slurm.h"

namespace hvd::discovery {
namespace {

// The source the user named, or the scheduler's, or nullopt when there is none.
Result<std::optional<Allocation>> ExplicitOrScheduler(std::string_view hosts_text,
                                                      const std::string& hostfile_path,
                                                      const env::Environment& env) {
  if (!hosts_text.empty()) {
    HVD_ASSIGN_OR_RETURN(std::vector<HostSlots> hosts, ParseHostSpec(hosts_text));
    return std::optional<Allocation>(Allocation{std::move(hosts), std::nullopt, "-H"});
  }
  if (!hostfile_path.empty()) {
    HVD_ASSIGN_OR_RETURN(std::vector<HostSlots> hosts, ReadHostfile(hostfile_path));
    return std::optional<Allocation>(
        Allocation{std::move(hosts), std::nullopt, "--hostfile " + hostfile_path});
  }
  HVD_ASSIGN_OR_RETURN(std::optional<Allocation> slurm, SlurmAllocation(env));
  if (slurm.has_value()) return slurm;
  return LsfAllocation(env);
}

}  // namespace

Result<Allocation> ResolveAllocation(std::string_view hosts_text, const std::string& hostfile_path,
                                     std::optional<int> num_proc, const env::Environment& env,
                                     std::optional<int> local_default) {
  if (!hosts_text.empty() && !hostfile_path.empty()) {
    return Status::InvalidArgument("-H/--hosts '" + std::string(hosts_text) + "' and --hostfile '" +
                                   hostfile_path + "' are mutually exclusive; give one");
  }
  if (num_proc.has_value() && *num_proc <= 0) {
    return Status::InvalidArgument("-np must be at least 1, got " + std::to_string(*num_proc));
  }
  HVD_ASSIGN_OR_RETURN(std::optional<Allocation> found,
                       ExplicitOrScheduler(hosts_text, hostfile_path, env));
  if (!found.has_value()) {
    if (!num_proc.has_value()) num_proc = local_default;
    if (!num_proc.has_value()) {
      return Status::InvalidArgument(
          "-np is required when no hosts are given (no -H, no --hostfile, and no Slurm or LSF "
          "allocation in the environment)");
    }
    return Allocation{{{"localhost", *num_proc, std::nullopt}}, num_proc, "default (localhost)"};
  }
  Allocation allocation = std::move(*found);
  if (num_proc.has_value()) {
    allocation.num_proc = num_proc;
  } else if (!allocation.num_proc.has_value()) {
    long long total = 0;
    for (const HostSlots& host : allocation.hosts) total += host.slots;
    if (total > std::numeric_limits<int>::max()) {
      return Status::InvalidArgument(allocation.source + " provides " + std::to_string(total) +
                                     " slots, more than one job can use");
    }
    allocation.num_proc = static_cast<int>(total);
  }
  return allocation;
}

}  // namespace hvd::discovery
