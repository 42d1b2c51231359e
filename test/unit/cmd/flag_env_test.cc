// Flag / config file -> worker environment, ported from Horovod's test/single/test_run.py
// (test_params_args, test_autotune_args, test_autotuning_with_fixed_param, test_timeline_args,
// test_stall_check_args, test_library_args, test_logging_args, test_config_file,
// test_config_file_override_args, test_library_env_override).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cmd/flags.h"
#include "common/env_registry.h"
#include "test/support/temp_file.h"
#include "test/unit/cmd/parse_helpers.h"

namespace hvd::cmd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MustParse;
using ::testing::Pair;
using testing::ParseError;

struct EnvCase {
  const char* name;
  std::vector<std::string> argv;
  std::map<std::string, std::string> expected;  // HOROVOD_* name -> exact value
  std::vector<std::string> absent;              // HOROVOD_* names that must not be written
};

// Checks the HOROVOD_* name and its HVD_* twin.
void ExpectEnv(const EnvCase& c) {
  std::vector<std::string> argv = {"-np", "2"};
  argv.insert(argv.end(), c.argv.begin(), c.argv.end());
  argv.push_back("cmd");
  const std::map<std::string, std::string> env = MustParse(argv).spec.worker_env;
  for (const auto& [name, value] : c.expected) {
    ASSERT_TRUE(env.count(name)) << c.name << ": " << name << " missing";
    EXPECT_EQ(env.at(name), value) << c.name << ": " << name;
    const env::VarSpec* spec = env::FindVar(name);
    if (spec != nullptr) {
      EXPECT_EQ(env.at(spec->name), value) << c.name << ": " << spec->name;
    }
  }
  for (const auto& name : c.absent) EXPECT_FALSE(env.count(name)) << c.name << ": " << name;
}

void ExpectAll(const std::vector<EnvCase>& cases) {
  for (const EnvCase& c : cases) ExpectEnv(c);
}

TEST(FlagEnvTest, Params) {
  ExpectAll({
      {"params",
       {"--fusion-threshold-mb", "10", "--cycle-time-ms", "20", "--cache-capacity", "512",
        "--hierarchical-allreduce", "--hierarchical-allgather"},
       {{"HOROVOD_FUSION_THRESHOLD", "10485760"},
        {"HOROVOD_CYCLE_TIME", "20.0"},
        {"HOROVOD_CACHE_CAPACITY", "512"},
        {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"},
        {"HOROVOD_HIERARCHICAL_ALLGATHER", "1"}},
       {"HOROVOD_TORUS_ALLREDUCE", "HOROVOD_AUTOTUNE"}},
      {"params off",
       {"--cache-capacity", "0", "--no-hierarchical-allreduce", "--no-hierarchical-allgather",
        "--torus-allreduce", "--fusion-threshold-mb", "0", "--cycle-time-ms", "2.5"},
       {{"HOROVOD_CACHE_CAPACITY", "0"},
        {"HOROVOD_HIERARCHICAL_ALLREDUCE", "0"},
        {"HOROVOD_HIERARCHICAL_ALLGATHER", "0"},
        {"HOROVOD_TORUS_ALLREDUCE", "1"},
        {"HOROVOD_FUSION_THRESHOLD", "0"},
        {"HOROVOD_CYCLE_TIME", "2.5"}},
       {}},
  });
}

TEST(FlagEnvTest, Autotune) {
  ExpectAll({
      {"autotune",
       {"--autotune", "--autotune-log-file", "/tmp/autotune.txt", "--autotune-warmup-samples", "1",
        "--autotune-steps-per-sample", "5", "--autotune-bayes-opt-max-samples", "10",
        "--autotune-gaussian-process-noise", "0.2", "--autotune-cache", "tuned.json"},
       {{"HOROVOD_AUTOTUNE", "1"},
        {"HOROVOD_AUTOTUNE_LOG", "/tmp/autotune.txt"},
        {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "1"},
        {"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "5"},
        {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "10"},
        {"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.2"},
        {"HVD_AUTOTUNE_CACHE", "tuned.json"}},
       {}},
      // Passed on also without --autotune: HVD_AUTOTUNE=1 may come from the environment (they
      // were dropped until 2026-12-01; without autotune the runtime does not read them)
      {"autotune params without --autotune",
       {"--autotune-log-file", "/tmp/a.txt", "--autotune-warmup-samples", "1"},
       {{"HOROVOD_AUTOTUNE_LOG", "/tmp/a.txt"}, {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "1"}},
       {"HOROVOD_AUTOTUNE"}},
      {"autotune with fixed params",
       {"--autotune", "--cache-capacity", "1024", "--no-hierarchical-allgather"},
       {{"HOROVOD_AUTOTUNE", "1"},
        {"HOROVOD_CACHE_CAPACITY", "1024"},
        {"HOROVOD_HIERARCHICAL_ALLGATHER", "0"}},
       {"HOROVOD_HIERARCHICAL_ALLREDUCE", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES"}},
  });
}

TEST(FlagEnvTest, TimelineAndStallCheck) {
  ExpectAll({
      {"timeline",
       {"--timeline-filename", "/tmp/timeline.json", "--timeline-mark-cycles",
        "--timeline-all-ranks"},
       {{"HOROVOD_TIMELINE", "/tmp/timeline.json"},
        {"HOROVOD_TIMELINE_MARK_CYCLES", "1"},
        {"HVD_TIMELINE_ALL_RANKS", "1"}},
       {}},
      {"timeline short form",
       {"--timeline", "t.json"},
       {{"HOROVOD_TIMELINE", "t.json"}},
       {"HOROVOD_TIMELINE_MARK_CYCLES"}},
      // also for a timeline named by HOROVOD_TIMELINE in the environment
      {"mark cycles without a filename",
       {"--timeline-mark-cycles"},
       {{"HOROVOD_TIMELINE_MARK_CYCLES", "1"}},
       {"HOROVOD_TIMELINE"}},
      {"no stall check", {"--no-stall-check"}, {{"HOROVOD_STALL_CHECK_DISABLE", "1"}}, {}},
      {"stall times",
       {"--stall-check-warning-time-seconds", "10", "--stall-check-shutdown-time-seconds", "20"},
       {{"HOROVOD_STALL_CHECK_TIME_SECONDS", "10"}, {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "20"}},
       {"HOROVOD_STALL_CHECK_DISABLE"}},
  });
}

TEST(FlagEnvTest, LibraryAndLogging) {
  ExpectAll({
      {"library",
       {"--mpi-threads-disable", "--num-nccl-streams", "2", "--thread-affinity", "1",
        "--gloo-timeout-seconds", "60"},
       {{"HOROVOD_MPI_THREADS_DISABLE", "1"},
        {"HOROVOD_NUM_NCCL_STREAMS", "2"},
        {"HOROVOD_THREAD_AFFINITY", "1"},
        {"HOROVOD_GLOO_TIMEOUT_SECONDS", "60"}},
       {}},
      {"thread affinity list",
       {"--thread-affinity", "0,2,4"},
       {{"HOROVOD_THREAD_AFFINITY", "0,2,4"}},
       {}},
      {"logging",
       {"--log-level", "INFO", "--log-without-timestamp"},
       {{"HOROVOD_LOG_LEVEL", "INFO"}, {"HOROVOD_LOG_HIDE_TIME", "1"}},
       {}},
      {"log level any case",
       {"--log-level", "debug", "--log-with-timestamp"},
       {{"HOROVOD_LOG_LEVEL", "DEBUG"}, {"HOROVOD_LOG_HIDE_TIME", "0"}},
       {}},
      {"deprecated hide timestamp", {"--log-hide-timestamp"}, {{"HOROVOD_LOG_HIDE_TIME", "1"}}, {}},
      {"tcp", {"--tcp"}, {{"NCCL_IB_DISABLE", "1"}}, {}},
      {"no tcp", {}, {}, {"NCCL_IB_DISABLE"}},
  });
}

TEST(FlagEnvTest, NoKnobFlagsLeaveTheEnvironmentAlone) {
  ParsedCommandLine p = MustParse({"-np", "2", "cmd"}, {{"HOROVOD_FUSION_THRESHOLD", "1"},
                                                        {"HVD_AUTOTUNE", "1"},
                                                        {"HVD_WORKER_MALLOC", "system"},
                                                        {"HVD_WORKER_THREADS", "share"}});
  EXPECT_THAT(p.spec.worker_env, IsEmpty());
}

TEST(FlagEnvTest, WorkerThreadsFromFlagConfigOrEnvironment) {
  // The default is written (a remote host's hvd-agent applies it), a variable inherited
  EXPECT_THAT(MustParse({"cmd"}, {{"HVD_WORKER_MALLOC", "system"}}).spec.worker_env,
              ElementsAre(Pair("HVD_WORKER_THREADS", "share")));
  EXPECT_THAT(
      MustParse({"cmd"}, {{"HVD_WORKER_MALLOC", "system"}, {"HVD_WORKER_THREADS", "system"}})
          .spec.worker_env,
      IsEmpty());
  ParsedCommandLine flagged =
      MustParse({"--worker-threads", "system", "cmd"},
                {{"HVD_WORKER_MALLOC", "system"}, {"HVD_WORKER_THREADS", "share"}});
  EXPECT_THAT(flagged.spec.worker_env, ElementsAre(Pair("HVD_WORKER_THREADS", "system")));
  EXPECT_EQ(flagged.settings["HVD_WORKER_THREADS"].source, "command line");
  // --print-config says why nothing is added under share
  ParsedCommandLine own = MustParse({"cmd"}, {{"OMP_NUM_THREADS", "4"}});
  EXPECT_EQ(own.settings["HVD_WORKER_THREADS"].value,
            "share, nothing added: OMP_NUM_THREADS is set (4)");
  EXPECT_EQ(own.settings["HVD_WORKER_THREADS"].source, "default");
  EXPECT_EQ(ParseError({"cmd"}, {{"HVD_WORKER_THREADS", "all"}}),
            "HVD_WORKER_THREADS: expected share or system, got 'all'");
  EXPECT_EQ(ParseError({"--worker-threads", "1", "cmd"}),
            "--worker-threads: expected share or system, got '1'");
}

TEST(FlagEnvTest, WorkerMallocFromFlagConfigOrEnvironment) {
  const std::map<std::string, std::string> tuned = {{"HVD_WORKER_THREADS", "share"},
                                                    {"MALLOC_MMAP_THRESHOLD_", "33554432"},
                                                    {"MALLOC_TRIM_THRESHOLD_", "1073741824"}};
  EXPECT_EQ(MustParse({"cmd"}).spec.worker_env, tuned);
  ParsedCommandLine system = MustParse({"--worker-malloc", "system", "cmd"});
  EXPECT_THAT(system.spec.worker_env, ElementsAre(Pair("HVD_WORKER_MALLOC", "system"),
                                                  Pair("HVD_WORKER_THREADS", "share")));
  EXPECT_EQ(system.settings["HVD_WORKER_MALLOC"].source, "command line");
  // The flag wins over the variable, the user's own threshold over both.
  std::map<std::string, std::string> flagged =
      MustParse({"--worker-malloc", "tuned", "cmd"}, {{"HVD_WORKER_MALLOC", "system"}})
          .spec.worker_env;
  EXPECT_EQ(flagged.count("MALLOC_MMAP_THRESHOLD_"), 1u);
  ParsedCommandLine own = MustParse({"cmd"}, {{"MALLOC_TOP_PAD_", "0"}});
  EXPECT_THAT(own.spec.worker_env, ElementsAre(Pair("HVD_WORKER_THREADS", "share")));
  // --print-config says why nothing was added.
  EXPECT_EQ(own.settings["HVD_WORKER_MALLOC"].value,
            "tuned, nothing added: MALLOC_TOP_PAD_ is set");
  EXPECT_EQ(own.settings["HVD_WORKER_MALLOC"].source, "default");
  EXPECT_EQ(MustParse({"cmd"}, {{"MALLOC_TOP_PAD_", "0"}, {"HVD_WORKER_MALLOC", "tuned"}})
                .settings["HVD_WORKER_MALLOC"]
                .source,
            "environment variable HVD_WORKER_MALLOC");
  EXPECT_EQ(MustParse({"cmd"}).settings.count("HVD_WORKER_MALLOC"), 0u);
  EXPECT_EQ(ParseError({"cmd"}, {{"HVD_WORKER_MALLOC", "x"}}),
            "HVD_WORKER_MALLOC: expected tuned or system, got 'x'");
  EXPECT_EQ(ParseError({"--worker-malloc", "glibc", "cmd"}),
            "--worker-malloc: expected tuned or system, got 'glibc'");
}

TEST(FlagEnvTest, DeprecatedHideTimestampWarns) {
  ParsedCommandLine p = MustParse({"--log-hide-timestamp", "cmd"});
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_THAT(p.warnings[0], HasSubstr("deprecated"));
  EXPECT_FALSE(p.spec.log_with_timestamp);
}

constexpr char kConfig[] = R"(controller: gloo
params:
  fusion_threshold_mb: 32
  cycle_time_ms: 10
  cache_capacity: 2048
  hierarchical_allreduce: true
autotune:
  enabled: true
  warmup_samples: 5
  gaussian_process_noise: 0.9
timeline:
  filename: horovod_timeline.json
  mark_cycles: true
stall_check:
  enabled: false
  warning_time_seconds: 120
library_options:
  mpi_threads_disable: true
  thread_affinity: 1
logging:
  level: info
  hide_timestamp: true
)";

TEST(FlagEnvTest, ConfigFileSetsWorkerEnvAndSpec) {
  hvd::testing::TempFile file("full.yaml", kConfig);
  ParsedCommandLine p = MustParse({"-np", "2", "--config-file", file.path(), "cmd"});
  const auto& env = p.spec.worker_env;
  EXPECT_EQ(p.spec.controller, launcher::Controller::kGloo);
  EXPECT_EQ(env.at("HOROVOD_FUSION_THRESHOLD"), "33554432");
  EXPECT_EQ(env.at("HOROVOD_CYCLE_TIME"), "10.0");
  EXPECT_EQ(env.at("HOROVOD_CACHE_CAPACITY"), "2048");
  EXPECT_EQ(env.at("HOROVOD_HIERARCHICAL_ALLREDUCE"), "1");
  EXPECT_EQ(env.at("HOROVOD_AUTOTUNE"), "1");
  EXPECT_EQ(env.at("HOROVOD_AUTOTUNE_WARMUP_SAMPLES"), "5");
  EXPECT_EQ(env.at("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE"), "0.9");
  EXPECT_EQ(env.at("HOROVOD_TIMELINE"), "horovod_timeline.json");
  EXPECT_EQ(env.at("HOROVOD_TIMELINE_MARK_CYCLES"), "1");
  EXPECT_EQ(env.at("HOROVOD_STALL_CHECK_DISABLE"), "1");
  EXPECT_EQ(env.at("HOROVOD_STALL_CHECK_TIME_SECONDS"), "120");
  EXPECT_EQ(env.at("HOROVOD_MPI_THREADS_DISABLE"), "1");
  EXPECT_EQ(env.at("HOROVOD_THREAD_AFFINITY"), "1");
  EXPECT_EQ(env.at("HOROVOD_LOG_LEVEL"), "INFO");
  EXPECT_EQ(env.at("HOROVOD_LOG_HIDE_TIME"), "1");
  EXPECT_EQ(p.spec.log_level, "INFO");
  EXPECT_FALSE(p.spec.log_with_timestamp);
  EXPECT_EQ(p.settings.at("HVD_CYCLE_TIME").source, "config file " + file.path());
}

TEST(FlagEnvTest, CommandLineWinsOverConfigFileWhereverItAppears) {
  hvd::testing::TempFile file("override.yaml", kConfig);
  ParsedCommandLine p =
      MustParse({"-np", "2", "--fusion-threshold-mb", "128", "--config-file", file.path(),
                 "--cycle-time-ms", "20", "--no-autotune", "--stall-check", "--mpi", "cmd"});
  const auto& env = p.spec.worker_env;
  EXPECT_EQ(env.at("HOROVOD_FUSION_THRESHOLD"), "134217728");
  EXPECT_EQ(env.at("HOROVOD_CYCLE_TIME"), "20.0");
  EXPECT_EQ(env.at("HOROVOD_AUTOTUNE"), "0");
  // passed on as given (autotune may be on from the environment); the runtime reads it only
  // with autotune on
  EXPECT_EQ(env.at("HOROVOD_AUTOTUNE_WARMUP_SAMPLES"), "5");
  EXPECT_EQ(env.at("HOROVOD_STALL_CHECK_DISABLE"), "0");
  EXPECT_EQ(env.at("HOROVOD_CACHE_CAPACITY"), "2048");  // not on the command line
  EXPECT_EQ(p.spec.controller, launcher::Controller::kMpi);
  EXPECT_EQ(p.settings.at("HVD_CYCLE_TIME").source, "command line");
  EXPECT_EQ(p.settings.at("HVD_CACHE_CAPACITY").source, "config file " + file.path());
}

TEST(FlagEnvTest, ConfigFileErrorsNameTheFileAndKey) {
  hvd::testing::TempFile bad_type("bad_type.yaml", "params:\n  fusion_threshold_mb: abc\n");
  EXPECT_EQ(ParseError({"--config-file", bad_type.path(), "cmd"}),
            bad_type.path() + ":2: params.fusion_threshold_mb: expected an integer, got 'abc'");
  hvd::testing::TempFile unknown("unknown.yaml", "stall_check:\n  enable: true\n");
  EXPECT_THAT(ParseError({"--config-file", unknown.path(), "cmd"}),
              HasSubstr(unknown.path() + ":2: unknown key 'stall_check.enable'"));
  hvd::testing::TempFile malformed("malformed.yaml", "params: {fusion_threshold_mb: 1\n");
  EXPECT_THAT(ParseError({"--config-file", malformed.path(), "cmd"}),
              HasSubstr(malformed.path() + ":"));
  hvd::testing::TempFile invalid("invalid.yaml", "autotune:\n  gaussian_process_noise: 2\n");
  EXPECT_EQ(ParseError({"--config-file", invalid.path(), "cmd"}),
            "autotune.gaussian_process_noise in " + invalid.path() + ": must be in [0, 1], got 2");
  EXPECT_THAT(ParseError({"--config-file", "/nonexistent.yaml", "cmd"}),
              HasSubstr("/nonexistent.yaml"));
}

}  // namespace
}  // namespace hvd::cmd
