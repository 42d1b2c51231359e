#include "discovery/lsf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/temp_file.h"

namespace hvd::discovery {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(LsfAllocationTest, NotInLsfIsNullopt) {
  Result<std::optional<Allocation>> got =
      LsfAllocation(env::Environment::FromMap({{"LSB_MCPU_HOSTS", "a 2"}}));
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
}

TEST(LsfAllocationTest, ReadsEachSourceKeepingTheLaunchHost) {
  hvd::testing::TempFile djob("djob_hosts", "launch\nlaunch\nc1\r\nc1\n\nc2\n");
  struct Case {
    std::map<std::string, std::string> vars;
    std::vector<HostSlots> want;
    std::string source;
  };
  const std::vector<Case> cases = {
      {{{"LSB_JOBID", "7"}, {"LSB_DJOB_HOSTFILE", djob.path()}, {"LSB_MCPU_HOSTS", "x 1"}},
       {{"launch", 2, {}}, {"c1", 2, {}}, {"c2", 1, {}}},
       "LSF allocation (LSB_DJOB_HOSTFILE=" + djob.path() + ")"},
      {{{"LSB_JOBID", "7"}, {"LSB_MCPU_HOSTS", "launch 1 c1 4 c2 4 "}, {"LSB_HOSTS", "x"}},
       {{"launch", 1, {}}, {"c1", 4, {}}, {"c2", 4, {}}},
       "LSF allocation (LSB_MCPU_HOSTS)"},
      {{{"LSB_JOBID", "7"}, {"LSB_HOSTS", "launch c1 c1 c2 c2"}},
       {{"launch", 1, {}}, {"c1", 2, {}}, {"c2", 2, {}}},
       "LSF allocation (LSB_HOSTS)"},
  };
  for (const Case& c : cases) {
    Result<std::optional<Allocation>> got = LsfAllocation(env::Environment::FromMap(c.vars));
    ASSERT_TRUE(got.ok()) << c.source << ": " << got.status().ToString();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ((*got)->hosts, c.want) << c.source;
    EXPECT_EQ((*got)->source, c.source);
    EXPECT_FALSE((*got)->num_proc.has_value());
  }
}

TEST(LsfAllocationTest, RejectsBadValuesNamingTheVariable) {
  hvd::testing::TempFile bad_file("djob_bad", "c1\nc$2\n");
  const std::vector<std::pair<std::map<std::string, std::string>, std::vector<std::string>>> cases =
      {
          {{{"LSB_JOBID", "1"}}, {"LSB_JOBID is set but none of"}},
          {{{"LSB_JOBID", "1"}, {"LSB_MCPU_HOSTS", "a 2 b"}},
           {"LSB_MCPU_HOSTS='a 2 b'", "pairs", "3 words"}},
          {{{"LSB_JOBID", "1"}, {"LSB_MCPU_HOSTS", "a 2 b x"}},
           {"LSB_MCPU_HOSTS='a 2 b x'", "column 5", "slot count 'x'"}},
          {{{"LSB_JOBID", "1"}, {"LSB_MCPU_HOSTS", "a 0"}}, {"slot count '0'"}},
          {{{"LSB_JOBID", "1"}, {"LSB_MCPU_HOSTS", ""}}, {"lists no hosts"}},
          {{{"LSB_JOBID", "1"}, {"LSB_HOSTS", "a b@c"}},
           {"LSB_HOSTS='a b@c'", "column 3", "'b@c'"}},
          {{{"LSB_JOBID", "1"}, {"LSB_DJOB_HOSTFILE", hvd::testing::MissingPath()}},
           {"LSB_DJOB_HOSTFILE", hvd::testing::MissingPath()}},
          {{{"LSB_JOBID", "1"}, {"LSB_DJOB_HOSTFILE", bad_file.path()}},
           {bad_file.path() + ":2", "'c$2'"}},
      };
  for (const auto& [vars, fragments] : cases) {
    Result<std::optional<Allocation>> got = LsfAllocation(env::Environment::FromMap(vars));
    ASSERT_FALSE(got.ok()) << fragments.front();
    for (const std::string& fragment : fragments) {
      EXPECT_THAT(got.status().message(), HasSubstr(fragment));
    }
  }
}

}  // namespace
}  // namespace hvd::discovery
