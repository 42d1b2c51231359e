#ifndef HVD_RUNTIME_TRANSPORTS_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_COMMUNICATOR_H_

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/transports/data_type.h"

namespace hvd::runtime {

// One tensor of a fused allreduce (Communicator::AllreducePieces): `count` elements read from
// `in` and written to `out`, which may be the same memory. A null `in` contributes zeros (a
// rank that has joined); a null `out` drops the piece's result.
struct AllreducePiece {
  const void* in;
  void* out;
  int64_t count;
};

// Communicator is the seam between the coordinator and a transport (Gloo TCP, shared memory,
// MPI, NCCL, or the in-process fake used by tests). One Communicator spans one group of ranks
// (the global set or a process set); ranks here are positions 0..size()-1 within the group.
//
// Contract: every member calls the same sequence of collectives with matching arguments.
// Calls are made from one thread (the runtime's background thread) and block until done or
// until the communicator's timeout; a dead peer, a socket error or a timeout is a non-OK
// Status (kRemoteError / kTimeout / kIoError) naming the op and, when known, the peer -- never
// an exception and never a hang. After Abort() (callable from any thread) every pending and
// future call fails promptly with kAborted.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Short backend name for logs and the timeline ("GLOO", "MPI", "SHM", "FAKE").
  virtual const char* name() const = 0;

  // ---- control plane (small messages) ----
  // The longest byte string GatherBytes and BroadcastBytes take: a longer announced length is
  // refused (naming its sender) before anything is allocated for it, on every transport.
  static constexpr uint64_t kMaxByteMessage = uint64_t{1} << 30;
  // Gathers a variable-length byte string from every member at `root`; `out` is filled only on
  // the root, indexed by group rank.
  virtual Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) = 0;
  // Broadcasts a variable-length byte string from `root` (resized on the others).
  virtual Status BroadcastBytes(std::string* data, int root) = 0;
  // In-place elementwise AND / OR over all members (response-cache bit vectors).
  virtual Status BitwiseAnd(std::vector<uint64_t>* bits) = 0;
  virtual Status BitwiseOr(std::vector<uint64_t>* bits) = 0;
  virtual Status Barrier() = 0;

  // ---- data plane ----
  // In-place allreduce of `count` elements. Average is not a backend op: the caller passes
  // kSum and post-scales.
  virtual Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) = 0;
  // Allreduce of the pieces' concatenation (the same elements on every member), reading the
  // inputs and writing the outputs where they are. Results are bit-identical to Allreduce of
  // the packed buffer. Transports whose allreduces_pieces() is true do it with no copy into
  // one buffer and back, and their ReduceScatterPieces and AllgatherPieces copy no more than a
  // caller packing into its fusion buffer would (shared memory: nothing) and allocate nothing
  // in steady state; the defaults pack into a temporary buffer and call Allreduce /
  // ReduceScatter / Allgatherv (correct everywhere, one copy each way and an allocation per
  // call: the caller packs into its fusion buffer instead).
  virtual bool allreduces_pieces() const { return false; }
  virtual Status AllreducePieces(std::span<const AllreducePiece> pieces, DataType dtype,
                                 ReduceOp op);
  // ReduceScatter whose input is the pieces' concatenation (their `in`; null: zeros), whose
  // element total must be the sum of counts_per_rank. Bit-identical to ReduceScatter of the
  // packed input.
  virtual Status ReduceScatterPieces(std::span<const AllreducePiece> pieces, void* out,
                                     const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                     ReduceOp op);
  // Allgather whose output is the pieces' concatenation (their `out`; null: dropped): member i
  // contributes counts_per_rank[i] elements of `dtype` from `in`, which must not overlap an
  // output.
  virtual Status AllgatherPieces(const void* in, std::span<const AllreducePiece> pieces,
                                 const std::vector<int64_t>& counts_per_rank, DataType dtype);
  // Allreduce and AllreducePieces with every result then multiplied by `scale` as ScaleBuffer
  // multiplies (Average's 1/n times a postscale; 1: none). The defaults run the op and then
  // ScaleBuffer over the results: one more pass over them. Shared memory and hvd's TCP have
  // each slice's (ring segment's) reducer scale it before the others copy it, so the results
  // take no pass of their own (the same bits), and shared memory scales float16/bfloat16 sums in
  // float before their one rounding (ReduceHeldInputs): a mean whose sum overflows the type is
  // not inf there. Every member
  // passes the same scale (a slice's reducer scales it for all), a joined member's pieces without
  // output included.
  virtual Status AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                                 double scale);
  virtual Status AllreducePiecesScaled(std::span<const AllreducePiece> pieces, DataType dtype,
                                       ReduceOp op, double scale);
  // ReduceScatter and ReduceScatterPieces with this member's result then multiplied by `scale`
  // (Average's 1/n times a postscale; 1: none). The defaults run the op and then ScaleBuffer
  // over `out`. Shared memory, hvd's TCP, posted inputs and the hierarchy scale the slice as its
  // last reduction completes it (shared memory: float16/bfloat16 sums in float before their
  // rounding), so it takes no pass of its own.
  virtual Status ReduceScatterScaled(const void* in, void* out,
                                     const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                     ReduceOp op, double scale);
  virtual Status ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                           const std::vector<int64_t>& counts_per_rank,
                                           DataType dtype, ReduceOp op, double scale);
  // The negotiation's AND round with a small allreduce riding along (controller.h, "Eager"):
  // the first `and_words` of `words` are ANDed and the `count` elements of `dtype` that follow
  // them (8-byte aligned; the words after them are padding) are reduced with `op`, all in one
  // collective, so that a lone small allreduce costs one round trip instead of two. Results are
  // the same bits on every member. Only transports whose ands_with_allreduce() is true
  // implement it (the default returns kUnimplemented).
  virtual bool ands_with_allreduce() const { return false; }
  // Whether an allreduce of `count` elements of `dtype` riding BitwiseAndWithAllreduce reduces
  // every element in the order this communicator's own Allreduce would, so that an op gives the
  // same bits whichever path it takes from one step to the next (it rides only when it is the
  // cycle's lone op: Controller::EagerEligible). Depends only on the arguments and on what the
  // group was built with, so it is the same on every member, and a smaller count of the same
  // dtype never answers false where a larger one answers true.
  virtual bool rides_allreduce_as_own(int64_t count, DataType dtype) const {
    (void)count;
    (void)dtype;
    return false;
  }
  virtual Status BitwiseAndWithAllreduce(std::span<uint64_t> words, size_t and_words, int64_t count,
                                         DataType dtype, ReduceOp op);
  // The negotiation's AND round with this member's input to one op riding along, for
  // transports whose posts_inputs() is true (shared memory, hvd's TCP; controller.h, "Eager"):
  // ANDs `words` in place across members, each member k also posting posted_bytes[k] bytes
  // (the same list on every member; the sizes may differ between members), and leaves every
  // member's posted input readable through posted_inputs() until the next call on this
  // communicator. This member posts posted_bytes[rank()] bytes of `input`, or, with `input`
  // null, nothing (its posted length reads 0; a transport that sends fixed-size blocks sends
  // filler). Each size must be at most max_posted_bytes(words.size()), which is the same on
  // every member; otherwise every member fails with kInvalidArgument before any round.
  virtual bool posts_inputs() const { return false; }
  virtual size_t max_posted_bytes(size_t words) const {
    (void)words;
    return 0;
  }
  virtual Status BitwiseAndPostingInput(std::span<uint64_t> words, const void* input,
                                        std::span<const int64_t> posted_bytes);
  // The most bytes a member may post beyond what the op itself moves to the others, asked for
  // an op that would post `surplus` such bytes (an alltoall, reducescatter or allreduce posts
  // its whole input to every member, which uses 1/size of it: Controller::PostedSurplusBytes).
  // Every member calls it at the same point of the same sequence of calls and gets the same
  // answer; it may run a collective to learn it (hvd's TCP measures its links once). Unlimited
  // where posting is a memory copy; on a network about what the links carry in the round that
  // posting saves.
  virtual Result<int64_t> PostedSurplusLimit(int64_t surplus) {
    (void)surplus;
    return INT64_MAX;
  }
  // How many times the eager limit (HVD_EAGER_ALLREDUCE_BYTES) an op that posts nothing beyond
  // what it moves (a broadcast, an allgather: Controller::PostedSurplusBytes is 0; any op where
  // posting_costs_a_copy()) may post, at most kMaxPostedCopyFactor.
  // Posting such an op costs the copy the op makes anyway, so what decides is the round it
  // saves, which costs more where members wait to be scheduled (shared memory with more ranks
  // than CPUs). The same on every member.
  virtual int posted_copy_factor() const { return 1; }
  // Whether posting any op costs only the copy of its input that the op's own rounds make:
  // each member reads from the posted inputs only what those rounds would have it read (an
  // allreduce's slice of every input past the direct size, a reducescatter's or alltoall's
  // piece), so the surplus is never moved and every posted op, not only a broadcast or an
  // allgather, may go up to the limit times posted_copy_factor(). True for shared memory. The
  // same on every member.
  virtual bool posting_costs_a_copy() const { return false; }
  // The most times the limit an op may be posted: what was measured (16 ranks on 2 CPUs, 8
  // per CPU: 256 KiB posted level with the op's own rounds; docs/eager.md "Eager on shared
  // memory").
  static constexpr int kMaxPostedCopyFactor = 8;
  // Posting piece by piece, for an op whose every member's input is cut at the same boundaries
  // into size() pieces, piece j for member j, as an even alltoall of equal tensors and a
  // reducescatter are: each member sends member j only piece j (piece_bytes[j] bytes, the list
  // the same on every member), with its words, so nothing crosses that its receiver does not
  // use (no surplus to bound: PostedSurplusLimit) and the round is one exchange with every
  // peer. ANDs `words` as BitwiseAndPostingInput does; `input` null posts nothing (the pieces'
  // posted lengths read 0). posted_inputs() then serves this member's pieces only: member k's
  // input reads as bytes [o, o + piece_bytes[rank()]) of it, o the sum of the pieces before
  // this member's, and any other read fails (kInternal). Sizes as BitwiseAndPostingInput's.
  virtual bool posts_pieces() const { return false; }
  // Whether an op that can post pieces should even where its whole input may be posted: here
  // the pieces take the same exchange as whole inputs would, and send less.
  virtual bool pieces_first() const { return false; }
  virtual Status BitwiseAndPostingPieces(std::span<uint64_t> words, const void* input,
                                         std::span<const int64_t> piece_bytes);
  // After BitwiseAndPostingInput, until the next call on this communicator: a communicator of
  // the same members whose single-tensor collectives (Allreduce, Allgatherv, Broadcast,
  // ReduceScatter, an AlltoallvAgreed in which each member sends the same bytes to every
  // member) take every member's input from what it posted and compute this member's result
  // without a round. Its other calls fail (kInternal). Null where posts_inputs() is false.
  virtual Communicator* posted_inputs() { return nullptr; }
  // Whether this communicator's own ReduceScatter, with no member's segment over
  // `segment_bytes`, reduces every element in rank order as posted inputs do (ReduceHeldInputs:
  // float16/bfloat16 sums in float, one rounding). A reducescatter rides the AND round only
  // then, so that an op gives the same bits whichever path it takes from one step to the next
  // (Controller::EagerEligible). The same on every member.
  virtual bool reduces_segments_in_rank_order(int64_t segment_bytes) const {
    (void)segment_bytes;
    return false;
  }
  // Member i contributes bytes_per_rank[i] bytes (`in` holds this member's part); `out`
  // receives the concatenation in group-rank order.
  virtual Status Allgatherv(const void* in, void* out,
                            const std::vector<int64_t>& bytes_per_rank) = 0;
  virtual Status Broadcast(void* buffer, int64_t bytes, int root) = 0;
  // send_bytes[i] bytes go to member i, taken consecutively from `in`; recv_bytes[i] bytes
  // from member i land consecutively in `out`.
  virtual Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                           const std::vector<int64_t>& recv_bytes) = 0;
  // Alltoallv whose sizes every member computed from the same agreed data (a negotiated
  // response), so they match by construction, and `max_piece` is the largest any member sends
  // to any other: a backend may skip exchanging (and checking) the sizes. Default: Alltoallv.
  virtual Status AlltoallvAgreed(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                 const std::vector<int64_t>& recv_bytes, int64_t max_piece) {
    return Alltoallv(in, send_bytes, out, recv_bytes);
  }
  // Reduces `in` (sum of counts_per_rank elements) across members; member i receives its
  // counts_per_rank[i] elements of the result in `out`. Default: allreduce into a scratch
  // copy, then slice; backends override with a real reduce-scatter.
  virtual Status ReduceScatter(const void* in, void* out,
                               const std::vector<int64_t>& counts_per_rank, DataType dtype,
                               ReduceOp op);

  // Fails every blocked and future call with kAborted. Thread-safe.
  virtual void Abort() = 0;

  // For a caller waiting on work of the same members that this communicator does not carry (a
  // NCCL collective, which may never notice a lost peer: over shared memory or NVLink it waits
  // for ever): whether a member is known to be gone, without blocking and without touching
  // data in flight. kRemoteError naming it (its process exited, its connection was closed or
  // reset); OK when none is known, or the transport cannot tell (MPI). Called by the
  // thread that makes the calls, between them.
  virtual Status CheckPeers() { return Status::OK(); }

  // The member (by this communicator's rank) whose loss failed a call: its process ended, its
  // connection was closed or reset, or its host stopped answering; the first this communicator
  // saw, -1 for none (also where the transport cannot tell: MPI). A member that failed on its
  // own peer's loss closes its connections too, so this may name that member rather than the
  // one that died first; hvdrun follows such a chain (Runtime::ReportLostMember). Thread-safe.
  virtual int lost_member() const { return -1; }

  // A hierarchical communicator's groups (hierarchical_communicator.h) when its allreduce goes
  // through the hierarchy: this member's host and its cross group (this local rank on every
  // host). Both null for any other communicator. The GPU path runs its hierarchical allreduce
  // on them (NCCL within the host, `cross` between hosts); they belong to this communicator.
  struct Hierarchy {
    Communicator* local = nullptr;
    Communicator* cross = nullptr;
  };
  virtual Hierarchy hierarchy() { return {}; }
};

// A Communicator that folds the scale into its reductions (shared memory, hvd's TCP, the
// hierarchy): it implements the scaled allreduces and reduce-scatters, and the plain ones are
// those with a scale of 1. The scaled four are abstract again here, so the plain ones never
// reach the defaults, which call them.
class ScalingCommunicator : public Communicator {
 public:
  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) final {
    return AllreduceScaled(buffer, count, dtype, op, 1.0);
  }
  Status AllreducePieces(std::span<const AllreducePiece> pieces, DataType dtype,
                         ReduceOp op) final {
    return AllreducePiecesScaled(pieces, dtype, op, 1.0);
  }
  Status ReduceScatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op) final {
    return ReduceScatterScaled(in, out, counts_per_rank, dtype, op, 1.0);
  }
  Status ReduceScatterPieces(std::span<const AllreducePiece> pieces, void* out,
                             const std::vector<int64_t>& counts_per_rank, DataType dtype,
                             ReduceOp op) final {
    return ReduceScatterPiecesScaled(pieces, out, counts_per_rank, dtype, op, 1.0);
  }
  Status AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                         double scale) override = 0;
  Status AllreducePiecesScaled(std::span<const AllreducePiece> pieces, DataType dtype, ReduceOp op,
                               double scale) override = 0;
  Status ReduceScatterScaled(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                             DataType dtype, ReduceOp op, double scale) override = 0;
  Status ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                   const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                   ReduceOp op, double scale) override = 0;
};

// Argument checks shared by the backends. `what` names the op and the rank in the message:
// a std::string, or a callable returning one that is called only when the check fails, so a
// valid call builds no string (the steady state allocates nothing). A root outside
// [0, size) / a per-rank list of the wrong length or with a negative entry is
// kInvalidArgument.
template <typename What>
Status CheckRootArg(const What& what, int root, int size);
template <typename What>
Status CheckPerRankArg(const What& what, const std::vector<int64_t>& per_rank, int size);
// "allreduce (float32 Sum, 1000 elements)": how backends name an allreduce in messages.
std::string AllreduceOpName(int64_t count, DataType dtype, ReduceOp op);
// A negative count or a NULL buffer with elements is kInvalidArgument ("<what>: bad buffer");
// Adasum, which is not elementwise, is kUnimplemented.
template <typename What>
Status CheckAllreduceArgs(const What& what, const void* buffer, int64_t count, ReduceOp op);
// BitwiseAndWithAllreduce's arguments: CheckAllreduceArgs, and `words` must hold `and_words`
// words and then `count` elements of `dtype` (kInvalidArgument naming both sizes).
template <typename What>
Status CheckAndWithAllreduceArgs(const What& what, std::span<const uint64_t> words,
                                 size_t and_words, int64_t count, DataType dtype, ReduceOp op);
// BitwiseAndPostingInput's sizes: one per member, each in [0, most] (kInvalidArgument naming
// the size and the member; the same verdict on every member, before any round).
template <typename What>
Status CheckPostingArgs(const What& what, std::span<const int64_t> posted_bytes, int size,
                        size_t most);

// What a transport keeps for Communicator::lost_member: the first member it noted lost (a
// negative one is none). Note and get from any thread.
class FirstLostMember {
 public:
  void Note(int member) {
    int none = -1;
    if (member >= 0) member_.compare_exchange_strong(none, member);
  }
  int get() const { return member_.load(); }

 private:
  std::atomic<int> member_{-1};
};

// For Communicator::CheckPeers over sockets: one poll(2) of `fds` that waits for nothing and
// reads nothing, for the first socket whose connection the kernel saw closed or reset
// (POLLRDHUP, POLLHUP, POLLERR: its peer's process ended, or its host is gone). Returns that
// socket's index, with its pending error in *error (0: none), or -1 when there is none.
int FirstClosedSocket(std::span<const int> fds, int* error);

namespace internal {
inline std::string Name(const std::string& what) { return what; }
template <typename F>
requires std::invocable<const F&> std::string Name(const F& what) { return what(); }
Status RootArgError(const std::string& what, int root, int size);
Status PerRankArgError(const std::string& what, const std::vector<int64_t>& per_rank, int size);
Status AllreduceArgError(const std::string& what, const void* buffer, int64_t count, ReduceOp op);
Status AndWithAllreduceLayoutError(const std::string& what, size_t words, size_t and_words,
                                   size_t tail_bytes);
Status PostingArgError(const std::string& what, std::span<const int64_t> posted_bytes, int size,
                       size_t most);
}  // namespace internal

template <typename What>
Status CheckRootArg(const What& what, int root, int size) {
  if (root >= 0 && root < size) return Status::OK();
  return internal::RootArgError(internal::Name(what), root, size);
}

template <typename What>
Status CheckPerRankArg(const What& what, const std::vector<int64_t>& per_rank, int size) {
  bool ok = static_cast<int>(per_rank.size()) == size;
  for (int64_t x : per_rank) ok = ok && x >= 0;
  if (ok) return Status::OK();
  return internal::PerRankArgError(internal::Name(what), per_rank, size);
}

template <typename What>
Status CheckPostingArgs(const What& what, std::span<const int64_t> posted_bytes, int size,
                        size_t most) {
  bool ok = static_cast<int>(posted_bytes.size()) == size;
  for (int64_t b : posted_bytes) ok = ok && b >= 0 && static_cast<uint64_t>(b) <= most;
  if (ok) return Status::OK();
  return internal::PostingArgError(internal::Name(what), posted_bytes, size, most);
}

template <typename What>
Status CheckAllreduceArgs(const What& what, const void* buffer, int64_t count, ReduceOp op) {
  if (count >= 0 && (count == 0 || buffer != nullptr) && op != ReduceOp::kAdasum) {
    return Status::OK();
  }
  return internal::AllreduceArgError(internal::Name(what), buffer, count, op);
}

template <typename What>
Status CheckAndWithAllreduceArgs(const What& what, std::span<const uint64_t> words,
                                 size_t and_words, int64_t count, DataType dtype, ReduceOp op) {
  HVD_RETURN_IF_ERROR(CheckAllreduceArgs(what, words.data(), count, op));
  const size_t tail_bytes = static_cast<size_t>(count) * DataTypeSize(dtype);
  if (and_words <= words.size() && tail_bytes <= (words.size() - and_words) * sizeof(uint64_t)) {
    return Status::OK();
  }
  return internal::AndWithAllreduceLayoutError(internal::Name(what), words.size(), and_words,
                                               tail_bytes);
}

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_COMMUNICATOR_H_
