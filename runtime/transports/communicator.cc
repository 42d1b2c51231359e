#include "runtime/transports/communicator.h"

#include <cstring>
#include <numeric>

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
  (void)pieces;
  return Status::Unimplemented(std::string(name()) + ": allreduce of " + DataTypeName(dtype) + " " +
                               ReduceOpName(op) + " pieces in place is not supported");
}

Status Communicator::BitwiseAndWithAllreduce(std::span<uint64_t> words, size_t and_words,
                                             int64_t count, DataType dtype, ReduceOp op) {
  (void)words;
  (void)and_words;
  return Status::Unimplemented(std::string(name()) + ": bitwise and with an " +
                               AllreduceOpName(count, dtype, op) + " is not supported");
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

}  // namespace hvd::runtime
