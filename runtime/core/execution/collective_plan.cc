#include "runtime/core/execution/collective_plan.h"

namespace hvd::runtime {

int64_t RowElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

int64_t ScatterRows(int64_t dim0, int64_t n, int64_t k) {
  return dim0 / n + (k < dim0 % n ? 1 : 0);
}

void PlanRankMajor(std::span<const int64_t> part_bytes, size_t tensors, size_t ranks,
                   RankMajorLayout* out) {
  out->region_bytes.assign(ranks, 0);
  out->region_starts.assign(ranks, 0);
  out->tensor_bytes.assign(tensors, 0);  // each tensor's cursor while its runs are laid out
  out->runs.clear();
  int64_t packed = 0;
  for (size_t k = 0; k < ranks; ++k) {
    out->region_starts[k] = packed;
    for (size_t i = 0; i < tensors; ++i) {
      const int64_t bytes = part_bytes[i * ranks + k];
      if (bytes > 0) out->runs.push_back({i, k, out->tensor_bytes[i], packed, bytes});
      out->tensor_bytes[i] += bytes;
      out->region_bytes[k] += bytes;
      packed += bytes;
    }
  }
  out->total = packed;
}

void GatherParts(std::span<const int64_t> sizes, std::span<const int64_t> row_bytes, size_t ranks,
                 std::vector<int64_t>* parts) {
  parts->resize(sizes.size());
  for (size_t i = 0; i < row_bytes.size(); ++i) {
    for (size_t k = 0; k < ranks; ++k) {
      (*parts)[i * ranks + k] = sizes[i * ranks + k] * row_bytes[i];
    }
  }
}

void ScatterParts(std::span<const int64_t> dim0s, std::span<const int64_t> row_bytes, size_t ranks,
                  std::vector<int64_t>* parts) {
  parts->resize(dim0s.size() * ranks);
  const auto n = static_cast<int64_t>(ranks);
  for (size_t i = 0; i < dim0s.size(); ++i) {
    for (size_t k = 0; k < ranks; ++k) {
      (*parts)[i * ranks + k] = ScatterRows(dim0s[i], n, static_cast<int64_t>(k)) * row_bytes[i];
    }
  }
}

}  // namespace hvd::runtime
