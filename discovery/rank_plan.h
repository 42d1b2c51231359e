#ifndef HVD_DISCOVERY_RANK_PLAN_H_
#define HVD_DISCOVERY_RANK_PLAN_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "discovery/host_slots.h"

namespace hvd::discovery {

// Where one rank runs and its place in the job's topology.
//   local_rank / local_size: index among / number of the ranks on the same host;
//   cross_rank / cross_size: index among / number of the hosts that have a rank with this
//   local_rank (the "column" of equal local ranks across hosts).
struct RankInfo {
  int rank = 0;
  int local_rank = 0;
  int local_size = 0;
  int cross_rank = 0;
  int cross_size = 0;
  std::string host;
  // The host's place among the job's hosts that run ranks, and their number (torchrun's
  // GROUP_RANK and GROUP_WORLD_SIZE: its node rank and node count).
  int host_index = 0;
  int host_count = 1;

  bool operator==(const RankInfo&) const = default;
};

// Horovod's static assignment (hosts.py::get_host_assignments): take hosts in order and
// fill each host's slots before the next, giving exactly `num_proc` ranks. Unlike Horovod's
// Gloo launcher, slots beyond num_proc stay empty (-np 2 -H localhost:4 starts 2 ranks), and
// hosts that get no rank are left out of local/cross sizes. Returns ranks in rank order.
// Errors (InvalidArgument): num_proc <= 0; no hosts; a host with slots < 1; num_proc larger
// than the total slots ("requested N processes but the hosts provide only M slots (...)").
Result<std::vector<RankInfo>> PlanRanks(const std::vector<HostSlots>& hosts, int num_proc);

}  // namespace hvd::discovery

#endif  // HVD_DISCOVERY_RANK_PLAN_H_
