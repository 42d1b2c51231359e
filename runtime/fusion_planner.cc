#include "runtime/fusion_planner.h"

#include <deque>

namespace hvd::runtime {
namespace {

bool Fusable(const Response& r) { return r.type == OpType::kAllreduce; }

bool Compatible(const Response& a, const Response& b, const FusionOptions& options) {
  if (a.type != b.type || a.dtype != b.dtype || a.device != b.device ||
      a.reduce_op != b.reduce_op || a.prescale != b.prescale || a.postscale != b.postscale) {
    return false;
  }
  return !options.disable_group_fusion || a.group == b.group;
}

// Collapses adjacent members of one group into a single (already fused) response.
std::deque<Response> GroupUnits(std::vector<Response> responses) {
  std::deque<Response> units;
  for (auto& r : responses) {
    if (!units.empty() && Fusable(r) && !r.group.empty() && units.back().group == r.group &&
        Fusable(units.back()) && units.back().dtype == r.dtype) {
      Response& u = units.back();
      u.names.insert(u.names.end(), r.names.begin(), r.names.end());
      u.sizes.insert(u.sizes.end(), r.sizes.begin(), r.sizes.end());
      continue;
    }
    units.push_back(std::move(r));
  }
  return units;
}

void Append(Response* into, const Response& from) {
  into->names.insert(into->names.end(), from.names.begin(), from.names.end());
  into->sizes.insert(into->sizes.end(), from.sizes.begin(), from.sizes.end());
  if (into->group != from.group) into->group.clear();
}

bool StopsFusion(const Response& r) {
  return r.type == OpType::kBarrier || r.type == OpType::kJoin ||
         r.type == OpType::kProcessSetAdd || r.type == OpType::kProcessSetRemove;
}

}  // namespace

int64_t ResponseBytes(const Response& response) {
  int64_t n = 0;
  for (int64_t s : response.sizes) n += s;
  return n * static_cast<int64_t>(DataTypeSize(response.dtype));
}

std::vector<Response> PlanFusion(std::vector<Response> responses, const FusionOptions& options) {
  std::deque<Response> pending = GroupUnits(std::move(responses));
  std::vector<Response> out;
  const int64_t threshold = options.threshold_bytes;
  while (!pending.empty()) {
    Response current = std::move(pending.front());
    pending.pop_front();
    if (Fusable(current) && threshold > 0) {
      int64_t bytes = ResponseBytes(current);
      int64_t skipped_bytes = 0;
      std::deque<Response> skipped;
      while (!pending.empty() && !StopsFusion(pending.front())) {
        Response& next = pending.front();
        int64_t next_bytes = ResponseBytes(next);
        if (Compatible(current, next, options) && bytes + next_bytes <= threshold) {
          bytes += next_bytes;
          Append(&current, next);
          pending.pop_front();
          continue;
        }
        skipped_bytes += next_bytes;
        if (bytes + skipped_bytes > threshold) break;
        skipped.push_back(std::move(next));
        pending.pop_front();
      }
      while (!skipped.empty()) {
        pending.push_front(std::move(skipped.back()));
        skipped.pop_back();
      }
    }
    out.push_back(std::move(current));
  }
  return out;
}

}  // namespace hvd::runtime
