#include "runtime/core/autotuner.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "autotune/autotune_cache.h"
#include "autotune/parameter_manager.h"
#include "common/logging.h"
#include "runtime/core/negotiation/fusion_planner.h"

namespace hvd::runtime {
namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;

bool IsData(OpType type) {
  return type == OpType::kAllreduce || type == OpType::kAllgather || type == OpType::kBroadcast ||
         type == OpType::kAlltoall || type == OpType::kReducescatter;
}

}  // namespace

TunedKnobs Autotuner::ToKnobs(const autotune::Params& p) {
  TunedKnobs k;
  k.fusion_threshold_bytes = std::llround(p.fusion_threshold_mb * kBytesPerMb);
  k.cycle_time = std::chrono::microseconds(std::llround(p.cycle_time_ms * 1000.0));
  k.cache_enabled = p.cache_enabled;
  return k;
}

Autotuner::Autotuner(const RuntimeConfig& config, bool coordinator)
    : options_(config.autotune),
      size_(config.size),
      local_size_(config.local_size),
      coordinator_(coordinator) {
  if (!coordinator_) return;
  autotune::ParameterManager::Options o;
  o.initial.fusion_threshold_mb = static_cast<double>(config.fusion_threshold_bytes) / kBytesPerMb;
  o.initial.cycle_time_ms = static_cast<double>(config.cycle_time.count()) / 1000.0;
  o.initial.cache_enabled = config.cache_capacity > 0;
  configured_ = o.initial;
  if (options_.fusion_threshold_fixed) o.fixed.set(size_t(autotune::Knob::kFusionThreshold));
  if (options_.cycle_time_fixed) o.fixed.set(size_t(autotune::Knob::kCycleTime));
  if (options_.cache_fixed) o.fixed.set(size_t(autotune::Knob::kCacheEnabled));
  o.available = config.cache_capacity > 0 ? autotune::MakeKnobSet({autotune::Knob::kCacheEnabled})
                                          : autotune::KnobSet();
  if (options_.fusion_threshold_fixed && options_.cycle_time_fixed &&
      (options_.cache_fixed || config.cache_capacity == 0)) {
    HVD_LOG_WARNING(
        "autotune: nothing to tune: the fusion threshold, the cycle time and the response cache "
        "are all set (HVD_FUSION_THRESHOLD, HVD_CYCLE_TIME, HVD_CACHE_CAPACITY or their flags); "
        "HVD_AUTOTUNE_TUNE_SET_KNOBS=1 tunes set knobs too, starting from their values");
  }
  o.warmup_samples = options_.warmup_samples;
  o.steps_per_sample = options_.steps_per_sample;
  o.bayes_opt_max_samples = options_.bayes_opt_max_samples;
  o.gaussian_process_noise = options_.gaussian_process_noise;
  if (!options_.log_path.empty()) {
    log_.open(options_.log_path, std::ios::out | std::ios::trunc);
    if (!log_) {
      HVD_LOG_WARNING("autotune: cannot write the log {}: {}; tuning goes on without it",
                      options_.log_path, std::strerror(errno));
    }
    o.log_sink = [this](const std::string& line) {
      if (log_) log_ << line << '\n' << std::flush;
    };
  }
  manager_ = std::make_unique<autotune::ParameterManager>(std::move(o));
}

Autotuner::~Autotuner() = default;

void Autotuner::CheckCache(bool* changed) {
  cache_checked_ = true;
  if (options_.cache_path.empty() || tensors_.empty()) return;
  autotune::ModelSignature signature(size_, local_size_);
  for (const auto& [name, t] : tensors_) signature.AddTensor(name, t.first, t.second);
  const std::string digest = signature.Digest();
  auto cached = autotune::LoadCachedParams(options_.cache_path, digest);
  if (!cached.ok()) {
    if (cached.status().code() != StatusCode::kNotFound) {
      HVD_LOG_WARNING("autotune: {}; tuning from the start instead", cached.status().message());
    }
    return;
  }
  // What tuning would never change stays as configured: a knob the user set (tuning leaves
  // it alone, and the cache stands in for tuning) and a response cache of capacity 0. So does
  // a knob the storing job did not tune (it had set it, or had no response cache): that value
  // was its configuration, not a result (until 2026-12-01 a job with HVD_CACHE_CAPACITY=0
  // stored cache_enabled=false, and every later job of the model ran without the cache).
  autotune::Params p = cached->params;
  const auto keep = [&](autotune::Knob knob, bool fixed_here) {
    return fixed_here || !autotune::Contains(cached->tuned, knob);
  };
  if (keep(autotune::Knob::kFusionThreshold, options_.fusion_threshold_fixed)) {
    p.fusion_threshold_mb = configured_.fusion_threshold_mb;
  }
  if (keep(autotune::Knob::kCycleTime, options_.cycle_time_fixed)) {
    p.cycle_time_ms = configured_.cycle_time_ms;
  }
  if (keep(autotune::Knob::kCacheEnabled, options_.cache_fixed || !configured_.cache_enabled)) {
    p.cache_enabled = configured_.cache_enabled;
  }
  HVD_LOG_INFO("using cached autotune result {} for model {} from {}{}",
               autotune::Describe(cached->params), digest, options_.cache_path,
               p == cached->params
                   ? ""
                   : fmt::format(", as {} with the knobs set for this job", autotune::Describe(p)));
  cached_ = p;
  *changed = true;
}

void Autotuner::StoreBest() {
  finished_ = true;
  if (options_.cache_path.empty() || cached_ || tensors_.empty()) return;
  autotune::ModelSignature signature(size_, local_size_);
  for (const auto& [name, t] : tensors_) signature.AddTensor(name, t.first, t.second);
  Status s =
      autotune::StoreCachedParams(options_.cache_path, signature.Digest(),
                                  {manager_->best(), manager_->best_score(), manager_->tuned()});
  if (!s.ok()) HVD_LOG_WARNING("autotune: {}; the tuned result is not stored", s.message());
}

std::string Autotuner::Step(const std::vector<Response>& executed) {
  bool changed = first_;
  first_ = false;
  std::vector<std::string> names;
  int64_t bytes = 0;
  for (const Response& r : executed) {
    if (!IsData(r.type)) continue;
    bytes += ResponseBytes(r);  // allgather: every rank's rows (fusion_planner.h)
    // The cache signature's per-tensor count: elements for allreduce-like responses; for an
    // allgather (sizes name-major, one block of set-size dims 0 per name) this tensor's block.
    const size_t per_name = r.names.empty() ? 0 : r.sizes.size() / r.names.size();
    for (size_t i = 0; i < r.names.size(); ++i) {
      names.push_back(r.names[i]);
      int64_t count = 0;
      for (size_t k = i * per_name; k < (i + 1) * per_name && k < r.sizes.size(); ++k) {
        count += r.sizes[k];
      }
      if (!cache_checked_) tensors_[r.names[i]] = {DataTypeName(r.dtype), {count}};
    }
  }
  if (!names.empty() && !cached_) {
    changed = manager_->Update(names, bytes, std::chrono::steady_clock::now()) || changed;
    // The model's signature holds the tensors of a whole sample at least (each seen
    // steps_per_sample times): with --autotune-warmup-samples 0 it was the first cycle's only,
    // so two models starting with the same op shared one cache entry (until 2026-12-01).
    if (!cache_checked_ && manager_->stage() != autotune::ParameterManager::Stage::kWarmup &&
        manager_->samples_taken() > 0) {
      CheckCache(&changed);
    }
  }
  const bool done = cached_.has_value() || !manager_->tuning();
  if (done && !finished_) StoreBest();
  const autotune::Params& p = cached_ ? *cached_ : (done ? manager_->best() : manager_->current());
  return autotune::EncodeSyncLine({changed || done, done, p});
}

Status Autotuner::Sync(const std::vector<Response>& executed, Communicator* global,
                       std::optional<TunedKnobs>* apply) {
  std::string message;
  if (coordinator_) message = Step(executed);
  HVD_RETURN_IF_ERROR(global->BroadcastBytes(&message, 0));
  HVD_ASSIGN_OR_RETURN(const autotune::SyncLine line, autotune::DecodeSyncLine(message));
  const autotune::Params& p = line.params;
  if (line.changed) *apply = ToKnobs(p);
  if (line.done) {
    active_ = false;
    const TunedKnobs k = ToKnobs(p);
    // Every rank says what it ended on (the e2e test compares the ranks' lines).
    HVD_LOG_INFO(
        "Autotuner: finished; running with fusion_threshold_bytes={} cycle_time_us={} "
        "cache_enabled={}",
        k.fusion_threshold_bytes, k.cycle_time.count(), k.cache_enabled ? 1 : 0);
  }
  return Status::OK();
}

}  // namespace hvd::runtime
