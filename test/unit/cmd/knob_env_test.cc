#include "cmd/knob_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvd::cmd {
namespace {

using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(FormatPythonFloatTest, MatchesPythonStr) {
  struct Case {
    double value;
    const char* python;
  };
  for (const Case& c : std::vector<Case>{{20, "20.0"},
                                         {0.2, "0.2"},
                                         {1, "1.0"},
                                         {0, "0.0"},
                                         {-2.5, "-2.5"},
                                         {123.456, "123.456"},
                                         {0.1 + 0.2, "0.30000000000000004"},
                                         {1e15, "1000000000000000.0"},
                                         {1e16, "1e+16"},
                                         {2.5e20, "2.5e+20"},
                                         {0.0001, "0.0001"},
                                         {1e-5, "1e-05"},
                                         {1.5e-7, "1.5e-07"},
                                         {1e100, "1e+100"}}) {
    EXPECT_EQ(FormatPythonFloat(c.value), c.python) << c.value;
  }
  EXPECT_EQ(FormatPythonFloat(1.0 / 0.0), "inf");
  EXPECT_EQ(FormatPythonFloat(-1.0 / 0.0), "-inf");
}

TEST(KnobEnvTest, NothingSetWritesNothing) { EXPECT_THAT(KnobEnv(Knobs{}), IsEmpty()); }

TEST(KnobEnvTest, SourceNamesTheConfigFile) {
  Knobs k;
  k.cache_capacity.Set(5, Origin::kConfigFile, "c.yaml");
  k.fusion_threshold_mb.Set(1, Origin::kCommandLine);
  std::vector<EnvAssignment> env = KnobEnv(k);
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0].var, "HVD_FUSION_THRESHOLD");
  EXPECT_EQ(env[0].source, "command line");
  EXPECT_EQ(env[1].var, "HVD_CACHE_CAPACITY");
  EXPECT_EQ(env[1].source, "config file c.yaml");
}

TEST(KnobEnvTest, WriteBothNamesUsesTheRegistryAlias) {
  std::map<std::string, std::string> env;
  WriteBothNames({{"HVD_CYCLE_TIME", "5.0", ""},
                  {"HVD_AUTOTUNE_CACHE", "f", ""},
                  {"NCCL_IB_DISABLE", "1", ""}},
                 &env);
  EXPECT_THAT(env,
              UnorderedElementsAre(Pair("HVD_CYCLE_TIME", "5.0"), Pair("HOROVOD_CYCLE_TIME", "5.0"),
                                   Pair("HVD_AUTOTUNE_CACHE", "f"), Pair("NCCL_IB_DISABLE", "1")));
}

}  // namespace
}  // namespace hvd::cmd
