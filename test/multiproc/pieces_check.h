#ifndef HVD_TEST_MULTIPROC_PIECES_CHECK_H_
#define HVD_TEST_MULTIPROC_PIECES_CHECK_H_

#include <cstdint>

#include "runtime/transports/communicator.h"

namespace hvd::test {

// For a communicator with allreduces_pieces(), in a forked rank: runs AllreducePieces over
// several layouts (one piece; many small ones; pieces across the transport's small-message and
// chunk limits; zero-length pieces; in place and not; in some layouts a piece without input on
// rank 1 (a joined rank's zeros) and one whose result is dropped), dtypes and ops, and demands
// that every output holds exactly the bits Allreduce gives for the same elements packed into
// one buffer, that inputs which are not outputs stay untouched, and that a dropped piece is not
// written; a piece with a negative count is kInvalidArgument saying so. Returns 0, or prints
// the first difference and returns 1.
int CheckAllreducePiecesMatchPacked(runtime::Communicator& comm);

// For any communicator, in a forked rank: ReduceScatterPieces and AllgatherPieces over the same
// layouts, dtypes and ops, with even and uneven per-rank counts (one rank's empty), demanding
// the bits of ReduceScatter of the packed input and of Allgatherv into one buffer, untouched
// inputs, and no write to a dropped piece; pieces that do not hold the counts' total are
// kInvalidArgument naming both sizes. Returns 0, or prints the first difference and
// returns 1.
int CheckScatterGatherPiecesMatchPacked(runtime::Communicator& comm);

// The same checks without the layouts of more than `max_elements` elements: for groups with no
// chunk limits (the in-process fakes), where the largest layout (633,335 elements) only costs
// time, most of all under the sanitizers' allocators (fresh pages for every large buffer).
int CheckAllreducePiecesMatchPackedUpTo(runtime::Communicator& comm, int64_t max_elements);
int CheckScatterGatherPiecesMatchPackedUpTo(runtime::Communicator& comm, int64_t max_elements);

}  // namespace hvd::test

#endif  // HVD_TEST_MULTIPROC_PIECES_CHECK_H_
