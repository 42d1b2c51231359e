#include "autotune/params.h"

#include <fmt/format.h>

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

}  // namespace hvd::autotune
