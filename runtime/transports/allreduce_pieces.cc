#include "runtime/transports/allreduce_pieces.h"

#include <cstring>
#include <string>

namespace hvd::runtime {

bool PieceView::Index(std::span<const AllreducePiece> pieces, std::vector<int64_t>* starts) {
  starts->resize(pieces.size() + 1);
  (*starts)[0] = 0;
  bool ok = true;
  for (size_t i = 0; i < pieces.size(); ++i) {
    ok = ok && pieces[i].count >= 0;
    (*starts)[i + 1] = (*starts)[i] + std::max<int64_t>(pieces[i].count, 0);
  }
  return ok;
}

void PieceView::Gather(int64_t lo, int64_t n, char* dst) const {
  ForEachOverlap(starts_, lo, n, [&](size_t i, int64_t in_piece, int64_t in_range, int64_t len) {
    char* to = dst + in_range * elem_;
    const size_t bytes = static_cast<size_t>(len * elem_);
    if (pieces_[i].in != nullptr) {
      std::memcpy(to, static_cast<const char*>(pieces_[i].in) + in_piece * elem_, bytes);
    } else {
      std::memset(to, 0, bytes);
    }
  });
}

void PieceView::Scatter(int64_t lo, int64_t n, const char* src) const {
  ForEachOverlap(starts_, lo, n, [&](size_t i, int64_t in_piece, int64_t in_range, int64_t len) {
    if (pieces_[i].out == nullptr) return;
    std::memcpy(static_cast<char*>(pieces_[i].out) + in_piece * elem_, src + in_range * elem_,
                static_cast<size_t>(len * elem_));
  });
}

namespace internal {

Status PiecesTotalError(const std::string& what, int64_t pieces_total, bool negative,
                        int64_t counts_total) {
  return Status::InvalidArgument(what + ": pieces of " + std::to_string(pieces_total) +
                                 " elements" + (negative ? " (a negative count)" : "") +
                                 " for per-rank counts summing to " + std::to_string(counts_total));
}

Status NegativePieceError(const std::string& what) {
  return Status::InvalidArgument(what + ": a piece has a negative count");
}

}  // namespace internal

}  // namespace hvd::runtime
