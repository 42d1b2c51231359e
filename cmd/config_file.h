#ifndef HVD_CMD_CONFIG_FILE_H_
#define HVD_CMD_CONFIG_FILE_H_

#include <optional>
#include <string>

#include "cmd/knobs.h"
#include "common/status.h"
#include "launcher/plan/launch_spec.h"

// horovodrun's --config-file: a YAML file with the schema of
// horovod/runner/common/util/config_parser.py::set_args_from_config
//
//   controller: gloo | mpi | jsrun
//   params:          fusion_threshold_mb, cycle_time_ms, cache_capacity,
//                    hierarchical_allreduce, hierarchical_allgather, torus_allreduce
//   autotune:        enabled, log_file, warmup_samples, steps_per_sample,
//                    bayes_opt_max_samples, gaussian_process_noise, cache (hvd)
//   timeline:        filename, mark_cycles, all_ranks (hvd)
//   stall_check:     enabled, warning_time_seconds, shutdown_time_seconds
//   library_options: mpi_threads_disable, num_nccl_streams, thread_affinity,
//                    gloo_timeout_seconds
//   logging:         level, with_timestamp, hide_timestamp
//
// Unlike Horovod, which ignores what it does not know, an unknown key or a value of the wrong
// type is an error that names the file, line and key path. A key whose value is null is
// ignored, as in Horovod. The file only supplies values; the caller applies them under the
// command line (FillUnset).
namespace hvd::cmd {

struct ConfigFile {
  Knobs knobs;  // values from the file, origin kConfigFile
  std::optional<launcher::Controller> controller;
};

// `path` is only used in messages and in the knobs' provenance.
Result<ConfigFile> ParseConfigYaml(const std::string& text, const std::string& path);

// Reads and parses `path`; an unreadable file is an error naming it.
Result<ConfigFile> LoadConfigFile(const std::string& path);

}  // namespace hvd::cmd

#endif  // HVD_CMD_CONFIG_FILE_H_
