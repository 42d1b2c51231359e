#ifndef HVD_RUNTIME_CORE_NEGOTIATION_FUSION_PLANNER_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_FUSION_PLANNER_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "runtime/core/negotiation/message.h"
#include "runtime/core/reuse_vector.h"

namespace hvd::runtime {

struct FusionOptions {
  int64_t threshold_bytes = 128 * 1024 * 1024;  // 0 disables fusion
  bool disable_group_fusion = false;            // groups fuse only among themselves
};

// Merges per-tensor allreduce and allgather responses into fused ones, Horovod's greedy
// algorithm with look-ahead (its FuseResponses): a response joins the current one when type,
// dtype, device (allreduce: also reduce op and scale factors) match and the total stays within
// the threshold; an incompatible response is skipped (kept for later, order preserved) while
// the skipped bytes plus the current total still fit. Barrier and join stop fusion. Members of
// a group (same `group`, op type and dtype, adjacent in the input) move as one unit, so a group
// is never split. A fused allgather's `sizes` and `row_elements` are its members' concatenated
// (name-major). Pure function; every rank running it on the same input gets the same output.
std::vector<Response> PlanFusion(std::vector<Response> responses, const FusionOptions& options);

// What PlanFusion keeps between calls so that planning allocates nothing in steady state.
struct FusionScratch {
  std::vector<std::pair<uint32_t, uint32_t>> units;  // [first, last) input index of each unit
  std::vector<char> done;                            // unit already placed in the output
};

// The same plan written into `out` (cleared first; its slots' buffers are reused).
void PlanFusion(std::span<const Response> responses, const FusionOptions& options,
                FusionScratch* scratch, ReuseVector<Response>* out);
// The same over responses held elsewhere (the response cache's entries: no copy of each).
void PlanFusion(std::span<const Response* const> responses, const FusionOptions& options,
                FusionScratch* scratch, ReuseVector<Response>* out);

// Bytes a response moves: allgather, the gathered total (sum over members of every rank's
// dim 0 times the row's elements); otherwise the sum of element counts; times the dtype size.
int64_t ResponseBytes(const Response& response);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_FUSION_PLANNER_H_
