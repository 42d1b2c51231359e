#ifndef HVD_RUNTIME_TRANSPORTS_TCP_TCP_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_TCP_TCP_COMMUNICATOR_H_

#include <chrono>
#include <memory>
#include <string>

#include "common/job_key.h"
#include "common/kv_client.h"
#include "common/status.h"
#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// How to build hvd's own TCP communicator for one group of ranks.
struct TcpOptions {
  // Rendezvous channel to hvdrun; must outlive the call (not the communicator).
  control::KvClient* kv = nullptr;
  // Key prefix of this group's rendezvous, unique per group and per (elastic) round.
  std::string scope;
  int rank = 0;
  int size = 1;
  // Data interface (HVD_GLOO_IFACE); empty: the local address of the route to `route_to`
  // (the rendezvous server's address), else 127.0.0.1.
  std::string iface;
  std::string route_to;
  std::string hostname;  // this rank's host, for peers' error messages
  // The job key and id authenticate every data connection (tcp_handshake.h).
  control::JobKey key{};
  std::string job_id;
  // Deadline of the rendezvous and of every collective.
  std::chrono::milliseconds timeout{30000};
  // Dead-peer detection on every connection: TCP keepalive when idle (TcpMeshOptions),
  // acknowledgements of data in flight (TcpTransport::set_heartbeat_timeout); 0 = off.
  std::chrono::milliseconds heartbeat_timeout{0};
  // Non-blocking retries before a wait sleeps (TcpTransport::set_busy_poll); 0 = none; with
  // busy_yield, each retry yields the CPU first.
  std::chrono::microseconds busy_poll{0};
  bool busy_yield = false;
  // Congestion control of the data connections (TcpMeshOptions::congestion).
  std::string congestion = "auto";
  // TcpMeshOptions::abortable: an elastic round's rendezvous, which hvdrun may give up.
  bool abortable = false;
  // Allreduces of more than 2 ranks that would take recursive doubling take halving-doubling
  // from this many bytes on (HVD_TCP_HALVING_BYTES); -1 (auto): from the size the group's
  // network makes it faster, measured at the first allreduce of 8 KiB or more that would take
  // recursive doubling (the same call on every member, so they measure together); the same
  // on every member.
  int64_t halving_bytes = -1;
};

// Rendezvouses through options.kv under options.scope, connects an authenticated full mesh of
// TCP sockets (tcp_mesh.h) and returns the Communicator (calling contract: communicator.h).
//
// Algorithms (tcp_communicator.cc): small reductions, bitwise and/or, barrier and small
// reduce-scatters exchange directly with every peer and reduce in rank order; large ones run
// a pipelined ring (reduce-scatter streamed through a cache-sized scratch, then allgather,
// sending to the right while receiving from the left). Every element is reduced in one fixed
// order, so all ranks get bit-identical results. Broadcast: direct when small, a pipelined
// chain when large; allgather(v): direct or ring; alltoall(v): all pairs at once; byte-string
// gather/broadcast: length-prefixed direct messages. The negotiation's AND round can carry a
// small allreduce (BitwiseAndWithAllreduce: reduced on the way) or every member's input to
// another small op (BitwiseAndPostingInput: gathered by recursive doubling in a power-of-two
// group, directly otherwise; the op then runs from the gathered inputs, posted_inputs()), or an
// alltoall's or reducescatter's pieces, each peer only its own (BitwiseAndPostingPieces). Any
// failure breaks the communicator (that call and every later one return it) and shuts its
// sockets down so peers fail fast: a dead peer is kRemoteError naming its rank and host, a
// missed deadline kTimeout, Abort() kAborted.
Result<std::unique_ptr<Communicator>> CreateTcpCommunicator(const TcpOptions& options);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_TCP_TCP_COMMUNICATOR_H_
