#include "cmd/argv_normalizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cmd/cli_app.h"

namespace hvd::cmd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The real option table, so the tests follow hvdrun's flags.
NormalizedArgv Normalize(const std::vector<std::string>& argv) {
  Result<NormalizedArgv> r = NormalizeArgv(argv, OptionShapes(*BuildApp()));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : NormalizedArgv{};
}

std::string NormalizeError(const std::vector<std::string>& argv) {
  Result<NormalizedArgv> r = NormalizeArgv(argv, OptionShapes(*BuildApp()));
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

TEST(NormalizeArgvTest, ValuesAreJoinedToTheirOption) {
  NormalizedArgv n = Normalize({"--start-timeout", "10", "--verbose", "--hosts=a:1", "cmd"});
  EXPECT_THAT(n.options, ElementsAre("--start-timeout=10", "--verbose", "--hosts=a:1"));
  EXPECT_THAT(n.command, ElementsAre("cmd"));
}

TEST(NormalizeArgvTest, SingleDashMultiLetterSpellings) {
  NormalizedArgv n =
      Normalize({"-np", "4", "-cb", "-hostfile", "hosts.txt", "-prefix-timestamp", "-np=8", "x"});
  EXPECT_THAT(n.options, ElementsAre("--num-proc=4", "--check-build", "--hostfile=hosts.txt",
                                     "--prefix-output-with-timestamp", "--num-proc=8"));
}

TEST(NormalizeArgvTest, AnEmptyValueStaysItsOptionsValue) {
  // "--mpi-args=" would be CLI11's option without a value, taking the next argument for it.
  NormalizedArgv n = Normalize({"--mpi-args=", "-np", "2", "--mpi-args", "", "-p=", "x"});
  EXPECT_THAT(n.options,
              ElementsAre("--mpi-args", "", "--num-proc=2", "--mpi-args", "", "--ssh-port", ""));
}

TEST(NormalizeArgvTest, ShortOptionsTakeAttachedOrSeparateValues) {
  NormalizedArgv n = Normalize({"-p22", "-i", "key", "-Ha:2,b:2", "-v", "cmd"});
  EXPECT_THAT(n.options, ElementsAre("--ssh-port=22", "--ssh-identity-file=key", "--hosts=a:2,b:2",
                                     "--version"));
}

TEST(NormalizeArgvTest, LongOptionsAreNeverMatchedByPrefix) {
  EXPECT_EQ(NormalizeError({"--num-p", "3", "c"}),
            "unrecognized argument: --num-p (long options are never abbreviated; did you mean "
            "--num-proc?)");
  EXPECT_EQ(NormalizeError({"--fusion=5", "c"}),
            "unrecognized argument: --fusion (long options are never abbreviated; did you mean "
            "--fusion-threshold-mb?)");
  EXPECT_EQ(NormalizeError({"--no-stall", "c"}),
            "unrecognized argument: --no-stall (long options are never abbreviated; did you "
            "mean --no-stall-check?)");
}

// Regression: horovodrun (argparse) reads "--elastic -np 2" as "--elastic-timeout -np".
TEST(NormalizeArgvTest, ElasticIsASwitchOfItsOwn) {
  NormalizedArgv n = Normalize({"--elastic", "-np", "2", "--elastic-timeout", "5", "c"});
  EXPECT_THAT(n.options, ElementsAre("--elastic", "--num-proc=2", "--elastic-timeout=5"));
  EXPECT_THAT(n.command, ElementsAre("c"));
}

TEST(NormalizeArgvTest, SlotsIsAnAliasNotAPrefix) {
  EXPECT_THAT(Normalize({"--slots", "2", "c"}).options, ElementsAre("--slots-per-host=2"));
  EXPECT_THAT(NormalizeError({"--slot", "2", "c"}), HasSubstr("unrecognized argument: --slot"));
}

TEST(NormalizeArgvTest, ExactSpellingWinsOverLongerOnes) {
  NormalizedArgv n = Normalize(
      {"--mpi", "--network-interface", "eth0", "--timeline", "t.json", "--autotune", "c"});
  EXPECT_THAT(n.options, ElementsAre("--mpi", "--network-interface=eth0",
                                     "--timeline-filename=t.json", "--autotune"));
}

TEST(NormalizeArgvTest, AbbreviationOfSeveralOptionsListsThem) {
  EXPECT_EQ(NormalizeError({"--hier", "c"}),
            "unrecognized argument: --hier (long options are never abbreviated; did you mean "
            "one of --hierarchical-allgather, --hierarchical-allreduce?)");
  EXPECT_EQ(NormalizeError({"--min", "2", "c"}),
            "unrecognized argument: --min (long options are never abbreviated; did you mean one "
            "of --min-np, --min-num-proc?)");
}

TEST(NormalizeArgvTest, AMistypedOptionGetsTheOneItMostLikelyMeant) {
  // Other dashes, '_' for '-', another case: the same option
  EXPECT_EQ(NormalizeError({"--np", "2", "c"}), "unrecognized argument: --np (did you mean -np?)");
  EXPECT_EQ(NormalizeError({"--fusion_threshold_mb", "3", "c"}),
            "unrecognized argument: --fusion_threshold_mb (did you mean --fusion-threshold-mb?)");
  EXPECT_EQ(NormalizeError({"--Verbose", "c"}),
            "unrecognized argument: --Verbose (did you mean --verbose?)");
  // A single-dash option cut short
  EXPECT_EQ(NormalizeError({"-hostfil", "h", "c"}),
            "unrecognized argument: -hostfil (did you mean -hostfile?)");
  // One edit, two from 8 letters on; of an option's spellings, the one with as many dashes
  EXPECT_EQ(NormalizeError({"--hostfle", "h", "c"}),
            "unrecognized argument: --hostfle (did you mean --hostfile?)");
  EXPECT_EQ(NormalizeError({"--fusion-treshold-mb=3", "c"}),
            "unrecognized argument: --fusion-treshold-mb (did you mean --fusion-threshold-mb?)");
  EXPECT_EQ(NormalizeError({"--timeline-filenmae", "t", "c"}),
            "unrecognized argument: --timeline-filenmae (did you mean --timeline-filename?)");
  // Nothing near: no guess; short names get none by edits (-x is one from -v, -p, -i, -H)
  EXPECT_EQ(NormalizeError({"--bogus", "c"}), "unrecognized argument: --bogus");
  EXPECT_EQ(NormalizeError({"-q", "c"}), "unrecognized argument: -q");
  EXPECT_EQ(NormalizeError({"--np-max", "c"}), "unrecognized argument: --np-max");
}

TEST(NormalizeArgvTest, AnotherLaunchersOptionIsAnsweredWithHvdrunsWay) {
  EXPECT_EQ(NormalizeError({"-n", "2", "c"}),
            "unrecognized argument: -n (mpirun's; hvdrun's is -np N)");
  EXPECT_EQ(NormalizeError({"-c", "2", "c"}),
            "unrecognized argument: -c (mpirun's; hvdrun's is -np N)");
  // Not -p with "pn" attached
  EXPECT_EQ(NormalizeError({"-ppn", "2", "c"}),
            "unrecognized argument: -ppn (ranks per host (mpirun's); hvdrun takes each host's "
            "slots, -H a:4,b:4)");
  EXPECT_THAT(NormalizeError({"--host", "a:2", "c"}), HasSubstr("hvdrun's is -H/--hosts"));
  EXPECT_THAT(NormalizeError({"--nproc_per_node", "2", "c"}), HasSubstr("torchrun's; hvdrun's"));
  EXPECT_THAT(NormalizeError({"--nnodes=2", "c"}),
              HasSubstr("--nnodes (torchrun's; hvdrun starts every host's ranks from one "
                        "command"));
  EXPECT_THAT(NormalizeError({"--master_port", "1", "c"}),
              HasSubstr("export MASTER_ADDR / MASTER_PORT"));
  EXPECT_EQ(NormalizeError({"-x", "A=1", "c"}),
            "unrecognized argument: -x (mpirun's; hvdrun passes its environment on to every "
            "rank: export the variable before running hvdrun)");
  EXPECT_THAT(NormalizeError({"-mca", "btl", "x", "c"}),
              HasSubstr("-mca (mpirun's; under --mpi, --mpi-args \"...\" passes options on"));
  // hvdrun's own spellings stay its own
  EXPECT_THAT(Normalize({"-np", "2", "-p2222", "--bind-to", "core", "c"}).options,
              ElementsAre("--num-proc=2", "--ssh-port=2222", "--bind-to=core"));
}

TEST(NormalizeArgvTest, CommandKeepsItsOwnFlags) {
  NormalizedArgv n = Normalize({"-np", "2", "python3", "-u", "train.py", "--lr", "0.1", "-np"});
  EXPECT_THAT(n.options, ElementsAre("--num-proc=2"));
  EXPECT_THAT(n.command, ElementsAre("python3", "-u", "train.py", "--lr", "0.1", "-np"));
}

TEST(NormalizeArgvTest, DoubleDashEndsHvdrunFlags) {
  NormalizedArgv n = Normalize({"-np", "2", "--", "--weird-program", "-x"});
  EXPECT_THAT(n.options, ElementsAre("--num-proc=2"));
  EXPECT_THAT(n.command, ElementsAre("--weird-program", "-x"));
}

TEST(NormalizeArgvTest, ValuesMayStartWithADash) {
  NormalizedArgv n = Normalize({"--mpi-args", "-x FOO", "--start-timeout", "-5", "c"});
  EXPECT_THAT(n.options, ElementsAre("--mpi-args=-x FOO", "--start-timeout=-5"));
}

TEST(NormalizeArgvTest, TwoValueOption) {
  EXPECT_THAT(Normalize({"--blacklist-cooldown-range", "10", "100", "c"}).options,
              ElementsAre("--blacklist-cooldown-range=10,100"));
  EXPECT_THAT(NormalizeError({"--blacklist-cooldown-range", "10"}),
              HasSubstr("argument --blacklist-cooldown-range: expected 2 arguments"));
}

TEST(NormalizeArgvTest, NoCommand) { EXPECT_THAT(Normalize({"-np", "2"}).command, IsEmpty()); }

TEST(NormalizeArgvTest, Errors) {
  EXPECT_EQ(NormalizeError({"--bogus", "c"}), "unrecognized argument: --bogus");
  EXPECT_EQ(NormalizeError({"-q", "c"}), "unrecognized argument: -q");
  EXPECT_EQ(NormalizeError({"--start-timeout"}), "argument --start-timeout: expected one argument");
  EXPECT_EQ(NormalizeError({"--verbose=1", "c"}),
            "argument --verbose: ignored explicit argument '1'");
  EXPECT_EQ(NormalizeError({"-vx", "c"}), "unrecognized argument: -vx");
}

TEST(NormalizeArgvTest, HandMadeShapes) {
  std::vector<OptionShape> shapes = {{"--alpha", {"-a"}, 1}, {"--alpine", {}, 0}};
  Result<NormalizedArgv> r = NormalizeArgv({"-a", "1", "--alpine", "--", "x"}, shapes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->options, ElementsAre("--alpha=1", "--alpine"));
  EXPECT_THAT(r->command, ElementsAre("x"));
  Result<NormalizedArgv> prefix = NormalizeArgv({"--alpi"}, shapes);
  ASSERT_FALSE(prefix.ok());
  EXPECT_EQ(prefix.status().message(),
            "unrecognized argument: --alpi (long options are never abbreviated; did you mean "
            "--alpine?)");
}

}  // namespace
}  // namespace hvd::cmd
