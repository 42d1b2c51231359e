#ifndef HVD_RUNTIME_CORE_EXECUTION_COLLECTIVE_PLAN_H_
#define HVD_RUNTIME_CORE_EXECUTION_COLLECTIVE_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

// Where the bytes of a (fused) allgather and reducescatter go, as pure functions of the
// negotiated response: every member computes the same from the same response, and unit tests
// check them without a GPU. The NCCL path (op_executor_nccl.cc) packs and unpacks its device
// buffers by these layouts; the CPU path (op_executor.cc) lays its fusion buffer out the same way.
namespace hvd::runtime {

// Elements of one row of a tensor of `shape` (all dims but the first); 1 for a vector.
int64_t RowElements(const std::vector<int64_t>& shape);
// Rows of a reducescatter's dim0 that member k of n receives: the first dim0 % n one more.
int64_t ScatterRows(int64_t dim0, int64_t n, int64_t k);

// A fused op's `tensors` tensors over `ranks` ranks, part [i * ranks + k] (bytes) of tensor i
// belonging to rank k. Tensor i holds its parts in rank order; the packed buffer holds, rank by
// rank, every tensor's part for that rank, so that rank k's region is contiguous. A fused
// allgather gathers the regions (each rank packs its own), a fused reducescatter reduces the
// packed buffer and hands rank k its region.
struct RankMajorLayout {
  // Bytes of one part between tensor `tensor` (at `tensor_offset`) and the packed buffer (at
  // `packed_offset`); empty parts have none. In packed order.
  struct Run {
    size_t tensor;
    size_t rank;
    int64_t tensor_offset;
    int64_t packed_offset;
    int64_t bytes;
    bool operator==(const Run&) const = default;
  };
  std::vector<int64_t> region_bytes;   // per rank
  std::vector<int64_t> region_starts;  // per rank, in the packed buffer
  std::vector<int64_t> tensor_bytes;   // per tensor: all its parts
  std::vector<Run> runs;
  int64_t total = 0;  // bytes of the packed buffer
};

// Fills `out` (its vectors reused: a steady state allocates nothing). part_bytes.size() must be
// tensors * ranks.
void PlanRankMajor(std::span<const int64_t> part_bytes, size_t tensors, size_t ranks,
                   RankMajorLayout* out);

// An allgather's parts: tensor i's part from rank k is sizes[i * ranks + k] rows (a fused
// allgather's Response::sizes; a single one's is its ranks' dims 0) of row_bytes[i] bytes.
void GatherParts(std::span<const int64_t> sizes, std::span<const int64_t> row_bytes, size_t ranks,
                 std::vector<int64_t>* parts);
// A reducescatter's parts: tensor i (dim0s[i] rows of row_bytes[i] bytes) gives rank k
// ScatterRows(dim0s[i], ranks, k) rows.
void ScatterParts(std::span<const int64_t> dim0s, std::span<const int64_t> row_bytes, size_t ranks,
                  std::vector<int64_t>* parts);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_EXECUTION_COLLECTIVE_PLAN_H_
