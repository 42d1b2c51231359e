#ifndef HVD_RUNTIME_RUNTIME_CONFIG_H_
#define HVD_RUNTIME_RUNTIME_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "common/env_registry.h"
#include "common/logging.h"
#include "common/status.h"

namespace hvd::runtime {

// Every knob the runtime reads, captured once from the environment at hvd_init (STYLE.md
// "Configuration"). Tests build one directly, which also allows sub-second stall times.
// A plain value; not synchronized.
struct RuntimeConfig {
  // Topology, as hvdrun exported it.
  int32_t rank = 0;
  int32_t size = 1;
  int32_t local_rank = 0;
  int32_t local_size = 1;
  int32_t cross_rank = 0;
  int32_t cross_size = 1;
  std::string hostname = "localhost";

  // Rendezvous with hvdrun's KV server; empty address = single process.
  std::string rendezvous_addr;
  int32_t rendezvous_port = 0;
  int32_t secret_fd = -1;
  std::string job_id;
  std::string gloo_iface;
  bool elastic = false;
  // Rendezvous and per-collective timeout.
  std::chrono::milliseconds timeout{30000};

  // Coordinator.
  int64_t fusion_threshold_bytes = 128 * 1024 * 1024;
  std::chrono::microseconds cycle_time{1000};
  int64_t cache_capacity = 1024;
  bool disable_group_fusion = false;
  bool dynamic_process_sets = false;

  // Stall inspector; zero shutdown time = never shut down.
  bool stall_check_enabled = true;
  std::chrono::milliseconds stall_check_time{60000};
  std::chrono::milliseconds stall_shutdown_time{600000};

  // HVD_TIMELINE: a file written by global rank 0 from init, or "DYNAMIC" (API only).
  std::string timeline_path;
  bool timeline_mark_cycles = false;

  // HVD_AUTOTUNE*: global rank 0 tunes fusion threshold, cycle time and the cache switch
  // (runtime/autotuner.h). A knob whose variable was set explicitly is never tuned.
  struct Autotune {
    bool enabled = false;
    std::string log_path;
    std::string cache_path;
    int warmup_samples = 3;
    int steps_per_sample = 10;
    int bayes_opt_max_samples = 20;
    double gaussian_process_noise = 0.8;
    bool fusion_threshold_fixed = false;
    bool cycle_time_fixed = false;
    bool cache_fixed = false;
  } autotune;

  log::Level log_level = log::Level::kWarning;
  bool log_hide_time = false;
};

// Reads every runtime variable from `env`; a malformed or out-of-range value is
// InvalidArgument naming the variable (e.g. "HVD_FUSION_THRESHOLD: expected ... got 'x'").
Result<RuntimeConfig> LoadRuntimeConfig(const env::Environment& env);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_RUNTIME_CONFIG_H_
