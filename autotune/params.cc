#include "autotune/params.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

#include "common/check.h"

namespace hvd::autotune {

KnobSet MakeKnobSet(std::initializer_list<Knob> knobs) {
  KnobSet set;
  for (Knob k : knobs) set.set(static_cast<size_t>(k));
  return set;
}

const char* KnobName(Knob knob) {
  switch (knob) {
    case Knob::kFusionThreshold:
      return "tensor_fusion_threshold";
    case Knob::kCycleTime:
      return "cycle_time_ms";
    case Knob::kHierarchicalAllreduce:
      return "hierarchical_allreduce";
    case Knob::kHierarchicalAllgather:
      return "hierarchical_allgather";
    case Knob::kTorusAllreduce:
      return "torus_allreduce";
    case Knob::kCacheEnabled:
      return "cache_enabled";
  }
  return "unknown";
}

bool GetBool(const Params& params, Knob knob) {
  switch (knob) {
    case Knob::kHierarchicalAllreduce:
      return params.hierarchical_allreduce;
    case Knob::kHierarchicalAllgather:
      return params.hierarchical_allgather;
    case Knob::kTorusAllreduce:
      return params.torus_allreduce;
    case Knob::kCacheEnabled:
      return params.cache_enabled;
    default:
      HVD_CHECK(false) << KnobName(knob) << " is not categorical";
  }
  return false;
}

void SetBool(Params* params, Knob knob, bool value) {
  switch (knob) {
    case Knob::kHierarchicalAllreduce:
      params->hierarchical_allreduce = value;
      return;
    case Knob::kHierarchicalAllgather:
      params->hierarchical_allgather = value;
      return;
    case Knob::kTorusAllreduce:
      params->torus_allreduce = value;
      return;
    case Knob::kCacheEnabled:
      params->cache_enabled = value;
      return;
    default:
      HVD_CHECK(false) << KnobName(knob) << " is not categorical";
  }
}

std::string CsvHeader() {
  return "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
         "cycle_time_ms,tensor_fusion_threshold,score";
}

std::string CsvRow(const Params& p, double score) {
  return fmt::format("{:d},{:d},{:d},{:d},{},{},{}", p.hierarchical_allreduce ? 1 : 0,
                     p.hierarchical_allgather ? 1 : 0, p.torus_allreduce ? 1 : 0,
                     p.cache_enabled ? 1 : 0, p.cycle_time_ms, p.fusion_threshold_mb, score);
}

std::string Describe(const Params& p) {
  return fmt::format("[{}, {}, {}, {}, {} ms, {} mb]", p.hierarchical_allreduce,
                     p.hierarchical_allgather, p.torus_allreduce, p.cache_enabled, p.cycle_time_ms,
                     p.fusion_threshold_mb);
}

std::string EncodeSyncLine(const SyncLine& line) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%d %d %d %.17g %.17g", line.changed ? 1 : 0, line.done ? 1 : 0,
                line.params.cache_enabled ? 1 : 0, line.params.cycle_time_ms,
                line.params.fusion_threshold_mb);
  return buf;
}

Result<SyncLine> DecodeSyncLine(std::string_view text) {
  SyncLine line;
  std::string_view rest = text;
  // The next field: up to the next single space (the last: to the end).
  auto field = [&](bool last) {
    const size_t space = rest.find(' ');
    std::string_view f = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    return (space == std::string_view::npos) == last ? f : std::string_view();
  };
  auto flag = [&](bool* out) {
    const std::string_view f = field(false);
    if (f != "0" && f != "1") return false;
    *out = f == "1";
    return true;
  };
  auto number = [&](bool last, double max, double* out) {
    const std::string_view f = field(last);
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), *out);
    return !f.empty() && ec == std::errc() && end == f.data() + f.size() && std::isfinite(*out) &&
           *out >= 0 && *out <= max;
  };
  if (!flag(&line.changed) || !flag(&line.done) || !flag(&line.params.cache_enabled) ||
      !number(false, kMaxSyncCycleTimeMs, &line.params.cycle_time_ms) ||
      !number(true, kMaxSyncFusionThresholdMb, &line.params.fusion_threshold_mb)) {
    return Status::InvalidArgument("autotune: malformed parameter message '" +
                                   std::string(text.substr(0, 100)) + "'");
  }
  return line;
}

}  // namespace hvd::autotune
