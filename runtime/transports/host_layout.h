#ifndef HVD_RUNTIME_TRANSPORTS_HOST_LAYOUT_H_
#define HVD_RUNTIME_TRANSPORTS_HOST_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hvd::runtime {

// Where the members of one group run, as seen by member `me`: the input to the choice between
// one transport for the whole group and the hierarchical composition (shared memory within a
// host, TCP between hosts; hierarchical_communicator.h). A plain value.
struct HostLayout {
  int hosts = 1;       // distinct hosts, numbered in order of first appearance
  int host_index = 0;  // this member's host
  int local_rank = 0;  // this member's position among its host's members (group order)
  int local_size = 1;  // members on this member's host
  // Every host runs the same number of members, and member i runs on host i / local_size
  // (host-major order): the hierarchical algorithm's precondition.
  bool uniform = true;
  std::vector<int32_t> local_members;  // group positions on this host, ascending
  std::vector<int32_t> cross_members;  // group position of local rank `local_rank` per host
  // "h1 x2, h2 x2": the hosts and their member counts, for messages.
  std::string summary;
};

// The layout for member `me` of a group whose member i runs on host `host_of[i]` (host
// identities as hvdrun assigned them). Pure; `me` must index `host_of`.
HostLayout ComputeHostLayout(const std::vector<std::string>& host_of, int me);

// True when this host has at least one online CPU for each of `ranks_on_host` busy ranks: then
// a waiter may spin or poll busily for a while, since the peer it waits for has a CPU of its
// own (shared-memory waits, tcp busy polling, callers running the runtime's cycles).
bool CpuPerRank(int ranks_on_host);
// How many of `ranks_on_host` busy ranks share each online CPU, rounded up (1 when every rank
// has a CPU of its own or the count is unknown).
int RanksPerCpu(int ranks_on_host);

// This machine's identity for CpuPerRank: the kernel's boot id (the same in every network
// namespace and container of the machine), or "" when it cannot be read.
std::string MachineId();
// How many entries of `machine_of` equal machine_of[me] (1 when that id is "": unknown).
int CountSameMachine(const std::vector<std::string>& machine_of, int me);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_HOST_LAYOUT_H_
