#ifndef HVD_CMD_KNOBS_H_
#define HVD_CMD_KNOBS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"

// The runtime knobs hvdrun passes to every worker through the environment: the flags of
// horovodrun's "tunable parameters", autotune, timeline, stall check, library options and
// logging groups, which the YAML config file (--config-file) can also set. Each knob knows its
// flag and its YAML key; a knob nobody set stays empty and its variable is not written, so the
// worker inherits hvdrun's own environment. Plain data.
namespace hvd::cmd {

enum class Origin { kCommandLine, kConfigFile };

template <typename T>
struct Knob {
  Knob(const char* flag_name, const char* key) : flag(flag_name), yaml_key(key) {}

  const char* flag;      // "--fusion-threshold-mb"
  const char* yaml_key;  // "params.fusion_threshold_mb"; nullptr when not in the YAML schema
  std::optional<T> value;
  Origin origin = Origin::kCommandLine;
  std::string config_path;  // the file, when origin is kConfigFile

  void Set(T v, Origin o, std::string path = "") {
    value = std::move(v);
    origin = o;
    config_path = std::move(path);
  }
  // Names the setting for messages: "--cycle-time-ms" or "params.cycle_time_ms in cfg.yaml".
  std::string Where() const {
    if (origin == Origin::kConfigFile) return std::string(yaml_key) + " in " + config_path;
    return flag;
  }
};

using KnobPtr = std::variant<Knob<int64_t>*, Knob<double>*, Knob<bool>*, Knob<std::string>*>;

struct Knobs {
  // params
  Knob<int64_t> fusion_threshold_mb{"--fusion-threshold-mb", "params.fusion_threshold_mb"};
  Knob<double> cycle_time_ms{"--cycle-time-ms", "params.cycle_time_ms"};
  Knob<int64_t> cache_capacity{"--cache-capacity", "params.cache_capacity"};
  Knob<bool> hierarchical_allreduce{"--hierarchical-allreduce", "params.hierarchical_allreduce"};
  Knob<bool> hierarchical_allgather{"--hierarchical-allgather", "params.hierarchical_allgather"};
  Knob<bool> torus_allreduce{"--torus-allreduce", "params.torus_allreduce"};
  // autotune
  Knob<bool> autotune{"--autotune", "autotune.enabled"};
  Knob<std::string> autotune_log_file{"--autotune-log-file", "autotune.log_file"};
  Knob<int64_t> autotune_warmup_samples{"--autotune-warmup-samples", "autotune.warmup_samples"};
  Knob<int64_t> autotune_steps_per_sample{"--autotune-steps-per-sample",
                                          "autotune.steps_per_sample"};
  Knob<int64_t> autotune_bayes_opt_max_samples{"--autotune-bayes-opt-max-samples",
                                               "autotune.bayes_opt_max_samples"};
  Knob<double> autotune_gaussian_process_noise{"--autotune-gaussian-process-noise",
                                               "autotune.gaussian_process_noise"};
  Knob<std::string> autotune_cache{"--autotune-cache", "autotune.cache"};  // hvd extension
  // timeline
  Knob<std::string> timeline_filename{"--timeline-filename", "timeline.filename"};
  Knob<bool> timeline_mark_cycles{"--timeline-mark-cycles", "timeline.mark_cycles"};
  Knob<bool> timeline_all_ranks{"--timeline-all-ranks", "timeline.all_ranks"};  // hvd extension
  // stall check (true = enabled; the flag users type is --no-stall-check)
  Knob<bool> stall_check{"--stall-check", "stall_check.enabled"};
  Knob<int64_t> stall_check_warning_time_seconds{"--stall-check-warning-time-seconds",
                                                 "stall_check.warning_time_seconds"};
  Knob<int64_t> stall_check_shutdown_time_seconds{"--stall-check-shutdown-time-seconds",
                                                  "stall_check.shutdown_time_seconds"};
  // library options
  Knob<bool> mpi_threads_disable{"--mpi-threads-disable", "library_options.mpi_threads_disable"};
  Knob<int64_t> num_nccl_streams{"--num-nccl-streams", "library_options.num_nccl_streams"};
  // Horovod types the flag as int, but its runtime reads a comma list of core ids, one per
  // local rank; hvd accepts the list.
  Knob<std::string> thread_affinity{"--thread-affinity", "library_options.thread_affinity"};
  Knob<int64_t> gloo_timeout_seconds{"--gloo-timeout-seconds",
                                     "library_options.gloo_timeout_seconds"};
  // none (default) | core: launcher/worker/cpu_binding.h. hvd extension.
  Knob<std::string> bind_to{"--bind-to", "library_options.bind_to"};
  // tuned (default) | system: launcher/worker/worker_malloc.h. hvd extension; hvdrun decides, the
  // workers get glibc's MALLOC_* variables.
  Knob<std::string> worker_malloc{"--worker-malloc", "library_options.worker_malloc"};
  // share (default) | system: launcher/worker/worker_threads.h. hvd extension; the workers get
  // OMP_NUM_THREADS (hvdrun sets it for its own host's ranks, hvd-agent for the others).
  Knob<std::string> worker_threads{"--worker-threads", "library_options.worker_threads"};
  Knob<bool> tcp{"--tcp", nullptr};
  // logging (true = timestamps shown; the flag users type is --log-without-timestamp)
  Knob<std::string> log_level{"--log-level", "logging.level"};
  Knob<bool> log_with_timestamp{"--log-with-timestamp", "logging.with_timestamp"};

  // Every knob, in declaration order (the same order for any two Knobs objects).
  std::vector<KnobPtr> All();
};

// Converts a flag's or YAML key's text to a knob's type; errors name `what` and the text.
template <typename T>
Result<T> ConvertKnobValue(const std::string& text, const std::string& what) {
  if constexpr (std::is_same_v<T, int64_t>) return env::ParseInt(text, what);
  if constexpr (std::is_same_v<T, double>) return env::ParseFloat(text, what);
  if constexpr (std::is_same_v<T, bool>) return env::ParseBool(text, what);
  if constexpr (std::is_same_v<T, std::string>) return text;
}

// Sets every knob of `into` that has no value from the same knob of `from`: the YAML config
// fills in what the command line left open.
void FillUnset(Knobs from, Knobs* into);

// Horovod's validate_config_args plus the checks its runtime would do later: counts and times
// >= 0, Gaussian-process noise in [0, 1], a known log level (canonicalised to upper case), a
// comma list of non-negative core ids for thread affinity. Errors name the flag or key and
// the value.
Status ValidateKnobs(Knobs* knobs);

}  // namespace hvd::cmd

#endif  // HVD_CMD_KNOBS_H_
