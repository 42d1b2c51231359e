#ifndef HVD_RUNTIME_TRANSPORTS_SHM_SHM_REDUCTIONS_H_
#define HVD_RUNTIME_TRANSPORTS_SHM_SHM_REDUCTIONS_H_

#include <cstdint>

#include "common/status.h"
#include "runtime/transports/allreduce_pieces.h"
#include "runtime/transports/data_type.h"
#include "runtime/transports/shm/shm_channel.h"

// The reducing collectives of the shared-memory communicator, as rounds on a ShmChannel whose
// call the caller has started (ShmChannel::Start) and whose arguments it has validated. Every
// element is reduced by exactly one member, in rank order 0..N-1, then copied, so all members
// get bit-identical results. Same threading as ShmChannel.
namespace hvd::runtime {

// Allreduces up to this size take one round in which every member reduces everything: one
// synchronization instead of two beats reading N inputs for small buffers.
constexpr int64_t kShmDirectBytes = int64_t{64} << 10;

// The per-member slice length when `n` elements are split among `size` members (slices start on
// a cache line; the last ones may be short or empty).
int64_t SliceElements(int64_t n, int size, int64_t elem);

// In-place allreduce of `count` elements (count > 0, kAdasum excluded).
Status ShmAllreduce(ShmChannel& ch, char* buf, int64_t count, DataType dtype, ReduceOp op);

// ShmAllreduce of the pieces' concatenation (count() > 0): the inputs are copied straight into
// the channel's halves and the results straight out to the outputs, with the same rounds, chunks
// and rank-order reduction as ShmAllreduce of the packed buffer (so the same bits). `scratch`
// holds ShmPiecesScratchBytes bytes (this member's reduced slice of a chunk).
Status ShmAllreducePieces(ShmChannel& ch, const PieceView& pieces, DataType dtype, ReduceOp op,
                          char* scratch);
size_t ShmPiecesScratchBytes(const ShmChannel& ch);

// Reduces the concatenation of `in`'s inputs (the same element count on every member) and
// writes elements [mine_lo, mine_lo + mine_count) of the result to `out`, which must not
// overlap an input.
Status ShmReduceScatter(ShmChannel& ch, const PieceView& in, char* out, int64_t mine_lo,
                        int64_t mine_count, DataType dtype, ReduceOp op);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SHM_SHM_REDUCTIONS_H_
