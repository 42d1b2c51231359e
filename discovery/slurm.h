#ifndef HVD_DISCOVERY_SLURM_H_
#define HVD_DISCOVERY_SLURM_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "discovery/allocation.h"

namespace hvd::discovery {

// Expands Slurm hostlist syntax, in Slurm's order: "node[01-04,07],gpu-[1-2]a,x" ->
// node01 node02 node03 node04 node07 gpu-1a gpu-2a x. A range keeps the zero padding of
// its lower bound; several bracket groups in one name expand as a cartesian product with
// the leftmost group varying slowest ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). Unbalanced or
// nested brackets, empty groups, non-numeric or descending ranges, bad host names and
// expansions over 65,536 names are InvalidArgument errors quoting the list and column.
Result<std::vector<std::string>> ExpandSlurmHostlist(std::string_view nodelist);

// Expands SLURM_TASKS_PER_NODE syntax: "2(x3),1" -> {2, 2, 2, 1}. Counts are >= 0 (Slurm
// may report a node without tasks), repeats >= 1.
Result<std::vector<int>> ParseSlurmTasksPerNode(std::string_view text);

// The allocation of the Slurm job this process runs in; nullopt when neither
// SLURM_JOB_NODELIST nor SLURM_NODELIST is set (JOB wins when both are). Slots per node come
// from SLURM_TASKS_PER_NODE, whose expanded length must equal the node count; nodes with 0
// tasks are dropped; without the variable every node gets 1 slot. num_proc comes from
// SLURM_NTASKS, else SLURM_NPROCS, else stays unset.
Result<std::optional<Allocation>> SlurmAllocation(const env::Environment& env);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_SLURM_H_
