#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COMMUNICATOR_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/kv_client.h"
#include "common/status.h"
#include "runtime/transports/communicator.h"

namespace gloo::rendezvous {
class Store;
}  // namespace gloo::rendezvous

namespace hvd::runtime {

// Where each of the Gloo communicator's reduction algorithms takes over, by an op's bytes.
// The defaults were measured on the 2-core project machine, 2-4 ranks over loopback
// (bench/README.md); tests lower them to reach every path with small inputs.
struct GlooThresholds {
  // Allreduces from here take gloo's legacy halving-doubling, smaller ones its legacy ring.
  size_t halving_doubling_bytes = size_t{512} << 10;
  // Allreduces from here are direct: a pairwise reduce-scatter, then a pairwise allgather.
  size_t direct_allreduce_bytes = size_t{2} << 20;
  // Reduce-scatters from here are pairwise; smaller ones a legacy allreduce and the slice.
  size_t direct_reduce_scatter_bytes = size_t{256} << 10;
};

// How to build a Communicator over Gloo's tcp transport for one group of ranks.
struct GlooOptions {
  // Rendezvous channel to hvdrun; must outlive the call (not the communicator). Unused when
  // size == 1.
  control::KvClient* kv = nullptr;
  // Or any other rendezvous store (e.g. one over an MPI communicator, gloo_collective_store.h);
  // used instead of `kv` when set, and must outlive the call.
  gloo::rendezvous::Store* store = nullptr;
  // Key prefix of this group's rendezvous, unique per group and per (elastic) round, for
  // example "r0/global". Every member passes the same scope.
  std::string scope;
  int rank = 0;
  int size = 1;
  // Network interface to bind (e.g. "eth0"); empty binds 127.0.0.1 (single host).
  std::string iface;
  // Deadline of the rendezvous and of every collective.
  std::chrono::milliseconds timeout{30000};
  GlooThresholds thresholds;
};

// Rendezvouses through options.kv under options.scope, connects a full mesh of tcp pairs and
// returns the Communicator (see runtime/communicator.h for the calling contract). Fails with
// kInvalidArgument for bad options or an unusable interface, kTimeout when the other ranks do
// not arrive within the timeout, kIoError/kRemoteError when connecting fails.
//
// Algorithms (GlooThresholds says where each takes over):
//   - allreduce: gloo's legacy AllreduceRing, then AllreduceHalvingDoubling
//     (gloo_legacy_allreducer.h), then direct: a pairwise reduce-scatter and a pairwise
//     allgather on gloo unbound buffers (gloo_collectives.h), which moves each byte once
//     each way: 1.1-2.3x faster than halving-doubling at 2-32 MiB, 2-4 ranks, but for one of
//     two runs at 2 MiB and 2 ranks (0.83x; bench/README.md);
//   - reduce-scatter: a legacy allreduce and this rank's slice, then pairwise;
//   - bitwise and/or, barrier: the legacy ring;
//   - allgather(v), alltoall(v), broadcast and the byte-string gather/broadcast: direct
//     pairwise transfers of unbound buffers.
// Any failure leaves the communicator broken: that call and every later one return the error,
// and its connections are shut down so peers fail fast too.
Result<std::unique_ptr<Communicator>> CreateGlooCommunicator(const GlooOptions& options);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COMMUNICATOR_H_
