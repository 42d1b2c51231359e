#include "cmd/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/unit/cmd/parse_helpers.h"

namespace hvd::cmd {
namespace {

using launcher::Controller;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MustParse;
using ::testing::Pair;
using testing::ParseError;

TEST(FlagsTest, DefaultsWithNothingButACommand) {
  ParsedCommandLine p = MustParse({"python3", "train.py"});
  const launcher::LaunchSpec& s = p.spec;
  EXPECT_THAT(s.command, ElementsAre("python3", "train.py"));
  EXPECT_FALSE(s.num_proc.has_value());
  EXPECT_EQ(s.hosts, "");
  EXPECT_EQ(s.controller, Controller::kDefault);
  EXPECT_EQ(s.start_timeout_s, 30);
  EXPECT_EQ(s.elastic_timeout_s, 600);
  EXPECT_EQ(s.grace_period_s, 5);
  EXPECT_EQ(s.log_level, "WARNING");
  EXPECT_TRUE(s.log_with_timestamp);
  EXPECT_FALSE(s.elastic());
  // Only the threads' policy and the allocator settings of launcher/worker/worker_threads.h and
  // worker_malloc.h (share and tuned by default).
  EXPECT_THAT(s.worker_env, ElementsAre(Pair("HVD_WORKER_THREADS", "share"),
                                        Pair("MALLOC_MMAP_THRESHOLD_", "33554432"),
                                        Pair("MALLOC_TRIM_THRESHOLD_", "1073741824")));
  EXPECT_THAT(p.settings, IsEmpty());
  EXPECT_FALSE(p.show_help || p.show_version || p.check_build || p.print_config);
}

TEST(FlagsTest, WhereToRun) {
  EXPECT_EQ(MustParse({"-np", "4", "c"}).spec.num_proc, 4);
  EXPECT_EQ(MustParse({"--num-proc", "3", "c"}).spec.num_proc, 3);
  EXPECT_EQ(MustParse({"-H", "a:2,b:2", "c"}).spec.hosts, "a:2,b:2");
  EXPECT_EQ(MustParse({"--hosts", "a:1", "c"}).spec.hosts, "a:1");
  EXPECT_EQ(MustParse({"-hostfile", "h.txt", "c"}).spec.hostfile, "h.txt");
  EXPECT_EQ(MustParse({"--hostfile", "h.txt", "c"}).spec.hostfile, "h.txt");
}

TEST(FlagsTest, ElasticFlags) {
  ParsedCommandLine p =
      MustParse({"-np", "2", "--host-discovery-script", "./hosts.sh", "--min-np", "2", "--max-np",
                 "8", "--slots", "4", "--elastic-timeout", "100", "--reset-limit", "3",
                 "--blacklist-cooldown-range", "10", "100", "c"});
  const launcher::LaunchSpec& s = p.spec;
  EXPECT_EQ(s.host_discovery_script, "./hosts.sh");
  EXPECT_EQ(s.min_num_proc, 2);
  EXPECT_EQ(s.max_num_proc, 8);
  EXPECT_EQ(s.slots_per_host, 4);
  EXPECT_EQ(s.elastic_timeout_s, 100);
  EXPECT_EQ(s.reset_limit, 3);
  ASSERT_TRUE(s.blacklist_cooldown_range.has_value());
  EXPECT_EQ(s.blacklist_cooldown_range->first, 10);
  EXPECT_EQ(s.blacklist_cooldown_range->second, 100);
  EXPECT_TRUE(s.elastic());
  EXPECT_EQ(p.settings.at("HVD_ELASTIC_TIMEOUT").value, "100");

  ParsedCommandLine long_names = MustParse({"--min-num-proc", "1", "--max-num-proc", "2", "c"});
  EXPECT_EQ(long_names.spec.min_num_proc, 1);
  EXPECT_EQ(long_names.spec.max_num_proc, 2);
}

TEST(FlagsTest, HostKeyFlags) {
  ParsedCommandLine p =
      MustParse({"--ssh-known-hosts", "/etc/hvd/known_hosts", "--ssh-accept-new-host-keys", "c"});
  EXPECT_EQ(p.spec.ssh_known_hosts_file, "/etc/hvd/known_hosts");
  EXPECT_TRUE(p.spec.ssh_accept_new_host_keys);
  EXPECT_EQ(MustParse({"--ssh-known-hosts=kh", "c"}).spec.ssh_known_hosts_file, "kh");
}

TEST(FlagsTest, CheckNeedsNoCommand) {
  ParsedCommandLine p = MustParse({"--check", "-H", "a:2,b:2"});
  EXPECT_TRUE(p.spec.check);
  EXPECT_TRUE(p.spec.command.empty());
  EXPECT_TRUE(MustParse({"--check-build"}).check_build);
  EXPECT_FALSE(MustParse({"--check-build"}).spec.check);
}

TEST(FlagsTest, RemoteHostFlags) {
  ParsedCommandLine p =
      MustParse({"-p", "2222", "-i", "id_rsa", "--disable-cache", "--network-interfaces",
                 "eth0,eth1", "--network-interface", "eth2", "--network-interface", "eth0", "c"});
  EXPECT_EQ(p.spec.ssh_port, 2222);
  EXPECT_EQ(p.spec.ssh_identity_file, "id_rsa");
  EXPECT_TRUE(p.spec.disable_cache);
  EXPECT_THAT(p.spec.network_interfaces, ElementsAre("eth0", "eth1", "eth2"));
  EXPECT_THAT(p.warnings, IsEmpty());
  EXPECT_EQ(MustParse({"--ssh-port", "22", "c"}).spec.ssh_port, 22);
  EXPECT_TRUE(p.spec.ssh_known_hosts_file.empty());
  EXPECT_FALSE(p.spec.ssh_accept_new_host_keys);
  ParsedCommandLine deprecated = MustParse({"--network-interface", "a,b", "c"});
  EXPECT_THAT(deprecated.spec.network_interfaces, ElementsAre("a", "b"));
  EXPECT_THAT(deprecated.warnings, ElementsAre(HasSubstr("deprecated")));
}

TEST(FlagsTest, ControllerAndMpiFlags) {
  EXPECT_EQ(MustParse({"--gloo", "c"}).spec.controller, Controller::kGloo);
  EXPECT_EQ(MustParse({"--mpi", "c"}).spec.controller, Controller::kMpi);
  EXPECT_EQ(MustParse({"--jsrun", "c"}).spec.controller, Controller::kJsrun);
  ParsedCommandLine p =
      MustParse({"--mpi", "--mpi-args=-x FOO", "--binding-args", "-bind-to core", "--tcp", "c"});
  EXPECT_EQ(p.spec.mpi_args, "-x FOO");
  EXPECT_EQ(p.spec.binding_args, "-bind-to core");
  EXPECT_TRUE(p.spec.tcp);
  EXPECT_EQ(p.settings.at("HVD_CONTROLLER").value, "mpi");
  EXPECT_EQ(p.settings.at("HVD_CONTROLLER").source, "command line");
}

// Regression: CLI11 read "--mpi-args=" (an empty value, as a job script's "--mpi-args=$ARGS"
// makes) as the option without its value and took the next argument for it, so -np was lost;
// "-np=" gave CLI11's "--num-proc: 1 required N missing".
TEST(FlagsTest, AnEmptyValueIsTheValue) {
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"--mpi", "--mpi-args=", "-np", "2", "c"},
        std::vector<std::string>{"--mpi", "--mpi-args", "", "-np", "2", "c"}}) {
    ParsedCommandLine p = MustParse(argv);
    EXPECT_EQ(p.spec.mpi_args, "");
    EXPECT_EQ(p.spec.num_proc, 2);
    EXPECT_THAT(p.spec.command, ElementsAre("c"));
  }
  EXPECT_EQ(ParseError({"-np=", "c"}), "--num-proc: expected an integer, got ''");
  EXPECT_EQ(ParseError({"--fusion-threshold-mb", "", "-np", "2", "c"}),
            "--fusion-threshold-mb: expected an integer, got ''");
}

// --elastic-timeout reaches the workers, which wait for the driver's answer that long
// (from the environment they inherit it). Until 2026-11-30 they kept the default 600 s.
TEST(FlagsTest, TheElasticTimeoutFlagReachesTheWorkers) {
  ParsedCommandLine p =
      MustParse({"--elastic-timeout", "1800", "-np", "2", "--min-np", "1", "-H", "a:2", "c"});
  EXPECT_EQ(p.spec.elastic_timeout_s, 1800);
  EXPECT_EQ(p.spec.worker_env.at("HVD_ELASTIC_TIMEOUT"), "1800");
  EXPECT_EQ(MustParse({"-np", "2", "c"}).spec.worker_env.count("HVD_ELASTIC_TIMEOUT"), 0u);
}

TEST(FlagsTest, JobControlAndOutputFlags) {
  ParsedCommandLine p =
      MustParse({"--start-timeout", "10", "--output-filename", "out", "--verbose",
                 "-prefix-timestamp", "--dry-run", "--grace-period-seconds", "2.5", "c"});
  EXPECT_EQ(p.spec.start_timeout_s, 10);
  EXPECT_EQ(p.spec.output_filename, "out");
  EXPECT_TRUE(p.spec.verbose);
  EXPECT_TRUE(p.spec.prefix_timestamp);
  EXPECT_TRUE(p.spec.dry_run);
  EXPECT_EQ(p.spec.grace_period_s, 2.5);
  EXPECT_TRUE(MustParse({"--prefix-output-with-timestamp", "c"}).spec.prefix_timestamp);
}

TEST(FlagsTest, LauncherDefaultsComeFromTheEnvironmentUnlessFlagged) {
  std::map<std::string, std::string> env = {{"HOROVOD_START_TIMEOUT", "45"},
                                            {"HVD_GRACE_PERIOD_SECONDS", "1"},
                                            {"HOROVOD_ELASTIC_TIMEOUT", "60"},
                                            {"HOROVOD_LOG_LEVEL", "debug"},
                                            {"HOROVOD_LOG_HIDE_TIME", "1"}};
  ParsedCommandLine from_env = MustParse({"c"}, env);
  EXPECT_EQ(from_env.spec.start_timeout_s, 45);
  EXPECT_EQ(from_env.spec.grace_period_s, 1);
  EXPECT_EQ(from_env.spec.elastic_timeout_s, 60);
  EXPECT_EQ(from_env.spec.log_level, "DEBUG");
  EXPECT_FALSE(from_env.spec.log_with_timestamp);
  EXPECT_THAT(from_env.spec.worker_env,  // inherited, not re-written; the allocator's
              ElementsAre(Pair("HVD_WORKER_THREADS", "share"), Pair("MALLOC_MMAP_THRESHOLD_", _),
                          Pair("MALLOC_TRIM_THRESHOLD_", _)));

  ParsedCommandLine flagged =
      MustParse({"--start-timeout", "5", "--log-level", "ERROR", "--log-with-timestamp", "c"}, env);
  EXPECT_EQ(flagged.spec.start_timeout_s, 5);
  EXPECT_EQ(flagged.spec.log_level, "ERROR");
  EXPECT_TRUE(flagged.spec.log_with_timestamp);
}

TEST(FlagsTest, HeartbeatTimeoutComesFromTheEnvironmentAndBadValuesNameIt) {
  EXPECT_EQ(MustParse({"c"}).spec.heartbeat_timeout_s, 5);
  EXPECT_EQ(MustParse({"c"}, {{"HVD_HEARTBEAT_TIMEOUT_SECONDS", "2.5"}}).spec.heartbeat_timeout_s,
            2.5);
  EXPECT_EQ(MustParse({"c"}, {{"HVD_HEARTBEAT_TIMEOUT_SECONDS", "0"}}).spec.heartbeat_timeout_s, 0);
  EXPECT_THAT(ParseError({"c"}, {{"HVD_HEARTBEAT_TIMEOUT_SECONDS", "soon"}}),
              HasSubstr("HVD_HEARTBEAT_TIMEOUT_SECONDS: expected a number, got 'soon'"));
  EXPECT_THAT(ParseError({"c"}, {{"HVD_HEARTBEAT_TIMEOUT_SECONDS", "-1"}}),
              HasSubstr("HVD_HEARTBEAT_TIMEOUT_SECONDS"));
}

// What the ranks' runtime would refuse is refused here, before anything starts: until
// 2026-12-01 hvdrun passed these on, and every rank failed hvd.init() with them.
TEST(FlagsTest, ValuesTheRuntimeRefusesAreRefusedAtLaunch) {
  EXPECT_THAT(ParseError({"--gloo-timeout-seconds", "0", "c"}),
              HasSubstr("--gloo-timeout-seconds"));
  EXPECT_THAT(ParseError({"--gloo-timeout-seconds", "1000000", "c"}),
              HasSubstr("--gloo-timeout-seconds"));
  EXPECT_EQ(
      MustParse({"--gloo-timeout-seconds", "1", "c"}).spec.worker_env["HVD_GLOO_TIMEOUT_SECONDS"],
      "1");
  EXPECT_THAT(ParseError({"c"}, {{"HVD_ELASTIC_TIMEOUT", "0"}}),
              HasSubstr("HVD_ELASTIC_TIMEOUT: must be > 0"));
  EXPECT_THAT(ParseError({"c"}, {{"HOROVOD_ELASTIC_TIMEOUT", "0"}}),
              HasSubstr("HOROVOD_ELASTIC_TIMEOUT: must be > 0"));
  EXPECT_THAT(ParseError({"c"}, {{"HVD_HEARTBEAT_TIMEOUT_SECONDS", "100000"}}),
              HasSubstr("HVD_HEARTBEAT_TIMEOUT_SECONDS: must be in [0, 86400], got 100000"));
}

TEST(FlagsTest, JobTimeoutFromTheFlagOrTheEnvironmentAndNotUnderMpirun) {
  EXPECT_EQ(MustParse({"c"}).spec.timeout_s, 0);  // no limit
  EXPECT_EQ(MustParse({"--timeout", "90.5", "c"}).spec.timeout_s, 90.5);
  EXPECT_EQ(MustParse({"c"}, {{"HVD_TIMEOUT", "600"}}).spec.timeout_s, 600);
  EXPECT_EQ(MustParse({"--timeout", "5", "c"}, {{"HVD_TIMEOUT", "600"}}).spec.timeout_s, 5);
  EXPECT_THAT(ParseError({"--timeout", "soon", "c"}),
              HasSubstr("--timeout: expected a number, got 'soon'"));
  EXPECT_THAT(ParseError({"--timeout", "-1", "c"}),
              HasSubstr("--timeout: must be in [0, 31536000] (a year), got -1"));
  // Infinite, not a number, or past a year: refused (`--timeout inf` and 1e12 overflowed the
  // clock and ended the job at once, exit 124, until 2026-12-01)
  EXPECT_THAT(ParseError({"--timeout", "inf", "c"}),
              HasSubstr("--timeout: expected a number, got 'inf'"));
  EXPECT_THAT(ParseError({"c"}, {{"HVD_TIMEOUT", "nan"}}), HasSubstr("HVD_TIMEOUT"));
  EXPECT_THAT(ParseError({"--timeout", "1e12", "c"}),
              HasSubstr("--timeout: must be in [0, 31536000] (a year), got 1e12"));
  EXPECT_THAT(ParseError({"c"}, {{"HVD_TIMEOUT", "x"}}), HasSubstr("HVD_TIMEOUT"));
  EXPECT_THAT(ParseError({"--mpi", "--timeout", "5", "c"}),
              HasSubstr("--timeout (HVD_TIMEOUT) needs hvdrun's own launcher; under --mpi give "
                        "mpirun its own: --mpi-args '--timeout N --get-stack-traces'"));
  EXPECT_EQ(MustParse({"--mpi", "c"}).spec.timeout_s, 0);
}

TEST(FlagsTest, ConsoleRanksAreRanksAndRanges) {
  EXPECT_TRUE(MustParse({"c"}).spec.console_ranks.empty());  // every rank
  EXPECT_THAT(MustParse({"--console-ranks", "0", "c"}).spec.console_ranks, ElementsAre(0));
  EXPECT_THAT(MustParse({"--console-ranks", "6-7,0,2-3,3", "c"}).spec.console_ranks,
              ElementsAre(0, 2, 3, 6, 7));
  EXPECT_THAT(ParseError({"--console-ranks", "", "c"}), HasSubstr("--console-ranks"));
  for (const char* bad :
       {"x", "1,", ",1", "-1", "2-1", "1-", "1-2-3", "0x1", "1 ,2", "9999999999", "0-70000"}) {
    EXPECT_THAT(ParseError({"--console-ranks", bad, "c"}), HasSubstr("--console-ranks: '")) << bad;
  }
  EXPECT_THAT(ParseError({"--mpi", "--console-ranks", "0", "c"}),
              HasSubstr("--console-ranks needs hvdrun's own launcher"));
  EXPECT_THAT(ParseError({"--console-ranks", "2-1", "c"}),
              HasSubstr("--console-ranks: '2-1' in '2-1': the range ends before it starts"));
}

TEST(FlagsTest, BadLogLevelInTheEnvironmentIsAWarning) {
  ParsedCommandLine p = MustParse({"c"}, {{"HVD_LOG_LEVEL", "chatty"}});
  EXPECT_EQ(p.spec.log_level, "WARNING");
  EXPECT_THAT(p.warnings, ElementsAre(HasSubstr("HVD_LOG_LEVEL")));
  // The ranks get the level hvdrun uses, not the value their init would warn about again
  EXPECT_EQ(p.spec.worker_env.at("HVD_LOG_LEVEL"), "WARNING");
  EXPECT_EQ(p.spec.worker_env.at("HOROVOD_LOG_LEVEL"), "WARNING");
}

TEST(FlagsTest, AVariableNearOneThatIsReadIsWarnedAboutWithTheGuess) {
  // A typo, hvd's own variable under Horovod's prefix, and the variable hvd reads (no warning)
  ParsedCommandLine p = MustParse({"c"}, {{"HOROVOD_FUSION_TRESHOLD", "3"},
                                          {"HOROVOD_WORKER_THREADS", "system"},
                                          {"HVD_CYCLE_TIEM", "2"},
                                          {"HOROVOD_CYCLE_TIME", "2"}});
  EXPECT_THAT(p.warnings,
              ElementsAre("HOROVOD_FUSION_TRESHOLD is set, but hvd reads no such variable (did "
                          "you mean HOROVOD_FUSION_THRESHOLD?); ignored",
                          "HOROVOD_WORKER_THREADS is set, but hvd reads no such variable (did you "
                          "mean HVD_WORKER_THREADS?); ignored",
                          "HVD_CYCLE_TIEM is set, but hvd reads no such variable (did you mean "
                          "HVD_CYCLE_TIME?); ignored"));
  // Names near none pass: Horovod's build-time and CCL variables, hvd's per-rank ones, others'
  ParsedCommandLine quiet = MustParse({"c"}, {{"HOROVOD_WITH_PYTORCH", "1"},
                                              {"HOROVOD_GPU_OPERATIONS", "NCCL"},
                                              {"HOROVOD_CCL_CACHE", "1"},
                                              {"HOROVOD_SECRET_KEY", "x"},
                                              {"HVD_SECRET_FD", "3"},
                                              {"HVD_CLUSTER_BRIDGE", "br0"},
                                              {"HVD_FUSION_THRESHOLDS", "1"},
                                              {"MY_FUSION_TRESHOLD", "1"}});
  EXPECT_THAT(quiet.warnings, ElementsAre(HasSubstr("HVD_FUSION_THRESHOLDS is set")));
}

TEST(FlagsTest, OptionsThatOnlyQualifyAnAbsentOneAreWarnedAbout) {
  ParsedCommandLine idle = MustParse({"--autotune-log-file", "t.csv", "--autotune-cache", "c.json",
                                      "--timeline-mark-cycles", "--timeline-all-ranks", "c"});
  EXPECT_THAT(idle.warnings,
              ElementsAre(HasSubstr("--autotune-log-file does nothing without --autotune"),
                          HasSubstr("--autotune-cache does nothing without --autotune"),
                          HasSubstr("--timeline-mark-cycles does nothing without "
                                    "--timeline-filename"),
                          HasSubstr("--timeline-all-ranks does nothing without "
                                    "--timeline-filename")));
  // With what they qualify, from a flag or the environment, nothing to say
  EXPECT_THAT(MustParse({"--autotune", "--autotune-log-file", "t.csv", "--timeline-filename",
                         "t.json", "--timeline-mark-cycles", "c"})
                  .warnings,
              ElementsAre());
  ParsedCommandLine from_env =
      MustParse({"--autotune-log-file", "t.csv", "--autotune-warmup-samples", "7",
                 "--timeline-mark-cycles", "c"},
                {{"HOROVOD_AUTOTUNE", "1"}, {"HOROVOD_TIMELINE", "DYNAMIC"}});
  EXPECT_THAT(from_env.warnings, ElementsAre());
  // and they reach the ranks (until 2026-12-01 they were dropped there, without a word)
  EXPECT_EQ(from_env.spec.worker_env["HVD_AUTOTUNE_LOG"], "t.csv");
  EXPECT_EQ(from_env.spec.worker_env["HVD_AUTOTUNE_WARMUP_SAMPLES"], "7");
  EXPECT_EQ(from_env.spec.worker_env["HVD_TIMELINE_MARK_CYCLES"], "1");
  // The numeric autotune options are said to be idle too
  EXPECT_THAT(MustParse({"--autotune-warmup-samples", "7", "c"}).warnings,
              ElementsAre(HasSubstr("--autotune-warmup-samples does nothing without --autotune")));
}

TEST(FlagsTest, CommandKeepsItsFlagsAndDoubleDash) {
  EXPECT_THAT(MustParse({"-np", "2", "python3", "-u", "train.py", "--lr", "0.1"}).spec.command,
              ElementsAre("python3", "-u", "train.py", "--lr", "0.1"));
  EXPECT_THAT(MustParse({"-np", "2", "--", "-weird", "--verbose"}).spec.command,
              ElementsAre("-weird", "--verbose"));
  EXPECT_FALSE(MustParse({"-np", "2", "python3", "--verbose"}).spec.verbose);
  // hvdrun's spellings after the command are the command's, and noted for a usage error
  EXPECT_THAT(MustParse({"python3", "t.py", "-np", "2", "--hosts=a:2", "--lr", "-H"})
                  .spec.options_after_command,
              ElementsAre("-np", "--hosts", "-H"));
  EXPECT_THAT(MustParse({"-np", "2", "python3", "t.py"}).spec.options_after_command, IsEmpty());
}

TEST(FlagsTest, Modes) {
  EXPECT_TRUE(MustParse({"-v"}).show_version);
  EXPECT_TRUE(MustParse({"--version"}).show_version);
  EXPECT_TRUE(MustParse({"-cb"}).check_build);
  EXPECT_TRUE(MustParse({"--check-build"}).check_build);
  EXPECT_TRUE(MustParse({"--print-config"}).print_config);
  ParsedCommandLine help = MustParse({"-np", "2", "--help"});
  EXPECT_TRUE(help.show_help);
  EXPECT_THAT(help.help_text, HasSubstr("Usage: hvdrun [OPTIONS] [--] COMMAND [ARGS...]"));
  EXPECT_THAT(help.help_text, HasSubstr("-np, --num-proc"));
  EXPECT_THAT(help.help_text, HasSubstr("--no-stall-check"));
  EXPECT_THAT(help.help_text, ::testing::Not(HasSubstr("{false}")));
  EXPECT_THAT(help.help_text, ::testing::Not(HasSubstr("--log-hide-timestamp")));
  EXPECT_TRUE(MustParse({"-h"}).show_help);
}

// A timeline whose directory does not exist here is said at the start (a rank 0 here would
// write none, and only its log would say so); an existing directory, a bare file name and
// DYNAMIC say nothing.
TEST(FlagsTest, ATimelineInAMissingDirectoryIsWarnedAbout) {
  EXPECT_THAT(MustParse({"--timeline-filename", "/nonexistent-hvd/dir/t.json", "c"}).warnings,
              ElementsAre("--timeline-filename '/nonexistent-hvd/dir/t.json': there is no "
                          "directory '/nonexistent-hvd/dir' on this machine, so a rank 0 here "
                          "will write no timeline"));
  EXPECT_THAT(MustParse({"c"}, {{"HOROVOD_TIMELINE", "/nonexistent-hvd/t.json"}}).warnings,
              ElementsAre(HasSubstr("HOROVOD_TIMELINE '/nonexistent-hvd/t.json': there is no "
                                    "directory '/nonexistent-hvd'")));
  EXPECT_THAT(MustParse({"--timeline-filename", "/tmp/t.json", "c"}).warnings, ElementsAre());
  EXPECT_THAT(MustParse({"--timeline-filename", "t.json", "c"}).warnings, ElementsAre());
  EXPECT_THAT(MustParse({"c"}, {{"HOROVOD_TIMELINE", "DYNAMIC"}}).warnings, ElementsAre());
}

// The runtime's variables are checked before any rank starts, as the ranks would see them:
// a malformed one fails the launch naming it (it failed every rank's hvd.init() before).
TEST(FlagsTest, AMalformedRuntimeVariableFailsTheLaunchNamingIt) {
  EXPECT_EQ(ParseError({"-np", "2", "c"}, {{"HOROVOD_FUSION_THRESHOLD", "abc"}}),
            "HOROVOD_FUSION_THRESHOLD: expected an integer, got 'abc' (every rank's hvd.init() "
            "would refuse it; nothing started)");
  EXPECT_THAT(ParseError({"-np", "2", "c"}, {{"HOROVOD_CYCLE_TIME", "-1"}}),
              HasSubstr("HOROVOD_CYCLE_TIME: cycle time"));
  EXPECT_THAT(ParseError({"-np", "2", "c"}, {{"HOROVOD_GPU_OPERATIONS", "FOO"}}),
              HasSubstr("HOROVOD_GPU_OPERATIONS: expected auto, nccl or cpu"));
  EXPECT_THAT(ParseError({"-np", "2", "c"}, {{"HVD_STALL_CHECK_DISABLE", "maybe"}}),
              HasSubstr("HVD_STALL_CHECK_DISABLE"));
  // --print-config still shows what is set, bad values included
  EXPECT_TRUE(MustParse({"--print-config"}, {{"HOROVOD_FUSION_THRESHOLD", "abc"}}).print_config);
  // Good values, from the environment or the flags, pass
  EXPECT_THAT(MustParse({"-np", "2", "--fusion-threshold-mb", "32", "c"},
                        {{"HOROVOD_CYCLE_TIME", "2.5"}, {"HOROVOD_GPU_OPERATIONS", "NCCL"}})
                  .warnings,
              ElementsAre());
}

TEST(FlagsTest, MissingCommandIsAUsageError) {
  EXPECT_THAT(ParseError({"-np", "2"}), HasSubstr("no command given"));
  EXPECT_THAT(ParseError({}), HasSubstr("no command given"));
  // An empty program name ('') is the caller's mistake too, not a command that is not found
  EXPECT_THAT(ParseError({"-np", "2", ""}), HasSubstr("the command's program is an empty string"));
  EXPECT_THAT(ParseError({"-np", "2", "--", "", "x"}),
              HasSubstr("the command's program is an empty string"));
}

TEST(FlagsTest, MutuallyExclusiveGroupsNameBothFlags) {
  EXPECT_EQ(ParseError({"-H", "a:1", "--hostfile", "f", "c"}),
            "argument --hostfile: not allowed with argument --hosts");
  EXPECT_EQ(ParseError({"--hostfile", "f", "--host-discovery-script", "s", "c"}),
            "argument --host-discovery-script: not allowed with argument --hostfile");
  EXPECT_EQ(ParseError({"--gloo", "--mpi", "c"}),
            "argument --mpi: not allowed with argument --gloo");
  EXPECT_EQ(ParseError({"--jsrun", "--gloo", "c"}),
            "argument --jsrun: not allowed with argument --gloo");
}

TEST(FlagsTest, ValidationNamesFlagAndValue) {
  struct Case {
    std::vector<std::string> argv;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {{"--fusion-threshold-mb", "-1"}, "--fusion-threshold-mb: must be >= 0, got -1"},
           // Beyond the runtime's own bounds: hvdrun's usage error, not every rank's init error.
           {{"--fusion-threshold-mb", "9999999999999"},
            "--fusion-threshold-mb: must be in [0, 1048576], got 9999999999999"},
           {{"--cycle-time-ms", "-0.5"}, "--cycle-time-ms: must be >= 0, got -0.5"},
           {{"--cycle-time-ms", "100000"}, "--cycle-time-ms: must be in [0, 60000], got 100000"},
           {{"--cycle-time-ms", "nan"}, "--cycle-time-ms: expected a number, got 'nan'"},
           {{"--cache-capacity", "3000000000"},
            "--cache-capacity: must be in [0, 2147483647], got 3000000000"},
           {{"--autotune-steps-per-sample", "0"},
            "--autotune-steps-per-sample: must be in [1, 1048576], got 0"},
           {{"--autotune-bayes-opt-max-samples", "0"},
            "--autotune-bayes-opt-max-samples: must be in [1, 1048576], got 0"},
           {{"--autotune-steps-per-sample", "-1"},
            "--autotune-steps-per-sample: must be in [1, 1048576], got -1"},
           {{"--autotune-bayes-opt-max-samples", "-1"},
            "--autotune-bayes-opt-max-samples: must be in [1, 1048576], got -1"},
           {{"--autotune-gaussian-process-noise", "nan"},
            "--autotune-gaussian-process-noise: expected a number, got 'nan'"},
           {{"--stall-check-shutdown-time-seconds", "99999999999"},
            "--stall-check-shutdown-time-seconds: must be in [0, 31536000], got 99999999999"},
           {{"--cache-capacity", "-3"}, "--cache-capacity: must be >= 0, got -3"},
           {{"--autotune-warmup-samples", "-1"}, "--autotune-warmup-samples: must be >= 0, got -1"},
           {{"--autotune-gaussian-process-noise", "1.5"},
            "--autotune-gaussian-process-noise: must be in [0, 1], got 1.5"},
           {{"--stall-check-warning-time-seconds", "-1"},
            "--stall-check-warning-time-seconds: must be >= 0, got -1"},
           {{"--num-nccl-streams", "-2"}, "--num-nccl-streams: must be >= 0, got -2"},
           {{"--gloo-timeout-seconds", "-2"}, "--gloo-timeout-seconds: must be >= 0, got -2"},
           {{"--thread-affinity", "-1"}, "--thread-affinity: expected a core id >= 0"},
           {{"--fusion-threshold-mb", "abc"},
            "--fusion-threshold-mb: expected an integer, got 'abc'"},
           {{"--cycle-time-ms", "fast"}, "--cycle-time-ms: expected a number, got 'fast'"},
           {{"--log-level", "LOUD"}, "--log-level: unknown log level 'LOUD'"},
           {{"-np", "0"}, "--num-proc: must be >= 1, got 0"},
           {{"-np", "two"}, "--num-proc: expected an integer, got 'two'"},
           {{"--ssh-port", "70000"}, "--ssh-port: must be <= 65535, got 70000"},
           {{"--start-timeout", "-5"},
            "--start-timeout: must be in [0, 31536000] (a year), got -5"},
           {{"--min-np", "4", "--max-np", "2"}, "--max-np: must be >= --min-np (4), got 2"},
           {{"--blacklist-cooldown-range", "0", "10"},
            "--blacklist-cooldown-range MIN: must be >= 1, got 0 10"},
           {{"--blacklist-cooldown-range", "10", "5000"},
            "--blacklist-cooldown-range MAX: must be <= 3600, got 10 5000"},
           {{"--blacklist-cooldown-range", "100", "10"},
            "--blacklist-cooldown-range: must be MIN <= MAX, got 100 10"},
       }) {
    std::vector<std::string> argv = c.argv;
    argv.push_back("cmd");
    EXPECT_THAT(ParseError(argv), HasSubstr(c.error)) << c.argv[0];
  }
}

TEST(FlagsTest, AbbreviationsAreUsageErrors) {
  EXPECT_THAT(ParseError({"--start", "7", "c"}),
              HasSubstr("unrecognized argument: --start (long options are never abbreviated; "
                        "did you mean --start-timeout?)"));
  EXPECT_THAT(ParseError({"--hier", "c"}), HasSubstr("unrecognized argument: --hier"));
  EXPECT_THAT(ParseError({"--bogus", "c"}), HasSubstr("unrecognized argument: --bogus"));
}

TEST(FlagsTest, ElasticModeSwitches) {
  EXPECT_FALSE(MustParse({"-np", "2", "c"}).spec.elastic());
  ParsedCommandLine e = MustParse({"--elastic", "-np", "2", "c"});
  EXPECT_TRUE(e.spec.elastic());
  EXPECT_EQ(e.spec.num_proc, 2);
  EXPECT_EQ(e.spec.min_num_proc, 2);  // defaults to -np
  EXPECT_EQ(e.settings.at("HVD_ELASTIC").value, "1");
  ParsedCommandLine m = MustParse({"--min-np", "3", "c"});
  EXPECT_TRUE(m.spec.elastic());
  EXPECT_EQ(m.spec.num_proc, 3);  // defaults to --min-np
  EXPECT_TRUE(MustParse({"-np", "1", "--host-discovery-script", "./h.sh", "c"}).spec.elastic());
}

// As horovodrun: accepted and ignored in a static job, with a warning saying what is missing
// (a usage error until 2026-12-01, which broke wrapper scripts that always pass them).
TEST(FlagsTest, ElasticFlagsWithoutElasticModeWarnWhatIsMissing) {
  for (std::vector<std::string> argv :
       std::vector<std::vector<std::string>>{{"--max-np", "4"},
                                             {"--slots", "2"},
                                             {"--reset-limit", "1"},
                                             {"--blacklist-cooldown-range", "1", "2"},
                                             {"--host-discovery-interval", "0.5"},
                                             {"--elastic-timeout", "5"}}) {
    const std::string flag = argv[0] == "--slots" ? "--slots-per-host" : argv[0];
    argv.insert(argv.begin(), {"-np", "2"});
    argv.push_back("c");
    ParsedCommandLine p = MustParse(argv);
    EXPECT_FALSE(p.spec.elastic());
    EXPECT_THAT(p.warnings,
                ElementsAre(flag + " applies to elastic jobs only; ignored in this static "
                                   "job (add --min-np N, --host-discovery-script SCRIPT or "
                                   "--elastic for an elastic one)"));
  }
}

TEST(FlagsTest, ElasticProcessCountsMustNest) {
  EXPECT_EQ(ParseError({"--host-discovery-script", "./h.sh", "c"}),
            "--host-discovery-script needs -np N or --min-np N: how many processes to start "
            "with");
  EXPECT_EQ(ParseError({"-np", "2", "--min-np", "3", "c"}), "-np: must be >= --min-np (3), got 2");
  EXPECT_EQ(ParseError({"--elastic", "-np", "4", "--max-np", "3", "c"}),
            "--max-np: must be >= -np (4), got 3");
  EXPECT_EQ(ParseError({"--elastic", "-np", "2", "--mpi", "c"}),
            "elastic mode runs ranks under hvdrun's own launcher; it cannot be combined with "
            "--mpi");
  EXPECT_THAT(ParseError({"--elastic", "-np", "2", "--host-discovery-interval", "0", "c"}),
              HasSubstr("--host-discovery-interval: must be > 0"));
  EXPECT_THAT(ParseError({"--elastic", "-np", "2", "--elastic-timeout", "x", "c"}),
              HasSubstr("--elastic-timeout"));
}

TEST(FlagsTest, ElasticTimesComeFromTheEnvironmentToo) {
  ParsedCommandLine p =
      MustParse({"--elastic", "-np", "2", "c"}, {{"HOROVOD_ELASTIC_TIMEOUT", "7"},
                                                 {"HVD_HOST_DISCOVERY_INTERVAL", "0.25"},
                                                 {"HVD_HOST_DISCOVERY_TIMEOUT", "3"}});
  EXPECT_EQ(p.spec.elastic_timeout_s, 7);
  EXPECT_EQ(p.spec.discovery_interval_s, 0.25);
  EXPECT_EQ(p.spec.discovery_timeout_s, 3);
  ParsedCommandLine defaults = MustParse({"--elastic", "-np", "2", "c"});
  EXPECT_EQ(defaults.spec.elastic_timeout_s, 600);
  EXPECT_EQ(defaults.spec.discovery_interval_s, 1);
  EXPECT_EQ(defaults.spec.discovery_timeout_s, 10);
  EXPECT_EQ(MustParse({"--elastic", "-np", "2", "--host-discovery-interval", "0.1", "c"})
                .spec.discovery_interval_s,
            0.1);
}

TEST(FlagsTest, RepeatedFlagsLastWins) {
  ParsedCommandLine p = MustParse({"-np", "2", "-np", "3", "--autotune", "--no-autotune",
                                   "--no-hierarchical-allreduce", "--hierarchical-allreduce", "c"});
  EXPECT_EQ(p.spec.num_proc, 3);
  EXPECT_EQ(p.spec.worker_env.at("HOROVOD_AUTOTUNE"), "0");
  EXPECT_EQ(p.spec.worker_env.at("HOROVOD_HIERARCHICAL_ALLREDUCE"), "1");
}

}  // namespace
}  // namespace hvd::cmd
