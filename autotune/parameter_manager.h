#ifndef HVD_AUTOTUNE_PARAMETER_MANAGER_H_
#define HVD_AUTOTUNE_PARAMETER_MANAGER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/bayesian_optimizer.h"
#include "autotune/params.h"

// ParameterManager runs Horovod's autotune schedule (horovod/common/parameter_manager.cc)
// without knowing anything about the runtime: the coordinator reports what it reduced,
// the manager says when the knobs change and to what.
//
// Schedule:
//   1. warm-up: the first `warmup_samples` SAMPLES, taken at the initial (configured)
//      values, are discarded -- only logged (Horovod counts samples, not observations,
//      despite the docs);
//   2. Bayesian: fusion threshold (MiB, [0, 64]) and cycle time (ms, [1, 100]) searched
//      jointly; the first observations use Horovod's seed points (4,5) (32,50) (16,25)
//      (8,10), then Gaussian-process proposals, `bayes_opt_max_samples` observations in
//      total (seeds included); a fixed knob drops out of the search;
//   3. categorical: hierarchical_allreduce, hierarchical_allgather, torus_allreduce,
//      cache_enabled, one at a time, each value tried once with every other knob at the
//      best values so far; only knobs that are available and not fixed take part;
//   4. done: the best observed Params are kept and tuning() turns false.
//
// Measurement: a SAMPLE is the window between two closes; it closes on the Update() in
// which some tensor name has been reported `steps_per_sample` times within the window.
// Its score is the bytes reported inside the window divided by the window's duration,
// in BYTES PER SECOND (Horovod reports bytes per microsecond). The very first Update()
// only starts the clock. The median of 5 samples is one OBSERVATION, the unit the
// search works on; each observation is logged as a CSV row.
//
// Only the coordinator runs this; the runtime broadcasts current() when Update() returns
// true. Not synchronized: call from one thread (the runtime's background thread).
namespace hvd::autotune {

class ParameterManager {
 public:
  static constexpr int kSamplesPerObservation = 5;
  static constexpr double kMaxFusionThresholdMb = 64.0;
  static constexpr double kMinCycleTimeMs = 1.0;
  static constexpr double kMaxCycleTimeMs = 100.0;

  enum class Stage { kWarmup, kBayesian, kCategorical, kDone };
  using Clock = std::chrono::steady_clock;

  struct Options {
    Params initial;  // the configured values; fixed knobs keep them for good
    KnobSet fixed;   // knobs the user set explicitly (env/CLI): never tuned
    // Categorical knobs that mean something in this job (e.g. hierarchical ops need more
    // than one host, the cache needs a capacity > 0). Fusion and cycle time always do.
    KnobSet available = MakeKnobSet({Knob::kCacheEnabled});
    int warmup_samples = 3;
    int steps_per_sample = 10;
    int bayes_opt_max_samples = 20;
    double gaussian_process_noise = 0.8;
    uint64_t seed = 0;
    // Receives the CSV header at construction, then one row per observation and a final
    // row with the best params and score. Optional.
    std::function<void(const std::string& line)> log_sink;
  };

  struct Observation {
    Params params;
    double score = 0.0;  // bytes per second, median of kSamplesPerObservation samples
  };

  explicit ParameterManager(Options options);
  ~ParameterManager();

  // Reports one coordinator cycle: the names of the tensors just reduced and their total
  // size in bytes. Returns true when current() changed (the caller applies and
  // broadcasts it). No-op returning false once tuning is done.
  bool Update(const std::vector<std::string>& tensor_names, int64_t bytes, Clock::time_point now);

  // The knob values to run with now. Valid from construction (the initial values while
  // warming up, else already the first point to measure; the caller applies it right away).
  const Params& current() const { return current_; }
  bool tuning() const { return stage_ != Stage::kDone; }
  // The knobs this schedule searches (not fixed; the categorical ones available): what best()
  // holds as a result, the rest being the initial values.
  KnobSet tuned() const;
  Stage stage() const { return stage_; }
  // Samples closed so far (warm-up's included).
  int samples_taken() const { return samples_taken_; }
  // The best observation so far (current() and score 0 before the first one).
  Params best() const { return best_ ? best_->params : current_; }
  double best_score() const { return best_ ? best_->score : 0.0; }
  const std::vector<Observation>& observations() const { return observations_; }
  // Header, one row per observation and, once done, the best row.
  std::string CsvLog() const;

 private:
  void OnSample(double score);
  void OnObservation(double score);
  void StartBayesian();
  void StartNextCategorical();
  void Finish();
  void SetBayesPoint(const std::vector<double>& point);
  std::vector<double> BayesPoint(const Params& params) const;
  void Log(const std::string& line);

  Options options_;
  Params current_;
  Stage stage_ = Stage::kDone;
  int warmup_remaining_;
  int samples_taken_ = 0;
  struct {
    Params params;
    Stage stage = Stage::kDone;
  } after_warmup_;  // the first point and stage, applied when warm-up ends

  // Current sample window.
  std::optional<Clock::time_point> window_start_;
  std::map<std::string, int> tensor_counts_;
  int64_t window_bytes_ = 0;
  std::vector<double> sample_scores_;

  // Bayesian stage.
  std::vector<Knob> bayes_knobs_;
  std::unique_ptr<BayesianOptimizer> optimizer_;
  int bayes_observations_ = 0;

  // Categorical stage.
  std::vector<Knob> categorical_queue_;
  size_t categorical_index_ = 0;
  int values_tried_ = 0;

  std::optional<Observation> best_;
  std::vector<Observation> observations_;
  std::vector<std::string> csv_rows_;
};

const char* StageName(ParameterManager::Stage stage);

}  // namespace hvd::autotune

#endif  // HVD_AUTOTUNE_PARAMETER_MANAGER_H_
