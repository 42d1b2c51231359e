#include "cmd/config_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/temp_file.h"

namespace hvd::cmd {
namespace {

using ::testing::HasSubstr;

// Modelled on Horovod's test/single/data/config.test.yaml and test_run.py::test_config_file.
constexpr char kHorovodTestYaml[] = R"(controller: gloo
params:
  fusion_threshold_mb: 32
  cycle_time_ms: 10
  cache_capacity: 2048
  hierarchical_allreduce: true
  hierarchical_allgather: true
autotune:
  enabled: true
  log_file: horovod_autotune_log.txt
  warmup_samples: 5
  steps_per_sample: 20
  bayes_opt_max_samples: 50
  gaussian_process_noise: 0.9
timeline:
  filename: horovod_timeline.json
  mark_cycles: true
stall_check:
  enabled: true
  warning_time_seconds: 120
  shutdown_time_seconds: 240
library_options:
  mpi_threads_disable: true
  num_nccl_streams: 2
  thread_affinity: 1
  gloo_timeout_seconds: 60
logging:
  level: INFO
  hide_timestamp: true
)";

std::string YamlParseError(const std::string& yaml) {
  Result<ConfigFile> r = ParseConfigYaml(yaml, "cfg.yaml");
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

TEST(ConfigFileTest, HorovodTestYamlSetsEveryKnob) {
  Result<ConfigFile> r = ParseConfigYaml(kHorovodTestYaml, "cfg.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Knobs& k = r->knobs;
  EXPECT_EQ(r->controller, launcher::Controller::kGloo);
  EXPECT_EQ(k.fusion_threshold_mb.value, 32);
  EXPECT_EQ(k.cycle_time_ms.value, 10.0);
  EXPECT_EQ(k.cache_capacity.value, 2048);
  EXPECT_EQ(k.hierarchical_allreduce.value, true);
  EXPECT_EQ(k.hierarchical_allgather.value, true);
  EXPECT_FALSE(k.torus_allreduce.value.has_value());
  EXPECT_EQ(k.autotune.value, true);
  EXPECT_EQ(k.autotune_log_file.value, "horovod_autotune_log.txt");
  EXPECT_EQ(k.autotune_warmup_samples.value, 5);
  EXPECT_EQ(k.autotune_steps_per_sample.value, 20);
  EXPECT_EQ(k.autotune_bayes_opt_max_samples.value, 50);
  EXPECT_EQ(k.autotune_gaussian_process_noise.value, 0.9);
  EXPECT_EQ(k.timeline_filename.value, "horovod_timeline.json");
  EXPECT_EQ(k.timeline_mark_cycles.value, true);
  EXPECT_EQ(k.stall_check.value, true);
  EXPECT_EQ(k.stall_check_warning_time_seconds.value, 120);
  EXPECT_EQ(k.stall_check_shutdown_time_seconds.value, 240);
  EXPECT_EQ(k.mpi_threads_disable.value, true);
  EXPECT_EQ(k.num_nccl_streams.value, 2);
  EXPECT_EQ(k.thread_affinity.value, "1");
  EXPECT_EQ(k.gloo_timeout_seconds.value, 60);
  EXPECT_EQ(k.log_level.value, "INFO");
  EXPECT_EQ(k.log_with_timestamp.value, false);  // hide_timestamp: true (hvd honours it)
  EXPECT_EQ(k.cache_capacity.origin, Origin::kConfigFile);
  EXPECT_EQ(k.cache_capacity.config_path, "cfg.yaml");
}

TEST(ConfigFileTest, WithTimestampWinsOverHideTimestamp) {
  Result<ConfigFile> r =
      ParseConfigYaml("logging:\n  hide_timestamp: true\n  with_timestamp: true\n", "c.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->knobs.log_with_timestamp.value, true);
}

TEST(ConfigFileTest, EmptyFileAndNullValuesSetNothing) {
  Result<ConfigFile> empty = ParseConfigYaml("", "c.yaml");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->knobs.fusion_threshold_mb.value.has_value());
  Result<ConfigFile> nulls = ParseConfigYaml("params:\n  cycle_time_ms:\ntimeline:\n", "c.yaml");
  ASSERT_TRUE(nulls.ok()) << nulls.status().ToString();
  EXPECT_FALSE(nulls->knobs.cycle_time_ms.value.has_value());
  EXPECT_FALSE(nulls->controller.has_value());
}

TEST(ConfigFileTest, HvdExtensions) {
  Result<ConfigFile> r =
      ParseConfigYaml("autotune:\n  cache: tuned.json\ntimeline:\n  all_ranks: yes\n", "c.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->knobs.autotune_cache.value, "tuned.json");
  EXPECT_EQ(r->knobs.timeline_all_ranks.value, true);
}

TEST(ConfigFileTest, WrongTypeNamesFileLineAndKey) {
  EXPECT_EQ(YamlParseError("params:\n  fusion_threshold_mb: abc\n"),
            "cfg.yaml:2: params.fusion_threshold_mb: expected an integer, got 'abc'");
  EXPECT_EQ(YamlParseError("params:\n  cycle_time_ms: fast\n"),
            "cfg.yaml:2: params.cycle_time_ms: expected a number, got 'fast'");
  EXPECT_THAT(YamlParseError("timeline:\n  mark_cycles: maybe\n"),
              HasSubstr("cfg.yaml:2: timeline.mark_cycles: expected a boolean"));
  EXPECT_EQ(YamlParseError("params:\n  cache_capacity: [1, 2]\n"),
            "cfg.yaml:2: params.cache_capacity: expected a single value, got a sequence");
  EXPECT_EQ(YamlParseError("params: 5\n"), "cfg.yaml:1: params: expected a mapping, got a scalar");
  EXPECT_EQ(YamlParseError("- a\n- b\n"),
            "cfg.yaml:1: expected a mapping at the top level, got a sequence");
}

TEST(ConfigFileTest, UnknownKeysAreErrors) {
  EXPECT_THAT(YamlParseError("params:\n  fusion_threshold_mb: 1\nhosts: a:1\n"),
              HasSubstr("cfg.yaml:3: unknown key 'hosts' (expected one of: controller, params,"));
  EXPECT_THAT(YamlParseError("params:\n  fusion_threshold: 1\n"),
              HasSubstr("cfg.yaml:2: unknown key 'params.fusion_threshold' (expected one of: "
                        "fusion_threshold_mb, cycle_time_ms,"));
}

TEST(ConfigFileTest, ControllerValues) {
  Result<ConfigFile> mpi = ParseConfigYaml("controller: MPI\n", "c.yaml");
  ASSERT_TRUE(mpi.ok());
  EXPECT_EQ(mpi->controller, launcher::Controller::kMpi);
  EXPECT_EQ(YamlParseError("controller: slurm\n"),
            "cfg.yaml:1: controller: expected gloo, mpi or jsrun, got 'slurm'");
}

TEST(ConfigFileTest, MalformedYamlNamesFileAndLine) {
  std::string error = YamlParseError("params:\n  fusion_threshold_mb: [1, 2\n");
  EXPECT_THAT(error, HasSubstr("cfg.yaml:"));
  EXPECT_THAT(error, HasSubstr("malformed YAML"));
}

TEST(ConfigFileTest, LoadReadsTheFileOrNamesIt) {
  hvd::testing::TempFile file("load.yaml", "params:\n  cache_capacity: 7\n");
  Result<ConfigFile> r = LoadConfigFile(file.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->knobs.cache_capacity.value, 7);
  EXPECT_EQ(r->knobs.cache_capacity.config_path, file.path());

  Result<ConfigFile> missing = LoadConfigFile("/nonexistent/hvd.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("config file /nonexistent/hvd.yaml"));

  // A directory opens and reads as nothing: it was an empty config, silently
  Result<ConfigFile> dir = LoadConfigFile("/tmp");
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("config file /tmp: is a directory"));

  // A file that never ends is cut off at 16 MiB (it was read until the OOM killer)
  Result<ConfigFile> endless = LoadConfigFile("/dev/zero");
  ASSERT_FALSE(endless.ok());
  EXPECT_THAT(endless.status().message(), HasSubstr("config file /dev/zero: larger than 16 MiB"));
}

}  // namespace
}  // namespace hvd::cmd
