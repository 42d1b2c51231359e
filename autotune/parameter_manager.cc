#include "autotune/parameter_manager.h"

#include <algorithm>

#include "common/check.h"
#include "common/logging.h"

namespace hvd::autotune {
namespace {

// Horovod's first Bayesian test points as (fusion threshold MiB, cycle time ms).
constexpr double kSeedPoints[][2] = {{4, 5}, {32, 50}, {16, 25}, {8, 10}};
constexpr int kNumSeedPoints = 4;

constexpr Knob kCategoricalOrder[] = {Knob::kHierarchicalAllreduce, Knob::kHierarchicalAllgather,
                                      Knob::kTorusAllreduce, Knob::kCacheEnabled};

double SeedValue(int index, Knob knob) {
  return kSeedPoints[index][knob == Knob::kFusionThreshold ? 0 : 1];
}

}  // namespace

const char* StageName(ParameterManager::Stage stage) {
  switch (stage) {
    case ParameterManager::Stage::kWarmup:
      return "warmup";
    case ParameterManager::Stage::kBayesian:
      return "bayesian";
    case ParameterManager::Stage::kCategorical:
      return "categorical";
    case ParameterManager::Stage::kDone:
      return "done";
  }
  return "unknown";
}

ParameterManager::ParameterManager(Options options)
    : options_(std::move(options)),
      current_(options_.initial),
      warmup_remaining_(std::max(options_.warmup_samples, 0)) {
  HVD_CHECK_GE(options_.steps_per_sample, 1);
  Log(CsvHeader());
  if (options_.bayes_opt_max_samples > 0) {
    for (Knob k : {Knob::kFusionThreshold, Knob::kCycleTime}) {
      if (!Contains(options_.fixed, k)) bayes_knobs_.push_back(k);
    }
  }
  for (Knob k : kCategoricalOrder) {
    if (Contains(options_.available, k) && !Contains(options_.fixed, k)) {
      categorical_queue_.push_back(k);
    }
  }
  if (!bayes_knobs_.empty()) {
    StartBayesian();
  } else {
    StartNextCategorical();
  }
  if (stage_ != Stage::kDone && warmup_remaining_ > 0) {
    // Warm up at the configured values (so the log shows where the job started); the first
    // point to measure is applied when warm-up ends.
    after_warmup_ = {current_, stage_};
    current_ = options_.initial;
    stage_ = Stage::kWarmup;
  }
}

ParameterManager::~ParameterManager() = default;

void ParameterManager::StartBayesian() {
  std::vector<std::pair<double, double>> bounds;
  for (Knob k : bayes_knobs_) {
    bounds.push_back(k == Knob::kFusionThreshold ? std::pair{0.0, kMaxFusionThresholdMb}
                                                 : std::pair{kMinCycleTimeMs, kMaxCycleTimeMs});
  }
  optimizer_ = std::make_unique<BayesianOptimizer>(std::move(bounds),
                                                   options_.gaussian_process_noise, options_.seed);
  std::vector<double> seed;
  for (Knob k : bayes_knobs_) seed.push_back(SeedValue(0, k));
  SetBayesPoint(seed);
  stage_ = Stage::kBayesian;
}

void ParameterManager::StartNextCategorical() {
  if (categorical_index_ >= categorical_queue_.size()) {
    Finish();
    return;
  }
  stage_ = Stage::kCategorical;
  values_tried_ = 0;
  // The first value tried is the best one so far: no change until it is re-measured.
}

void ParameterManager::Finish() {
  stage_ = Stage::kDone;
  if (!best_) return;  // nothing was tuned
  current_ = best_->params;
  std::string row = CsvRow(best_->params, best_->score);
  csv_rows_.push_back(row);
  Log(row);
  HVD_LOG_INFO("Autotuner: Best params {} {} bytes/s", Describe(best_->params), best_->score);
}

void ParameterManager::SetBayesPoint(const std::vector<double>& point) {
  HVD_CHECK_EQ(point.size(), bayes_knobs_.size());
  for (size_t i = 0; i < point.size(); ++i) {
    if (bayes_knobs_[i] == Knob::kFusionThreshold) {
      current_.fusion_threshold_mb = point[i];
    } else {
      current_.cycle_time_ms = point[i];
    }
  }
}

std::vector<double> ParameterManager::BayesPoint(const Params& params) const {
  std::vector<double> point;
  for (Knob k : bayes_knobs_) {
    point.push_back(k == Knob::kFusionThreshold ? params.fusion_threshold_mb
                                                : params.cycle_time_ms);
  }
  return point;
}

bool ParameterManager::Update(const std::vector<std::string>& tensor_names, int64_t bytes,
                              Clock::time_point now) {
  if (!tuning()) return false;
  if (!window_start_) {
    window_start_ = now;
    return false;
  }
  window_bytes_ += bytes;
  bool closed = false;
  for (const std::string& name : tensor_names) {
    if (++tensor_counts_[name] >= options_.steps_per_sample) closed = true;
  }
  if (!closed) return false;
  const double seconds = std::chrono::duration<double>(now - *window_start_).count();
  const double score = seconds > 0.0 ? static_cast<double>(window_bytes_) / seconds : 0.0;
  window_start_ = now;
  tensor_counts_.clear();
  window_bytes_ = 0;
  ++samples_taken_;
  const Params before = current_;
  OnSample(score);
  return !(current_ == before);
}

KnobSet ParameterManager::tuned() const {
  KnobSet tuned;
  for (Knob k : bayes_knobs_) tuned.set(static_cast<size_t>(k));
  for (Knob k : categorical_queue_) tuned.set(static_cast<size_t>(k));
  return tuned;
}

void ParameterManager::OnSample(double score) {
  if (stage_ == Stage::kWarmup) {
    --warmup_remaining_;
    HVD_LOG_INFO("Autotuner: Warming up ({} remaining), sample {} {} bytes/s", warmup_remaining_,
                 Describe(current_), score);
    if (warmup_remaining_ <= 0) {
      current_ = after_warmup_.params;
      stage_ = after_warmup_.stage;
    }
    return;
  }
  sample_scores_.push_back(score);
  if (static_cast<int>(sample_scores_.size()) < kSamplesPerObservation) return;
  std::sort(sample_scores_.begin(), sample_scores_.end());
  const double median = sample_scores_[sample_scores_.size() / 2];
  sample_scores_.clear();
  OnObservation(median);
}

void ParameterManager::OnObservation(double score) {
  observations_.push_back({current_, score});
  std::string row = CsvRow(current_, score);
  csv_rows_.push_back(row);
  Log(row);
  HVD_LOG_INFO("Autotuner: {} {} bytes/s", Describe(current_), score);
  if (!best_ || score > best_->score) best_ = observations_.back();

  if (stage_ == Stage::kBayesian) {
    optimizer_->AddSample(BayesPoint(current_), score);
    ++bayes_observations_;
    if (bayes_observations_ >= options_.bayes_opt_max_samples) {
      current_ = best_->params;
      StartNextCategorical();
    } else if (bayes_observations_ < kNumSeedPoints) {
      std::vector<double> seed;
      for (Knob k : bayes_knobs_) seed.push_back(SeedValue(bayes_observations_, k));
      SetBayesPoint(seed);
    } else {
      SetBayesPoint(optimizer_->NextSample());
    }
    return;
  }
  HVD_CHECK(stage_ == Stage::kCategorical) << StageName(stage_);
  const Knob knob = categorical_queue_[categorical_index_];
  const bool tried = GetBool(current_, knob);
  current_ = best_->params;
  if (++values_tried_ < 2) {
    SetBool(&current_, knob, !tried);
    return;
  }
  ++categorical_index_;
  StartNextCategorical();
}

std::string ParameterManager::CsvLog() const {
  std::string out = CsvHeader() + "\n";
  for (const std::string& row : csv_rows_) out += row + "\n";
  return out;
}

void ParameterManager::Log(const std::string& line) {
  if (options_.log_sink) options_.log_sink(line);
}

}  // namespace hvd::autotune
