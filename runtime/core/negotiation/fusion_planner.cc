#include "runtime/core/negotiation/fusion_planner.h"

namespace hvd::runtime {
namespace {

// Set size of an allgather response whose per-member fields line up; 0 otherwise.
size_t GatherSetSize(const Response& r) {
  const size_t names = r.names.size();
  if (names == 0 || r.row_elements.size() != names || r.sizes.size() % names != 0) return 0;
  return r.sizes.size() / names;
}

bool Fusable(const Response& r) {
  return r.type == OpType::kAllreduce || r.type == OpType::kReducescatter ||
         (r.type == OpType::kAllgather && GatherSetSize(r) > 0);
}

// Reduce op and scale factors matter to allreduce and reducescatter; an allgather carries the
// defaults.
bool Compatible(const Response& a, const Response& b, const FusionOptions& options) {
  if (a.type != b.type || a.dtype != b.dtype || a.device != b.device) return false;
  if ((a.type == OpType::kAllreduce || a.type == OpType::kReducescatter) &&
      (a.reduce_op != b.reduce_op || a.prescale != b.prescale || a.postscale != b.postscale)) {
    return false;
  }
  if (a.type == OpType::kAllgather && GatherSetSize(a) != GatherSetSize(b)) return false;
  return !options.disable_group_fusion || a.group == b.group;
}

// True when `r` continues the group unit that starts with `first`.
bool SameGroupUnit(const Response& first, const Response& r) {
  return Fusable(r) && !r.group.empty() && first.group == r.group && Fusable(first) &&
         first.type == r.type && first.dtype == r.dtype;
}

void AppendMembers(Response* into, const Response& from) {
  into->names.append(from.names.begin(), from.names.end());
  into->sizes.insert(into->sizes.end(), from.sizes.begin(), from.sizes.end());
  into->row_elements.insert(into->row_elements.end(), from.row_elements.begin(),
                            from.row_elements.end());
}

bool StopsFusion(const Response& r) {
  return r.type == OpType::kBarrier || r.type == OpType::kJoin ||
         r.type == OpType::kProcessSetAdd || r.type == OpType::kProcessSetRemove;
}

}  // namespace

int64_t ResponseBytes(const Response& response) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(response.dtype));
  const size_t set_size = response.type == OpType::kAllgather ? GatherSetSize(response) : 0;
  if (set_size > 0) {
    int64_t bytes = 0;
    for (size_t i = 0; i < response.names.size(); ++i) {
      int64_t rows = 0;
      for (size_t r = 0; r < set_size; ++r) rows += response.sizes[i * set_size + r];
      bytes += rows * response.row_elements[i] * elem;
    }
    return bytes;
  }
  int64_t n = 0;
  for (int64_t s : response.sizes) n += s;
  return n * elem;
}

// Units are runs of adjacent members of one group (a group moves as one, never split) or
// single responses. Taking units in order, each unplaced unit starts an output response;
// later compatible units join it while the total fits the threshold, and incompatible ones
// are skipped (left for a later output, order kept) while the skipped bytes plus the total
// still fit. This is the deque formulation of Horovod's look-ahead, done with done-flags.
namespace {

// PlanFusion over `n` responses, the i-th being in(i).
template <typename In>
void Plan(size_t n, In in, const FusionOptions& options, FusionScratch* scratch,
          ReuseVector<Response>* out) {
  out->clear();
  auto& units = scratch->units;
  units.clear();
  for (uint32_t i = 0; i < n; ++i) {
    if (!units.empty() && SameGroupUnit(in(units.back().first), in(i))) {
      units.back().second = i + 1;
      continue;
    }
    units.emplace_back(i, i + 1);
  }
  auto unit_bytes = [&](size_t u) {
    int64_t bytes = 0;
    for (uint32_t k = units[u].first; k < units[u].second; ++k) bytes += ResponseBytes(in(k));
    return bytes;
  };
  auto append_unit = [&](Response* into, size_t u) {
    for (uint32_t k = units[u].first; k < units[u].second; ++k) AppendMembers(into, in(k));
  };
  scratch->done.assign(units.size(), 0);
  const int64_t threshold = options.threshold_bytes;
  for (size_t u = 0; u < units.size(); ++u) {
    if (scratch->done[u]) continue;
    scratch->done[u] = 1;
    Response& current = out->Next();
    current = in(units[u].first);
    for (uint32_t k = units[u].first + 1; k < units[u].second; ++k) AppendMembers(&current, in(k));
    if (!Fusable(current) || threshold <= 0) continue;
    int64_t bytes = unit_bytes(u);
    int64_t skipped_bytes = 0;
    for (size_t v = u + 1; v < units.size(); ++v) {
      if (scratch->done[v]) continue;
      const Response& next = in(units[v].first);
      if (StopsFusion(next)) break;
      const int64_t next_bytes = unit_bytes(v);
      if (Compatible(current, next, options) && bytes + next_bytes <= threshold) {
        bytes += next_bytes;
        append_unit(&current, v);
        if (current.group != next.group) current.group.clear();
        scratch->done[v] = 1;
        continue;
      }
      skipped_bytes += next_bytes;
      if (bytes + skipped_bytes > threshold) break;
    }
  }
}

}  // namespace

void PlanFusion(std::span<const Response> in, const FusionOptions& options, FusionScratch* scratch,
                ReuseVector<Response>* out) {
  Plan(
      in.size(), [&](size_t i) -> const Response& { return in[i]; }, options, scratch, out);
}

void PlanFusion(std::span<const Response* const> in, const FusionOptions& options,
                FusionScratch* scratch, ReuseVector<Response>* out) {
  Plan(
      in.size(), [&](size_t i) -> const Response& { return *in[i]; }, options, scratch, out);
}

std::vector<Response> PlanFusion(std::vector<Response> responses, const FusionOptions& options) {
  FusionScratch scratch;
  ReuseVector<Response> out;
  PlanFusion(responses, options, &scratch, &out);
  return out.ToVector();
}

}  // namespace hvd::runtime
