#ifndef HVD_TEST_MULTIPROC_POSTED_CHECK_H_
#define HVD_TEST_MULTIPROC_POSTED_CHECK_H_

#include <cstdint>
#include <span>

#include "runtime/transports/communicator.h"

namespace hvd::test {

// For a communicator that can post inputs with the AND round (controller.h, "Eager"), in a
// forked rank: the words are ANDed, and posted_inputs() computes each single-tensor collective
// from every member's posted input as the transport's rounds would (allreduce and
// reduce-scatter in rank order: the seeded_values reference), with sizes that differ between
// members. Then its refusals: a call after the round ended, a member that posted less than a
// call needs or nothing at all (kInternal, naming both sizes), a posted size over
// max_posted_bytes or a list of sizes of the wrong length (kInvalidArgument on every member);
// the communicator keeps working after each. `offered`: what posts_inputs() must say. Returns
// 0, or prints the first failure and returns 1.
int CheckPostedInputs(runtime::Communicator& comm, bool offered);
// The same for posting piece by piece (BitwiseAndPostingPieces), where posts_pieces() must be
// `offered`: each member gets its piece of every member's input with the ANDed words, and
// posted_inputs() computes a reducescatter (uneven pieces, empty ones too) and an even
// alltoall from them in rank order; a read of anything but this member's pieces, or of the
// piece of a member that posted nothing, is kInternal naming the bytes posted and needed; a
// piece over max_posted_bytes is refused on every member. Returns 0, or prints the first
// failure and returns 1.
int CheckPostedPieces(runtime::Communicator& comm, bool offered);
// A reducescatter of `counts` elements (member 0 the remainder too) by the communicator's own
// rounds, wherever reduces_segments_in_rank_order() says they reduce in rank order: float32,
// float16 and bfloat16 sums and products, unscaled and scaled by 1/n, each the bits posted
// inputs give (the seeded_values reference), so a lone reducescatter's bits do not depend on
// whether it rode the AND round. Returns 0, or prints the first failure and returns 1.
int CheckReduceScatterInRankOrder(runtime::Communicator& comm, std::span<const int64_t> counts);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_POSTED_CHECK_H_
