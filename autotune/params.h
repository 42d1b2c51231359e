#ifndef HVD_AUTOTUNE_PARAMS_H_
#define HVD_AUTOTUNE_PARAMS_H_

#include <bitset>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/status.h"

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

// What the coordinator broadcasts to every rank after each tuning step (the runtime's
// Autotuner::Sync): whether the knobs changed, whether tuning is done, and the knobs, as
// "<changed> <done> <cache> <cycle ms> <fusion MiB>" (0/1 flags, %.17g numbers). Decoding
// refuses anything else, and values outside what the configuration itself accepts (a cycle
// time in [0, 60000] ms, a fusion threshold in [0, 2^20] MiB): InvalidArgument quoting the
// line (at most its first 100 bytes).
struct SyncLine {
  bool changed = false;
  bool done = false;
  Params params;  // cache_enabled, cycle_time_ms, fusion_threshold_mb

  bool operator==(const SyncLine&) const = default;
};
inline constexpr double kMaxSyncCycleTimeMs = 60000.0;
inline constexpr double kMaxSyncFusionThresholdMb = 1048576.0;
std::string EncodeSyncLine(const SyncLine& line);
Result<SyncLine> DecodeSyncLine(std::string_view text);

}  // namespace hvd::autotune

#endif  // HVD_AUTOTUNE_PARAMS_H_
