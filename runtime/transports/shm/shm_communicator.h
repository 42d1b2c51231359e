#ifndef HVD_RUNTIME_TRANSPORTS_SHM_SHM_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_SHM_SHM_COMMUNICATOR_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/kv_client.h"
#include "common/status.h"
#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// How to build a shared-memory communicator for a group whose members all run on this host.
struct ShmOptions {
  // Rendezvous channel to hvdrun; must outlive the call (not the communicator).
  control::KvClient* kv = nullptr;
  // Key prefix of this group's rendezvous, unique per group and per (elastic) round.
  std::string scope;
  std::string job_id;  // with scope, names the short-lived /dev/shm entry
  int rank = 0;
  int size = 1;
  // Staging memory per member (HVD_SHM_BUFFER_BYTES), split into two halves that alternate
  // between rounds; rounded down to whole pages, at least two. Larger operations are chunked.
  size_t buffer_bytes = size_t{1} << 20;
  // Allreduces of at least this many bytes, and alltoalls whose largest piece times the members
  // is, read the peers' buffers directly (single copy, process_vm_readv) when every member may
  // (ShmChannel::ProbeSingleCopy); 0 never (HVD_SHM_SINGLE_COPY_BYTES).
  int64_t single_copy_bytes = int64_t{2} << 20;
  // Whether allreduces take single copy at all (the alltoall does whenever single_copy_bytes
  // allows): false with more ranks than CPUs, where the allreduce's direct reads lost (4 ranks
  // on 2 vCPUs, 64 MiB 37 ms staged against 47 ms) and the alltoall's won (16 ranks, 64 MiB
  // 95-108 ms against 147-167 ms staged; shm_provider.cc).
  bool single_copy_allreduce = true;
  // Whether member 0 chooses between single copy and the staging halves for those sizes by
  // timing both (ShmSingleCopyChooser; HVD_SHM_SINGLE_COPY=auto); false: single copy always.
  bool choose_single_copy = false;
  // Allreduces up to this size take one round in which every member reduces all inputs (the
  // eager allreduce that posts its input with the negotiation: none), larger ones two (posted:
  // one, ShmAllreducePostedSliced) (HVD_SHM_DIRECT_BYTES); -1: ShmDirectBytes of the group's size
  // and ranks per CPU. At most kShmDirectBytes; the members agree on the smallest.
  int64_t direct_bytes = -1;
  // Deadline of the rendezvous and of every collective.
  std::chrono::milliseconds timeout{30000};
  // Ranks sharing this machine's CPUs (this group's and others'); with more than there are
  // CPUs, waits yield instead of spinning. 0: this group's size.
  int ranks_on_machine = 0;
  // A named segment (ShmSegment::Options::named; HVD_SHM_NAMED, tests only).
  bool named = false;
  // A seam for tests: ShmChannel::set_before_peer_reads (stalls a single-copy reader).
  std::function<void()> before_peer_reads;
};

// Maps one shared-memory segment for the group (shm_segment.h; nothing is left in /dev/shm
// once this returns, even if the job is killed later) and returns the Communicator (calling
// contract: communicator.h). Members synchronize through futex-backed sequence counters
// (shm_channel.h): no busy waiting beyond a short spin, every wait bounded by the timeout, a
// dead or failed peer is kRemoteError naming its rank, Abort() is kAborted.
//
// Algorithms, all deterministic so every member gets bit-identical results:
//  - allreduce up to the group's direct size (ShmOptions::direct_bytes, by default
//    ShmDirectBytes in shm_reductions.h: 64 KiB for 2 members, less the more there are): each
//    member posts its whole input and reduces all inputs itself in rank order 0..N-1 (one round);
//  - larger allreduce, chunked through the staging halves: each member reduces its 1/N slice of
//    the chunk in rank order 0..N-1 (reduce-scatter round), then posts the slice and copies the
//    others' slices (allgather round); consecutive chunks overlap;
//  - from ShmOptions::single_copy_bytes, when every member may read the others' memory
//    (ShmChannel::ProbeSingleCopy, at creation): the same reduce-scatter and allgather, but each
//    member reads its peers' slices straight from their buffers (process_vm_readv), with no
//    staging copy (ShmAllreduceSingleCopy); likewise an alltoall (its largest piece times the
//    members from that size): each member reads its piece of every peer's input straight into
//    its output (ShmAlltoallSingleCopy);
//  - reduce-scatter: per chunk of the input, each member reduces the part of its own segment in
//    rank order; allgather(v), broadcast, alltoall(v) and the byte-string gather/broadcast copy
//    through the halves in as many rounds as the largest contribution needs;
//  - the negotiation's AND round can carry each member's input to one small op
//    (BitwiseAndPostingInput); that op's result is then computed from the posted inputs
//    (posted_inputs()) without a round of its own, or an allreduce past the direct size with
//    one: each member reduces its slice of the posted inputs, then the slices are exchanged.
Result<std::unique_ptr<Communicator>> CreateShmCommunicator(const ShmOptions& options);

// The size from which `comm`'s alltoalls (and, unless ShmOptions::single_copy_allreduce was
// false, its allreduces) read the peers' buffers directly, as its members agreed at creation; 0
// when they never do or `comm` is not a shared-memory communicator.
int64_t ShmSingleCopyBytes(const Communicator& comm);

// The direct size `comm`'s members agreed at creation (ShmOptions::direct_bytes); 0 when `comm`
// is not a shared-memory communicator.
int64_t ShmGroupDirectBytes(const Communicator& comm);

// Whether `comm`'s reduce-scatter takes the balanced rounds (ShmReduceScatter: up to 2 ranks
// per CPU, agreed at creation); false when `comm` is not a shared-memory communicator.
bool ShmBalancedReduceScatter(const Communicator& comm);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SHM_SHM_COMMUNICATOR_H_
