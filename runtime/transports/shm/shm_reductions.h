#ifndef HVD_RUNTIME_TRANSPORTS_SHM_SHM_REDUCTIONS_H_
#define HVD_RUNTIME_TRANSPORTS_SHM_SHM_REDUCTIONS_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "runtime/transports/allreduce_pieces.h"
#include "runtime/transports/data_type.h"
#include "runtime/transports/shm/shm_channel.h"

// The reducing collectives of the shared-memory communicator, as rounds on a ShmChannel whose
// call the caller has started (ShmChannel::Start) and whose arguments it has validated. Every
// element is reduced by exactly one member, in rank order 0..N-1 (float16/bfloat16 sums and
// products accumulated in float and rounded once: AccumulatesInFloat), then copied, so all
// members get bit-identical results. An allreduce's or reduce-scatter's `scale` (ScaleBuffer's
// factor, 1: none) is applied by that member to what it reduced, in the reduction's last pass and
// before the others copy it (ReduceHeldInputs: float16/bfloat16 sums in float before their
// rounding, float32/float64 in ReduceStep's pass), so the results take no pass of their own.
// Same threading as ShmChannel.
namespace hvd::runtime {

// Allreduces up to a group's direct size (at most this) take one round in which every member
// reads and reduces all N inputs (AllreduceDirect); larger ones a reduce-scatter and an
// allgather round, in which each member reads about two inputs' worth. One synchronization
// instead of two wins while the N inputs are small.
constexpr int64_t kShmDirectBytes = int64_t{64} << 10;

// The direct size of a group of `members` with `ranks_per_cpu` ranks per CPU on the machine
// (RanksPerCpu), from a cost model fitted to the 16-core machine's table of 2026-11-26 (README):
// reading a peer's staged bytes runs at about B = 5 GB/s per member (2 ranks 64 KiB direct 14.8
// us, 8 ranks 94 us, 16 ranks 186 us: each (N-1) x 64 KiB / B plus a round), a round costs
// r ~ 5 us, and a local copy a quarter of a read. Direct: r + (N-1) S / B. Two rounds: 2r + S / 4B
// (the copy in) + 2 (N-1) S / (N B) (the slice's N inputs, the others' slices). Direct wins while
// S (N-1)(N-2) / N <= r B + S / 4, i.e. about S (N-1)(N-2) / N <= 32 KiB: 2 members always (up
// to the 64 KiB cap), 3 members 48 KiB, 4 members 21 KiB, 8 members 6 KiB, 16 members 2.4 KiB, at
// least 1 KiB. With more ranks than CPUs a round is a scheduling turn per rank sharing a CPU,
// far more than r, and the cap stays (the 2-vCPU VM's 3- and 4-rank rows were measured so).
// Measured on that machine on 2026-11-27 against 64 KiB for every group (docs/benchmarks-16-core.md
// "Direct size"): the two rounds win wherever the rule picks them; their measured crossover
// looks lower still (~14 / 3 / 1.4 KiB at 4 / 8 / 16), by extrapolation only, so r B here is
// kept until the sizes between are run.
int64_t ShmDirectBytes(int members, int ranks_per_cpu);

// The per-member slice length when `n` elements are split among `size` members (slices start on
// a cache line; the last ones may be short or empty).
int64_t SliceElements(int64_t n, int size, int64_t elem);

// `n` elements split into per-member slices of `per` (SliceElements): member k's starts at
// element lo(k) and has len(k) elements (the last ones may be short or empty).
struct Slices {
  int64_t n, per;
  static Slices Of(int64_t n, int size, int64_t elem) { return {n, SliceElements(n, size, elem)}; }
  int64_t lo(int k) const { return std::min<int64_t>(n, per * k); }
  int64_t len(int k) const { return std::min<int64_t>(n, lo(k) + per) - lo(k); }
};

// In-place allreduce of `count` elements (count > 0, kAdasum excluded); one round up to
// `direct_bytes` (the same on every member; ShmDirectBytes), else two per chunk of a half.
Status ShmAllreduce(ShmChannel& ch, char* buf, int64_t count, DataType dtype, ReduceOp op,
                    int64_t direct_bytes, double scale);

// ShmAllreduce of the pieces' concatenation (count() > 0): the inputs are copied straight into
// the channel's halves and the results straight out to the outputs, with the same rounds, chunks
// and rank-order reduction as ShmAllreduce of the packed buffer (so the same bits). `scratch`
// holds ShmPiecesScratchBytes bytes (this member's reduced slice of a chunk).
Status ShmAllreducePieces(ShmChannel& ch, const PieceView& pieces, DataType dtype, ReduceOp op,
                          int64_t direct_bytes, double scale, char* scratch);
size_t ShmPiecesScratchBytes(const ShmChannel& ch);

// The allreduce of inputs every member posted with the channel's held round
// (ShmCommunicator::BitwiseAndPostingInput: `count` elements of member k's input at `offset` of
// its half; the caller checked that each posted them, and size() >= 2), into `buf`: each member
// reduces its slice of every posted input in rank order, then the held round is ended and one
// more round exchanges the slices — the reduce-scatter of the two-round allreduce rides the
// negotiation's round. Each member reads about two inputs' worth, where reducing every posted
// input (PostedInputs::Allreduce) reads N: used past the group's direct size. The same bits as
// ShmAllreduce of the inputs.
Status ShmAllreducePostedSliced(ShmChannel& ch, size_t offset, char* buf, int64_t count,
                                DataType dtype, ReduceOp op, double scale);

// The sub-slots of a half that the alltoall and the balanced reduce-scatter give every other
// member (a member's own piece never goes through its half, so a slot for it would only make
// the rounds smaller): a half per other member, in whole cache lines.
size_t ShmSubSlotBytes(const ShmChannel& ch);
// Where in the sender's half the sub-slot for `dest` (!= sender) starts, in sub-slots: the other
// members in rank order, the sender left out.
inline size_t ShmSubSlot(int dest, int sender) {
  return static_cast<size_t>(dest > sender ? dest - 1 : dest);
}

// Reduces the concatenation of `in`'s inputs (the same element counts on every member: member k
// gets `counts[k]` elements, the segments in rank order) and writes this member's segment of the
// result, scaled by `scale`, to `out`, which must not overlap an input; each element reduced in
// rank order (the same bits as the allreduce's). `balanced` (the same on every member): in each
// round every member copies its next part of every other member's segment into that member's
// sub-slot of its half (ShmSubSlotBytes) and reduces its own next part from its own input
// and the peers' sub-slots, so every member reduces in every round and copies (n-1)/n of its
// input. Else rounds of one half's chunk of the input, which every member copies whole and the
// members whose segments it holds reduce: fewer waits, for many ranks per CPU. `scratch` takes
// the own part where no one piece holds it (grown to a sub-slot the first time).
Status ShmReduceScatter(ShmChannel& ch, const PieceView& in, char* out,
                        std::span<const int64_t> counts, DataType dtype, ReduceOp op, double scale,
                        bool balanced, std::vector<char>* scratch);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SHM_SHM_REDUCTIONS_H_
