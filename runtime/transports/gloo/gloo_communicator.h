#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COMMUNICATOR_H_

#include <chrono>
#include <memory>
#include <string>

#include "common/kv_client.h"
#include "common/status.h"
#include "runtime/transports/communicator.h"

namespace gloo::rendezvous {
class Store;
}  // namespace gloo::rendezvous

namespace hvd::runtime {

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
};

// Rendezvouses through options.kv under options.scope, connects a full mesh of tcp pairs and
// returns the Communicator (see runtime/communicator.h for the calling contract). Fails with
// kInvalidArgument for bad options or an unusable interface, kTimeout when the other ranks do
// not arrive within the timeout, kIoError/kRemoteError when connecting fails.
//
// Algorithms: allreduce, reduce-scatter (allreduce + slice), bitwise and/or and barrier use
// gloo's legacy AllreduceRing / AllreduceHalvingDoubling (gloo_legacy_allreducer.h);
// allgather(v), alltoall(v), broadcast and the byte-string gather/broadcast use direct
// pairwise transfers of gloo unbound buffers (gloo_collectives.h). Any
// failure leaves the communicator broken: that call and every later one return the error,
// and its connections are shut down so peers fail fast too.
Result<std::unique_ptr<Communicator>> CreateGlooCommunicator(const GlooOptions& options);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COMMUNICATOR_H_
