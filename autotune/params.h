#ifndef HVD_AUTOTUNE_PARAMS_H_
#define HVD_AUTOTUNE_PARAMS_H_

#include <bitset>
#include <cstddef>
#include <initializer_list>
#include <string>

// The runtime knobs autotune may change, and their CSV form. Plain values; no threading
// concerns.
namespace hvd::autotune {

// Units: fusion threshold in MiB (2^20 bytes, as Horovod's HOROVOD_FUSION_THRESHOLD / 1 MB),
// cycle time in milliseconds.
struct Params {
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  bool torus_allreduce = false;
  bool cache_enabled = true;
  double cycle_time_ms = 1.0;
  double fusion_threshold_mb = 128.0;

  bool operator==(const Params&) const = default;
};

// One bit per knob, in Horovod's tuning-chain order for the categorical ones.
enum class Knob : size_t {
  kFusionThreshold = 0,
  kCycleTime,
  kHierarchicalAllreduce,
  kHierarchicalAllgather,
  kTorusAllreduce,
  kCacheEnabled,
};
inline constexpr size_t kNumKnobs = 6;
using KnobSet = std::bitset<kNumKnobs>;

KnobSet MakeKnobSet(std::initializer_list<Knob> knobs);
inline bool Contains(const KnobSet& set, Knob knob) { return set.test(static_cast<size_t>(knob)); }
const char* KnobName(Knob knob);

bool GetBool(const Params& params, Knob knob);
void SetBool(Params* params, Knob knob, bool value);

// Horovod's autotune log header, without the trailing newline:
// hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,
// cycle_time_ms,tensor_fusion_threshold,score
std::string CsvHeader();
// One log row: bools as 0/1, then cycle time (ms), fusion threshold (MiB) and the score
// (bytes/s). Horovod writes a stray ", " after the torus column; we do not.
std::string CsvRow(const Params& params, double score);
// "[ha, hg, torus, cache, X ms, Y mb]" for log lines, as Horovod prints it.
std::string Describe(const Params& params);

}  // namespace hvd::autotune

#endif  // HVD_AUTOTUNE_PARAMS_H_
