#include "runtime/transports/posted_inputs.h"

#include <cstring>

#include "runtime/transports/reduce_inputs.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {

Status PostedInputs::AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                                     double scale) {
  HVD_RETURN_IF_ERROR(CheckAllreduceArgs([&] { return What("allreduce"); }, buffer, count, op));
  const size_t bytes = static_cast<size_t>(count) * DataTypeSize(dtype);
  if (bytes == 0) return Status::OK();
  const char* first = nullptr;
  HVD_RETURN_IF_ERROR(Input(0, bytes, &first));
  if (size_ == 1) {
    std::memcpy(buffer, first, bytes);
    ScaleBuffer(buffer, count, dtype, scale);
    return Status::OK();
  }
  if (source_->slices_allreduce(static_cast<int64_t>(bytes))) {
    // Every member checks every input before the round, so all fail alike or none does.
    for (int k = 1; k < size_; ++k) {
      const char* in = nullptr;
      HVD_RETURN_IF_ERROR(Input(k, bytes, &in));
    }
    return source_->AllreduceSliced(buffer, count, dtype, op, scale);
  }
  return ReduceRanges(0, bytes, buffer, count, dtype, op, scale);
}

Status PostedInputs::Allgatherv(const void*, void* out,
                                const std::vector<int64_t>& bytes_per_rank) {
  HVD_RETURN_IF_ERROR(CheckPerRankArg([&] { return What("allgather"); }, bytes_per_rank, size_));
  char* to = static_cast<char*>(out);
  for (int k = 0; k < size_; ++k) {
    const size_t bytes = static_cast<size_t>(bytes_per_rank[k]);
    const char* in = nullptr;
    HVD_RETURN_IF_ERROR(Input(k, bytes, &in));
    if (bytes > 0) std::memcpy(to, in, bytes);
    to += bytes;
  }
  return Status::OK();
}

Status PostedInputs::Broadcast(void* buffer, int64_t bytes, int root) {
  HVD_RETURN_IF_ERROR(CheckRootArg([&] { return What("broadcast"); }, root, size_));
  if (rank_ == root || bytes <= 0) return Status::OK();
  const char* in = nullptr;
  HVD_RETURN_IF_ERROR(Input(root, static_cast<size_t>(bytes), &in));
  std::memcpy(buffer, in, static_cast<size_t>(bytes));
  return Status::OK();
}

Status PostedInputs::AlltoallvAgreed(const void*, const std::vector<int64_t>& send_bytes, void* out,
                                     const std::vector<int64_t>& recv_bytes, int64_t) {
  const auto what = [&] { return What("alltoall"); };
  HVD_RETURN_IF_ERROR(CheckPerRankArg(what, send_bytes, size_));
  HVD_RETURN_IF_ERROR(CheckPerRankArg(what, recv_bytes, size_));
  char* to = static_cast<char*>(out);
  for (int k = 0; k < size_; ++k) {
    const size_t piece = static_cast<size_t>(recv_bytes[k]);
    const char* in = nullptr;
    HVD_RETURN_IF_ERROR(Range(k, static_cast<size_t>(rank_) * piece, piece, &in));
    if (piece > 0) std::memcpy(to, in, piece);
    to += piece;
  }
  return Status::OK();
}

Status PostedInputs::ReduceScatterScaled(const void*, void* out,
                                         const std::vector<int64_t>& counts_per_rank,
                                         DataType dtype, ReduceOp op, double scale) {
  const auto what = [&] { return What("reducescatter"); };
  HVD_RETURN_IF_ERROR(CheckPerRankArg(what, counts_per_rank, size_));
  if (op == ReduceOp::kAdasum) return Refuse("Adasum reducescatter");
  const size_t elem = DataTypeSize(dtype);
  int64_t total = 0, lo = 0;
  for (int k = 0; k < size_; ++k) {
    if (k == rank_) lo = total;
    total += counts_per_rank[k];
  }
  const int64_t count = counts_per_rank[rank_];
  if (count == 0) return Status::OK();
  const size_t at = static_cast<size_t>(lo) * elem;
  const size_t bytes = static_cast<size_t>(count) * elem;
  return ReduceRanges(at, bytes, out, count, dtype, op, scale);
}

Status PostedInputs::ReduceRanges(size_t offset, size_t bytes, void* out, int64_t count,
                                  DataType dtype, ReduceOp op, double scale) const {
  return ReduceHeldInputs(
      out, size_, count, dtype, op,
      [&](int k, const void** in) {
        const char* data = nullptr;
        HVD_RETURN_IF_ERROR(Range(k, offset, bytes, &data));
        *in = data;
        return Status::OK();
      },
      scale);
}

std::string PostedInputs::What(const char* op) const {
  return std::string(prefix_) + " " + op + " from posted inputs on rank " + std::to_string(rank_) +
         " of " + std::to_string(size_);
}

Status PostedInputs::Refuse(const char* op) const {
  return Status::Internal(What(op) + ": not available from posted inputs");
}

Status PostedInputs::Range(int k, size_t offset, size_t bytes, const char** data) const {
  if (!source_->open()) {
    return Status::Internal(What("read") + ": the round that posted the inputs has ended");
  }
  const char* block = source_->block(k);
  uint64_t posted = 0;
  std::memcpy(&posted, block, sizeof(posted));
  const size_t lo = source_->block_offset();
  if (offset < lo || posted < offset - lo + bytes) {
    return Status::Internal(What("read") + ": rank " + std::to_string(k) + " posted bytes [" +
                            std::to_string(lo) + ", " + std::to_string(lo + posted) +
                            ") of its input, [" + std::to_string(offset) + ", " +
                            std::to_string(offset + bytes) + ") needed");
  }
  *data = block + sizeof(posted) + (offset - lo);
  return Status::OK();
}

}  // namespace hvd::runtime
