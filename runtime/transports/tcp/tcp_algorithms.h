#ifndef HVD_RUNTIME_TRANSPORTS_TCP_TCP_ALGORITHMS_H_
#define HVD_RUNTIME_TRANSPORTS_TCP_TCP_ALGORITHMS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/transports/tcp/tcp_transport.h"

namespace hvd::runtime {

// The collective algorithms of the TCP communicator, as stream plans over a TcpTransport.
// One call at a time per transport. `what` names the call in every error. Every reduction
// combines each element in one fixed order (ascending rank for the direct paths, a balanced
// tree over ascending ranks for recursive doubling, the ring order for the ring), so every rank
// ends with the same bits.
//
// Plans are built in reused slots (streams, their piece lists, offset tables, scratch) that
// keep their capacity, so a collective whose shape has been seen before allocates nothing.
class TcpAlgorithms {
 public:
  TcpAlgorithms(TcpTransport* transport, int rank, int size);

  // Bounds each wait of the collectives' runs (TcpTransport::Run): no byte moved for this long.
  void set_timeout(TcpTransport::Clock::duration timeout) { timeout_ = timeout; }
  // Direct reductions (DirectAllreduce, ExchangeSegments) of messages up to `bytes` per rank
  // will be asked for: the first one sizes the scratch for all of them, so that a later, larger
  // message (a fused batch, say) does not grow it in the steady state.
  void ExpectDirectMessages(size_t bytes) {
    scratch_floor_ = std::max(scratch_floor_, bytes * size_);
  }
  // The same for DoublingAllreduce's messages.
  void ExpectDoublingMessages(size_t bytes) { scratch_floor_ = std::max(scratch_floor_, bytes); }

  // Every rank sends its `bytes` to every peer; result = a0 op a1 op ... op a(n-1).
  Status DirectAllreduce(char* buf, size_t bytes, const TcpReducer& red, const TcpWhat& what);
  // Recursive doubling (as MPICH's and Open MPI's small allreduces): log2(n) rounds, each an
  // exchange of the whole message with one partner, plus one round before and after for the
  // ranks beyond the largest power of two (folded into a neighbour). Each round combines the
  // lower ranks' partial result with the higher ones' (a balanced tree over ascending ranks),
  // the same operations on both partners, so every rank ends with the same bits.
  Status DoublingAllreduce(char* buf, size_t bytes, const TcpReducer& red, const TcpWhat& what);
  // Rabenseifner's allreduce (as MPICH's and Open MPI's mid-size ones): a reduce-scatter by
  // recursive halving (log2(p) exchanges of half, a quarter, ... of the message, p the largest
  // power of two <= n) leaves virtual rank v owning the reduced segment v of p, then an
  // allgather by recursive doubling; ranks beyond p fold in first and get the result last, as
  // in DoublingAllreduce. Each rank sends 2(p-1)/p of the message where recursive doubling
  // sends log2(p) times it, in twice the rounds. Every partial sum is formed by one rank only,
  // lower ranks' part first, so every rank ends with the same bits. Needs at least p elements.
  Status HalvingDoublingAllreduce(char* buf, size_t bytes, const TcpReducer& red,
                                  const TcpWhat& what);
  // Pipelined ring over segments seg_bytes[i] (element multiples) laid out in order in `buf`:
  // reduce-scatter leaves rank r owning the reduced segment r (the reducer's finish applied in
  // the step that completes it); with `allgather` every rank then receives every reduced
  // segment.
  Status Ring(char* buf, const std::vector<size_t>& seg_bytes, const TcpReducer& red,
              bool allgather, const TcpWhat& what);
  // The same ring over the concatenation of `parts` (each part's bytes an element multiple)
  // instead of one buffer: a fused allreduce runs on the tensors themselves.
  Status Ring(std::span<const TcpPiece> parts, const std::vector<size_t>& seg_bytes,
              const TcpReducer& red, bool allgather, const TcpWhat& what);
  // The direct reduce-scatter's exchange: rank r receives everybody's segment r of `in`;
  // *slots then points at them, member k's at k * seg_bytes[r] (its own copied there: the
  // caller's output may be this member's segment of `in` itself, as the executor's fusion
  // buffer has it, which ReduceHeldInputs could not read after writing it), valid until the
  // next call. The caller reduces them (in rank order: ReduceHeldInputs).
  Status ExchangeSegments(const char* in, const std::vector<size_t>& seg_bytes, const char** slots,
                          const TcpWhat& what);
  // `out` holds this rank's part at its offset already; receives every other part.
  Status Allgatherv(char* out, const std::vector<size_t>& part_bytes, bool ring,
                    const TcpWhat& what);
  // The same by recursive doubling, for a power-of-two group: log2(n) exchanges with one
  // partner each, of the parts gathered so far (the partners' groups of ranks are contiguous
  // in `out`), where the direct Allgatherv has every rank send to and receive from every peer
  // at once.
  Status DoublingAllgatherv(char* out, const std::vector<size_t>& part_bytes, const TcpWhat& what);
  Status Broadcast(char* buf, size_t bytes, int root, bool chain, const TcpWhat& what);
  Status Alltoallv(const char* in, const std::vector<size_t>& send_bytes, char* out,
                   const std::vector<size_t>& recv_bytes, const TcpWhat& what);
  // Every rank sends each peer j `head` (head_bytes, the same for every peer) and then
  // piece_bytes[j] bytes of `in` from the sum of the pieces before j, and receives from each
  // peer k its head and its piece for this rank (piece_bytes[rank]) at out + out_offsets[k],
  // one after the other: all pairs at once.
  Status HeadedAlltoall(const char* head, size_t head_bytes, const char* in,
                        std::span<const int64_t> piece_bytes, char* out,
                        const std::vector<size_t>& out_offsets, const TcpWhat& what);
  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out,
                     const TcpWhat& what);
  Status BroadcastBytes(std::string* data, int root, const TcpWhat& what);
  // Zero-byte-payload exchange with every peer (1 byte each way).
  Status Barrier(const TcpWhat& what);

 private:
  // The next stream of the plan being built: a reset slot of streams_ (its piece list keeps
  // its capacity), optionally with one piece.
  TcpStream& AddStream(int peer, bool send);
  TcpStream& AddStream(int peer, bool send, TcpPiece piece);
  // Runs the streams added since the last Run.
  Status Run(const TcpReducer* red, const TcpWhat& what);
  // Appends to `s` the bytes [lo, lo + n) of the concatenation of parts_, as pieces.
  void AppendRange(TcpStream& s, size_t lo, size_t n, bool reduce, bool finish = false);
  char* Scratch(size_t bytes);
  // The doubling algorithms' fold for n not a power of two: *pof2 = the largest power of two
  // <= n; ranks below 2 (n - pof2) pair up, the even one handing its part to the odd one (the
  // lower part first in the sum), which stands for both as virtual rank r / 2; the others are
  // virtual rank r - (n - pof2). A handing rank gets the result from its partner here (FoldOut
  // sends it) and *vrank = -1: it is done. `other` is scratch of `bytes`.
  Status FoldIn(char* buf, size_t bytes, char* other, const TcpReducer& red, const TcpWhat& what,
                int* pof2, int* vrank);
  Status FoldOut(char* buf, size_t bytes, int pof2, const TcpWhat& what);

  TcpTransport* const t_;
  const int rank_;
  const int size_;
  TcpTransport::Clock::duration timeout_{};
  // 2 * (size - 1) slots, the most any plan uses, allocated once: a stream's `source` may
  // point at another slot.
  std::vector<TcpStream> streams_;
  size_t used_ = 0;               // slots of the plan being built
  std::vector<size_t> offsets_;   // prefix sums of the plan's per-rank sizes
  std::vector<size_t> offsets2_;  // the second table (alltoallv's receive side)
  std::vector<char> scratch_;     // grown (to at least scratch_floor_), never shrunk
  // The current Ring's buffer as parts (one for a contiguous buffer; the caller's, valid
  // during that call only) and their byte offsets.
  std::span<const TcpPiece> parts_;
  std::vector<size_t> part_starts_;
  size_t scratch_floor_ = 0;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_TCP_TCP_ALGORITHMS_H_
