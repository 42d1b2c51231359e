#include "runtime/transports/communicator.h"

#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <numeric>

#include "runtime/transports/allreduce_pieces.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {

namespace internal {

Status RootArgError(const std::string& what, int root, int size) {
  return Status::InvalidArgument(what + ": root " + std::to_string(root) + " is not in [0, " +
                                 std::to_string(size) + ")");
}

Status PerRankArgError(const std::string& what, const std::vector<int64_t>& per_rank, int size) {
  if (static_cast<int>(per_rank.size()) != size) {
    return Status::InvalidArgument(what + ": " + std::to_string(per_rank.size()) +
                                   " per-rank entries for a group of " + std::to_string(size));
  }
  return Status::InvalidArgument(what + ": negative per-rank size");
}

Status PostingArgError(const std::string& what, std::span<const int64_t> posted_bytes, int size,
                       size_t most) {
  if (static_cast<int>(posted_bytes.size()) != size) {
    return Status::InvalidArgument(what + ": " + std::to_string(posted_bytes.size()) +
                                   " posted sizes for a group of " + std::to_string(size));
  }
  for (size_t k = 0; k < posted_bytes.size(); ++k) {
    if (posted_bytes[k] < 0 || static_cast<uint64_t>(posted_bytes[k]) > most) {
      return Status::InvalidArgument(what + ": cannot post " + std::to_string(posted_bytes[k]) +
                                     " bytes for rank " + std::to_string(k) + " (at most " +
                                     std::to_string(most) + ")");
    }
  }
  return Status::InvalidArgument(what + ": bad posted sizes");
}

Status AllreduceArgError(const std::string& what, const void* buffer, int64_t count, ReduceOp op) {
  if (count < 0 || (count > 0 && buffer == nullptr)) {
    return Status::InvalidArgument(what + ": bad buffer");
  }
  (void)op;  // the only other failure
  return Status::Unimplemented(what + ": Adasum is not an elementwise reduction");
}

Status AndWithAllreduceLayoutError(const std::string& what, size_t words, size_t and_words,
                                   size_t tail_bytes) {
  return Status::InvalidArgument(what + ": " + std::to_string(words) + " words cannot hold " +
                                 std::to_string(and_words) + " words and " +
                                 std::to_string(tail_bytes) + " bytes");
}

}  // namespace internal

std::string AllreduceOpName(int64_t count, DataType dtype, ReduceOp op) {
  return std::string("allreduce (") + DataTypeName(dtype) + " " + ReduceOpName(op) + ", " +
         std::to_string(count) + " elements)";
}

Status Communicator::AllreducePieces(std::span<const AllreducePiece> pieces, DataType dtype,
                                     ReduceOp op) {
  std::vector<int64_t> starts;
  const bool ok = PieceView::Index(pieces, &starts);
  const int64_t count = starts.back();
  if (!ok) {
    return Status::InvalidArgument(std::string(name()) + ": " + AllreduceOpName(count, dtype, op) +
                                   ": a piece has a negative count");
  }
  const PieceView view(pieces, starts, static_cast<int64_t>(DataTypeSize(dtype)));
  std::vector<char> packed(static_cast<size_t>(count) * DataTypeSize(dtype));
  view.Gather(0, count, packed.data());
  HVD_RETURN_IF_ERROR(Allreduce(packed.data(), count, dtype, op));
  view.Scatter(0, count, packed.data());
  return Status::OK();
}

Status Communicator::AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                                     double scale) {
  HVD_RETURN_IF_ERROR(Allreduce(buffer, count, dtype, op));
  ScaleBuffer(buffer, count, dtype, scale);
  return Status::OK();
}

Status Communicator::AllreducePiecesScaled(std::span<const AllreducePiece> pieces, DataType dtype,
                                           ReduceOp op, double scale) {
  HVD_RETURN_IF_ERROR(AllreducePieces(pieces, dtype, op));
  for (const AllreducePiece& p : pieces) {
    if (p.out != nullptr) ScaleBuffer(p.out, p.count, dtype, scale);
  }
  return Status::OK();
}

Status Communicator::ReduceScatterScaled(const void* in, void* out,
                                         const std::vector<int64_t>& counts_per_rank,
                                         DataType dtype, ReduceOp op, double scale) {
  HVD_RETURN_IF_ERROR(ReduceScatter(in, out, counts_per_rank, dtype, op));
  ScaleBuffer(out, counts_per_rank[rank()], dtype, scale);  // the op checked the counts
  return Status::OK();
}

Status Communicator::ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                               const std::vector<int64_t>& counts_per_rank,
                                               DataType dtype, ReduceOp op, double scale) {
  HVD_RETURN_IF_ERROR(ReduceScatterPieces(pieces, out, counts_per_rank, dtype, op));
  ScaleBuffer(out, counts_per_rank[rank()], dtype, scale);
  return Status::OK();
}

Status Communicator::ReduceScatterPieces(std::span<const AllreducePiece> pieces, void* out,
                                         const std::vector<int64_t>& counts_per_rank,
                                         DataType dtype, ReduceOp op) {
  std::vector<int64_t> starts;
  HVD_RETURN_IF_ERROR(IndexPiecesForCounts(std::string(name()) + " reducescatter of pieces", pieces,
                                           counts_per_rank, &starts));
  const PieceView view(pieces, starts, static_cast<int64_t>(DataTypeSize(dtype)));
  std::vector<char> packed(static_cast<size_t>(view.count()) * DataTypeSize(dtype));
  view.Gather(0, view.count(), packed.data());
  return ReduceScatter(packed.data(), out, counts_per_rank, dtype, op);
}

Status AllgatherPiecesThroughBuffer(Communicator* comm, const char* what, const void* in,
                                    std::span<const AllreducePiece> pieces,
                                    const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                    GatherScratch* scratch) {
  HVD_RETURN_IF_ERROR(IndexPiecesForCounts([&] { return std::string(comm->name()) + " " + what; },
                                           pieces, counts_per_rank, &scratch->starts));
  const int64_t elem = static_cast<int64_t>(DataTypeSize(dtype));
  const PieceView view(pieces, scratch->starts, elem);
  scratch->bytes.resize(counts_per_rank.size());
  for (size_t i = 0; i < counts_per_rank.size(); ++i) {
    scratch->bytes[i] = counts_per_rank[i] * elem;
  }
  const size_t total = static_cast<size_t>(view.count() * elem);
  if (scratch->packed.size() < total) scratch->packed.resize(total);
  HVD_RETURN_IF_ERROR(comm->Allgatherv(in, scratch->packed.data(), scratch->bytes));
  view.Scatter(0, view.count(), scratch->packed.data());
  return Status::OK();
}

Status Communicator::AllgatherPieces(const void* in, std::span<const AllreducePiece> pieces,
                                     const std::vector<int64_t>& counts_per_rank, DataType dtype) {
  GatherScratch scratch;
  return AllgatherPiecesThroughBuffer(this, "allgather into pieces", in, pieces, counts_per_rank,
                                      dtype, &scratch);
}

Status Communicator::BitwiseAndWithAllreduce(std::span<uint64_t> words, size_t and_words,
                                             int64_t count, DataType dtype, ReduceOp op) {
  (void)words;
  (void)and_words;
  return Status::Unimplemented(std::string(name()) + ": bitwise and with an " +
                               AllreduceOpName(count, dtype, op) + " is not supported");
}

Status Communicator::BitwiseAndPostingInput(std::span<uint64_t> words, const void* input,
                                            std::span<const int64_t> posted_bytes) {
  (void)words;
  (void)input;
  (void)posted_bytes;
  return Status::Unimplemented(std::string(name()) +
                               ": bitwise and posting an input is not supported");
}

Status Communicator::BitwiseAndPostingPieces(std::span<uint64_t> words, const void* input,
                                             std::span<const int64_t> piece_bytes) {
  (void)words;
  (void)input;
  (void)piece_bytes;
  return Status::Unimplemented(std::string(name()) +
                               ": bitwise and posting pieces of an input is not supported");
}

Status Communicator::ReduceScatter(const void* in, void* out,
                                   const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                   ReduceOp op) {
  if (static_cast<int>(counts_per_rank.size()) != size()) {
    return Status::InvalidArgument("ReduceScatter: counts_per_rank has " +
                                   std::to_string(counts_per_rank.size()) +
                                   " entries for a group of " + std::to_string(size()));
  }
  const size_t elem = DataTypeSize(dtype);
  const int64_t total = std::accumulate(counts_per_rank.begin(), counts_per_rank.end(), int64_t{0});
  // Default path: a scratch copy; backends with a native reduce-scatter override this.
  std::vector<char> scratch(static_cast<size_t>(total) * elem);
  if (total > 0) std::memcpy(scratch.data(), in, scratch.size());
  HVD_RETURN_IF_ERROR(Allreduce(scratch.data(), total, dtype, op));
  int64_t offset =
      std::accumulate(counts_per_rank.begin(), counts_per_rank.begin() + rank(), int64_t{0});
  const size_t bytes = static_cast<size_t>(counts_per_rank[rank()]) * elem;
  if (bytes > 0) std::memcpy(out, scratch.data() + offset * elem, bytes);
  return Status::OK();
}

int FirstClosedSocket(std::span<const int> fds, int* error) {
  *error = 0;
  std::vector<pollfd> p;
  p.reserve(fds.size());
  for (int fd : fds) p.push_back(pollfd{fd, POLLRDHUP, 0});
  if (p.empty() || poll(p.data(), p.size(), 0) <= 0) return -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if ((p[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) continue;
    socklen_t len = sizeof(*error);
    getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, error, &len);
    return static_cast<int>(i);
  }
  return -1;
}

}  // namespace hvd::runtime
