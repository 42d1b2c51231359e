#ifndef HVD_RUNTIME_CORE_AUTOTUNER_H_
#define HVD_RUNTIME_CORE_AUTOTUNER_H_

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/params.h"
#include "common/status.h"
#include "runtime/core/negotiation/message.h"
#include "runtime/runtime_config.h"
#include "runtime/transports/communicator.h"

namespace hvd::autotune {
class ParameterManager;
}  // namespace hvd::autotune

namespace hvd::runtime {

// The knob values every rank runs with; what autotune changes.
struct TunedKnobs {
  int64_t fusion_threshold_bytes = 0;
  std::chrono::microseconds cycle_time{0};
  bool cache_enabled = true;
  bool operator==(const TunedKnobs&) const = default;
};

// Autotuner runs Horovod's autotune (HVD_AUTOTUNE=1) for the runtime. Global rank 0 owns an
// autotune::ParameterManager fed with what the global set executed each iteration.
//
// Protocol: while active(), every rank calls Sync() once per background iteration, after
// the cycles (iterations are in lockstep, so the calls match). Sync is one BroadcastBytes
// from global rank 0 on the global communicator carrying "changed" and "done" flags and the
// knobs; every rank applies the knobs it returns, so all ranks switch in the same
// iteration. The first Sync always carries the manager's starting point. When tuning ends
// (or the HVD_AUTOTUNE_CACHE file already holds params for this model's signature, checked
// once warm-up is over) the message carries the best knobs and "done", and every rank stops
// calling Sync: a tuned job pays nothing afterwards. Rank 0 writes the CSV log
// (HVD_AUTOTUNE_LOG) and stores the best params in the cache file when tuning ends.
//
// Threading: background thread only.
class Autotuner {
 public:
  Autotuner(const RuntimeConfig& config, bool coordinator);
  ~Autotuner();

  bool active() const { return active_; }
  // `executed`: the responses the global set ran this iteration (rank 0; ignored
  // elsewhere). Sets `*apply` when the knobs change. Non-OK = communicator failure.
  Status Sync(const std::vector<Response>& executed, Communicator* global,
              std::optional<TunedKnobs>* apply);

  static TunedKnobs ToKnobs(const autotune::Params& params);

 private:
  std::string Step(const std::vector<Response>& executed);
  void CheckCache(bool* changed);
  void StoreBest();

  RuntimeConfig::Autotune options_;
  int size_, local_size_;
  bool coordinator_;
  bool active_ = true;
  bool first_ = true;
  bool cache_checked_ = false;
  bool finished_ = false;
  std::optional<autotune::Params> cached_;
  // The knobs as configured (rank 0); cache_enabled: a response cache of capacity > 0.
  autotune::Params configured_;
  std::ofstream log_;
  std::unique_ptr<autotune::ParameterManager> manager_;  // rank 0 only
  // name -> "dtype|shape" of every tensor executed so far (the model signature).
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>> tensors_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_AUTOTUNER_H_
