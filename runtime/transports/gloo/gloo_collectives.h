#ifndef HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COLLECTIVES_H_
#define HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COLLECTIVES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/transports/gloo/gloo_transfers.h"

namespace hvd::runtime {

// Direct (pairwise) data-movement collectives over GlooTransfers: every rank posts all its
// receives and sends at once and completes them as they land, so each collective costs one
// message latency and moves the minimal number of bytes per rank. (Allreduces do not come
// here: gloo's legacy algorithms, gloo_legacy_allreducer.h.)
//
// GlooCollectives owns the scratch memory these need (grown, never shrunk, so a steady state
// allocates nothing). Not thread-safe except Abort() via GlooTransfers; every method throws
// gloo exceptions for the communicator to translate and calls transfers.StartOp() itself.
class GlooCollectives {
 public:
  explicit GlooCollectives(GlooTransfers* transfers);

  // `out` receives the concatenation in rank order; `in` may alias this rank's slot of `out`.
  void Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank);
  // A binomial tree from the root, or for large messages a chain in pieces (the .cc says when).
  void Broadcast(void* buffer, size_t bytes, int root);
  void Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                 const std::vector<int64_t>& recv_bytes);
  // Reduces `elem`-byte elements: dst[i] = dst[i] op src[i] for i < count; `fn` is passed
  // through (the reduction's own state).
  using ReduceFn = void (*)(const void* fn, void* dst, const void* src, size_t count);
  // Every member's slice of `in` (counts_per_rank elements each, in rank order) goes to that
  // member, which reduces the size() copies of its slice into `out`: each rank sends and
  // receives (size()-1)/size() of the input once, all transfers at once. The copies are
  // reduced in a fixed order (this rank's own, then rank-1, rank-2, ...), so a run's bits do
  // not depend on arrival order. `out` may alias this rank's slice of `in`, nothing else of it.
  void ReduceScatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                     size_t elem, ReduceFn reduce, const void* fn);

  // Control plane: variable-length byte strings. One fixed-size block carries the length
  // and up to kInlineBytes of payload; only longer strings need a second message.
  void GatherBytes(const std::string& in, int root, std::vector<std::string>* out);
  void BroadcastBytes(std::string* data, int root);

 private:
  // The chained broadcast's pieces: at least this many bytes, at most this many pieces.
  static constexpr size_t kBroadcastPieceBytes = size_t{256} << 10;
  static constexpr size_t kMaxBroadcastPieces = 64;
  static constexpr size_t kBlockBytes = 4096;
  static constexpr size_t kInlineBytes = kBlockBytes - sizeof(uint64_t);

  char* Scratch(size_t bytes);

  GlooTransfers* const transfers_;
  const int rank_;
  const int size_;
  std::vector<char> scratch_;
  std::vector<char> block_;                             // this rank's control block
  std::vector<int64_t> offsets_;                        // per-rank offsets, reused
  std::vector<int64_t> counts_;                         // per-rank offsets, reused
  std::vector<gloo::transport::UnboundBuffer*> slots_;  // ReduceScatter's receive slots, reused
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GLOO_GLOO_COLLECTIVES_H_
