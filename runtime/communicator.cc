#include "runtime/communicator.h"

#include <cstring>
#include <numeric>

namespace hvd::runtime {

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
