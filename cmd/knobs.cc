#include "cmd/knobs.h"

#include <cstdint>
#include <sstream>
#include <string_view>
#include <utility>
#include <variant>

#include "common/env_registry.h"
#include "common/logging.h"

namespace hvd::cmd {
namespace {

template <typename T>
std::string Show(const T& v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

template <typename T>
Status NonNegative(const Knob<T>& knob) {
  if (knob.value && *knob.value < 0) {
    return Status::InvalidArgument(knob.Where() + ": must be >= 0, got " + Show(*knob.value));
  }
  return Status::OK();
}

// The runtime's own bounds (runtime/runtime_config.cc), checked here so that a bad value is
// hvdrun's usage error (exit 64) before anything starts, not every rank's init error. NaN is
// out of every range.
template <typename T>
Status InRange(const Knob<T>& knob, T low, T high) {
  if (knob.value && !(*knob.value >= low && *knob.value <= high)) {
    return Status::InvalidArgument(knob.Where() + ": must be in [" + Show(low) + ", " + Show(high) +
                                   "], got " + Show(*knob.value));
  }
  return Status::OK();
}

Status CheckNoise(const Knob<double>& knob) {
  if (knob.value && !(*knob.value >= 0 && *knob.value <= 1)) {
    return Status::InvalidArgument(knob.Where() + ": must be in [0, 1], got " + Show(*knob.value));
  }
  return Status::OK();
}

Status CanonicalLevel(Knob<std::string>* knob) {
  if (!knob->value) return Status::OK();
  Result<log::Level> level = log::ParseLevel(*knob->value);
  if (!level.ok()) return level.status().WithContext(knob->Where());
  *knob->value = log::LevelName(*level);
  return Status::OK();
}

// "3" or "0,2,4,6": one core id per local rank.
Status CheckAffinity(const Knob<std::string>& knob) {
  if (!knob.value) return Status::OK();
  std::string_view rest = *knob.value;
  while (true) {
    size_t comma = rest.find(',');
    Result<int64_t> core = env::ParseInt(rest.substr(0, comma), knob.Where());
    if (!core.ok() || *core < 0) {
      return Status::InvalidArgument(knob.Where() +
                                     ": expected a core id >= 0 or a comma list of them, got '" +
                                     *knob.value + "'");
    }
    if (comma == std::string_view::npos) return Status::OK();
    rest.remove_prefix(comma + 1);
  }
}

}  // namespace

std::vector<KnobPtr> Knobs::All() {
  return {&fusion_threshold_mb,
          &cycle_time_ms,
          &cache_capacity,
          &hierarchical_allreduce,
          &hierarchical_allgather,
          &torus_allreduce,
          &autotune,
          &autotune_log_file,
          &autotune_warmup_samples,
          &autotune_steps_per_sample,
          &autotune_bayes_opt_max_samples,
          &autotune_gaussian_process_noise,
          &autotune_cache,
          &timeline_filename,
          &timeline_mark_cycles,
          &timeline_all_ranks,
          &stall_check,
          &stall_check_warning_time_seconds,
          &stall_check_shutdown_time_seconds,
          &mpi_threads_disable,
          &num_nccl_streams,
          &thread_affinity,
          &gloo_timeout_seconds,
          &bind_to,
          &worker_malloc,
          &worker_threads,
          &tcp,
          &log_level,
          &log_with_timestamp};
}

void FillUnset(Knobs from, Knobs* into) {
  std::vector<KnobPtr> src = from.All();
  std::vector<KnobPtr> dst = into->All();
  for (size_t i = 0; i < src.size(); ++i) {
    std::visit(
        [&](auto* s) {
          auto* d = std::get<decltype(s)>(dst[i]);
          if (!d->value && s->value) d->Set(*s->value, s->origin, s->config_path);
        },
        src[i]);
  }
}

Status ValidateKnobs(Knobs* k) {
  // (Not the knobs whose least value is 1: their range below says so, for -1 as for 0.)
  for (const auto* knob :
       {&k->fusion_threshold_mb, &k->cache_capacity, &k->autotune_warmup_samples,
        &k->stall_check_warning_time_seconds, &k->stall_check_shutdown_time_seconds,
        &k->num_nccl_streams, &k->gloo_timeout_seconds}) {
    HVD_RETURN_IF_ERROR(NonNegative(*knob));
  }
  HVD_RETURN_IF_ERROR(NonNegative(k->cycle_time_ms));
  // The runtime's limit for counts, and 1 TiB in MB for the fusion threshold.
  constexpr int64_t kMaxCount = int64_t{1} << 20;
  constexpr int64_t kYear = int64_t{86400} * 365;
  HVD_RETURN_IF_ERROR(InRange(k->fusion_threshold_mb, int64_t{0}, kMaxCount));
  HVD_RETURN_IF_ERROR(InRange(k->cycle_time_ms, 0.0, 60000.0));
  HVD_RETURN_IF_ERROR(InRange(k->cache_capacity, int64_t{0}, int64_t{INT32_MAX}));
  HVD_RETURN_IF_ERROR(InRange(k->autotune_warmup_samples, int64_t{0}, kMaxCount));
  HVD_RETURN_IF_ERROR(InRange(k->autotune_steps_per_sample, int64_t{1}, kMaxCount));
  HVD_RETURN_IF_ERROR(InRange(k->autotune_bayes_opt_max_samples, int64_t{1}, kMaxCount));
  HVD_RETURN_IF_ERROR(InRange(k->stall_check_warning_time_seconds, int64_t{0}, kYear));
  HVD_RETURN_IF_ERROR(InRange(k->stall_check_shutdown_time_seconds, int64_t{0}, kYear));
  // The runtime's range (runtime_config.cc): until 2026-12-01 hvdrun passed 0 on, and every
  // rank then failed hvd.init() with it.
  HVD_RETURN_IF_ERROR(InRange(k->gloo_timeout_seconds, int64_t{1}, int64_t{86400} * 7));
  HVD_RETURN_IF_ERROR(CheckNoise(k->autotune_gaussian_process_noise));
  HVD_RETURN_IF_ERROR(CheckAffinity(k->thread_affinity));
  if (k->bind_to.value && *k->bind_to.value != "core" && *k->bind_to.value != "none") {
    return Status::InvalidArgument(k->bind_to.Where() + ": expected core or none, got '" +
                                   *k->bind_to.value + "'");
  }
  // --worker-malloc and --worker-threads are checked where they are read, with HVD_WORKER_MALLOC
  // and HVD_WORKER_THREADS (launcher::WorkerMallocVars, CheckWorkerThreadsPolicy).
  return CanonicalLevel(&k->log_level);
}

}  // namespace hvd::cmd
