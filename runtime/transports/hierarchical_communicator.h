#ifndef HVD_RUNTIME_TRANSPORTS_HIERARCHICAL_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_HIERARCHICAL_COMMUNICATOR_H_

#include <memory>

#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// Which collectives go through the hierarchy; the others use the flat communicator.
struct HierarchicalOps {
  bool allreduce = true;
  bool allgather = false;
};

// Creates a Communicator for a group spread evenly over several hosts in host-major rank order
// (HostLayout::uniform): `flat` spans the whole group (GatherBytes/BroadcastBytes and the
// collectives that stay flat), `local` this member's host (shared memory), `cross` the members
// with this member's local rank on every host, in host order (TCP). The negotiation's rounds
// (BitwiseAnd/Or, Barrier, BitwiseAndWithAllreduce) go within the host, then across hosts like
// a small allreduce. Allreduce moves each byte across hosts once per host instead of once per
// rank:
//   large: reduce-scatter within the host (local rank i gets slice i of the host's sum),
//          allreduce of the slices across hosts (L parallel cross groups, 1/L of the data
//          each), allgather within the host;
//   small (bytes x (L - 1) <= 8 KiB, or fewer elements than local ranks): allreduce within
//          the host, then every cross group allreduces the whole host sum (same inputs, same
//          algorithm, so all groups get bit-identical results and no final step is needed).
// The eager round (BitwiseAndWithAllreduce) splits its tail the same way, its AND words going
// with every cross group. ReduceScatter (with `ops.allreduce`): a reduce-scatter within the
// host whose part i is the slices of every host's local rank i (the input read in place as
// pieces where the local transport takes them),
// then each cross group reduce-scatters its part: each byte crosses hosts once per host.
// Allgatherv (when `ops.allgather`): gather within the host into the host's block, gather the
// host blocks across hosts over local rank 0's cross group, broadcast within the host.
// Every member gets bit-identical results (each element is reduced by one member, in rank
// order, and the cross reductions are deterministic). name() is "HIER". Abort() aborts all
// three. Same threading contract as Communicator; no allocation per call in steady state.
std::unique_ptr<Communicator> MakeHierarchicalCommunicator(std::unique_ptr<Communicator> flat,
                                                           std::unique_ptr<Communicator> local,
                                                           std::unique_ptr<Communicator> cross,
                                                           HierarchicalOps ops);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_HIERARCHICAL_COMMUNICATOR_H_
