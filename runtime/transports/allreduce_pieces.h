#ifndef HVD_RUNTIME_TRANSPORTS_ALLREDUCE_PIECES_H_
#define HVD_RUNTIME_TRANSPORTS_ALLREDUCE_PIECES_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/transports/communicator.h"

// What the transports that take a fused allreduce's tensors in place
// (Communicator::AllreducePieces: shm, tcp) share: walking a range of a concatenation of
// pieces, and copying such a range in and out.
namespace hvd::runtime {

// Calls f(i, first unit within part i, first unit within [lo, lo + n), length) for each part
// i overlapping [lo, lo + n), in order. `starts` has one entry per part plus one: starts[i] is
// part i's first unit (element or byte), the last entry the total. Empty parts are skipped.
template <typename Int, typename F>
void ForEachOverlap(std::span<const Int> starts, Int lo, Int n, F&& f) {
  const Int hi = lo + n;
  // The last part starting at or before lo.
  size_t i =
      static_cast<size_t>(std::upper_bound(starts.begin(), starts.end() - 1, lo) - starts.begin());
  i = i == 0 ? 0 : i - 1;
  for (Int at = lo; at < hi && i + 1 < starts.size(); ++i) {
    const Int end = std::min(hi, starts[i + 1]);
    if (end <= at) continue;
    f(i, at - starts[i], at - lo, end - at);
    at = end;
  }
}

// The pieces of a fused allreduce seen as one buffer of elements.
class PieceView {
 public:
  // Fills `starts` (its capacity reused) with the pieces' first elements and the total, as
  // the constructor takes them; false when a piece has a negative count.
  static bool Index(std::span<const AllreducePiece> pieces, std::vector<int64_t>* starts);

  PieceView(std::span<const AllreducePiece> pieces, std::span<const int64_t> starts,
            int64_t elem_bytes)
      : pieces_(pieces), starts_(starts), elem_(elem_bytes) {}
  int64_t count() const { return starts_.back(); }
  std::span<const AllreducePiece> pieces() const { return pieces_; }
  std::span<const int64_t> starts() const { return starts_; }
  int64_t elem_bytes() const { return elem_; }
  // Copies elements [lo, lo + n) of the inputs to `dst` (zeros for a piece without input).
  void Gather(int64_t lo, int64_t n, char* dst) const;
  // Copies `n` elements from `src` to elements [lo, lo + n) of the outputs (none to a piece
  // without output).
  void Scatter(int64_t lo, int64_t n, const char* src) const;

 private:
  std::span<const AllreducePiece> pieces_;
  std::span<const int64_t> starts_;
  int64_t elem_;
};

namespace internal {
Status PiecesTotalError(const std::string& what, int64_t pieces_total, bool negative,
                        int64_t counts_total);
Status NegativePieceError(const std::string& what);
}  // namespace internal

// AllreducePieces' argument checks, given PieceView::Index's answer (`indexed`) and the total
// `count`: a piece with a negative count is kInvalidArgument, the op is checked as in
// CheckAllreduceArgs. The pieces' buffers are not (a null input is a joined rank's zeros).
// `what` as in CheckAllreduceArgs (communicator.h): built only on failure.
template <typename What>
Status CheckAllreducePiecesArgs(const What& what, std::span<const AllreducePiece> pieces,
                                bool indexed, int64_t count, ReduceOp op) {
  if (!indexed) return internal::NegativePieceError(internal::Name(what));
  return CheckAllreduceArgs(what, pieces.data(), count, op);
}

// Indexes `pieces` (PieceView::Index) for a collective over them whose per-member counts are
// `counts` (ReduceScatterPieces, AllgatherPieces): kInvalidArgument naming both totals when a
// piece's count is negative or the pieces do not hold the counts' sum. `what` as in
// CheckAllreduceArgs (communicator.h): built only on failure.
template <typename What>
Status IndexPiecesForCounts(const What& what, std::span<const AllreducePiece> pieces,
                            const std::vector<int64_t>& counts, std::vector<int64_t>* starts) {
  const bool ok = PieceView::Index(pieces, starts);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (ok && starts->back() == total) return Status::OK();
  return internal::PiecesTotalError(internal::Name(what), starts->back(), !ok, total);
}

// The buffers AllgatherPiecesThroughBuffer reuses; grown, never shrunk.
struct GatherScratch {
  std::vector<int64_t> starts;
  std::vector<int64_t> bytes;
  std::vector<char> packed;
};

// AllgatherPieces for a transport without a scatter of its own: comm->Allgatherv into
// `scratch->packed`, then one copy into the pieces (the copy a caller packing into its fusion
// buffer makes anyway); with a kept scratch the steady state allocates nothing. Arguments as
// Communicator::AllgatherPieces; the totals' error names comm->name() and `what`.
Status AllgatherPiecesThroughBuffer(Communicator* comm, const char* what, const void* in,
                                    std::span<const AllreducePiece> pieces,
                                    const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                    GatherScratch* scratch);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_ALLREDUCE_PIECES_H_
