#include "discovery/slurm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvd::discovery {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct ExpandCase {
  std::string nodelist;
  std::vector<std::string> want;
};

TEST(ExpandSlurmHostlistTest, ExpandsRangesListsAndProducts) {
  const std::vector<ExpandCase> cases = {
      {"x", {"x"}},
      {"a,b", {"a", "b"}},
      {"node[01-04,07],gpu-[1-2]a,x",
       {"node01", "node02", "node03", "node04", "node07", "gpu-1a", "gpu-2a", "x"}},
      {"r[1-2]n[1-2]", {"r1n1", "r1n2", "r2n1", "r2n2"}},
      {"n[8-11]", {"n8", "n9", "n10", "n11"}},
      {"n[008-010]", {"n008", "n009", "n010"}},
      {"n[3]", {"n3"}},
      {"[1-2]x", {"1x", "2x"}},
      {"n[1-2],m[5]", {"n1", "n2", "m5"}},
      {" n[1-2] ", {"n1", "n2"}},
      {"node1.cluster,node2.cluster", {"node1.cluster", "node2.cluster"}},
      // The largest numbers: the loop used to run past LLONG_MAX, filling memory (2026-12-01).
      {"n[9223372036854775807]", {"n9223372036854775807"}},
      {"n[9223372036854775806-9223372036854775807]",
       {"n9223372036854775806", "n9223372036854775807"}},
  };
  for (const ExpandCase& c : cases) {
    Result<std::vector<std::string>> got = ExpandSlurmHostlist(c.nodelist);
    ASSERT_TRUE(got.ok()) << c.nodelist << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.nodelist;
  }
}

struct BadSlurmCase {
  std::string text;
  std::vector<std::string> fragments;
};

void ExpectAllBad(const std::vector<BadSlurmCase>& cases, auto parse) {
  for (const BadSlurmCase& c : cases) {
    auto got = parse(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.text;
    for (const std::string& fragment : c.fragments) {
      EXPECT_THAT(got.status().message(), HasSubstr(fragment)) << c.text;
    }
  }
}

TEST(ExpandSlurmHostlistTest, RejectsMalformedListsQuotingColumn) {
  ExpectAllBad(
      {
          {"", {"Slurm node list ''", "empty"}},
          {"node[01-", {"'node[01-'", "column 5", "unmatched '['"}},
          {"node01]", {"column 7", "unmatched ']'"}},
          {"n[1-[2]]", {"nested '['"}},
          {"n[]", {"column 3", "range ''"}},
          {"n[4-2]", {"column 3", "range '4-2'", "descending"}},
          {"n[a-b]", {"range 'a-b'"}},
          {"n[1-2,,3]", {"column 7", "range ''"}},
          {"a,,b", {"column 3", "empty item"}},
          {"n[1-2],bad@host", {"column 8", "'bad@host'", "contains '@'"}},
          {"n[0-99999999]", {"too large"}},
          {"a[0-999]b[0-999]c[0-9]", {"more than 65536"}},
          {"n[0-65536]", {"too large"}},
      },
      ExpandSlurmHostlist);
}

TEST(ParseSlurmTasksPerNodeTest, ExpandsRepeats) {
  const std::vector<std::pair<std::string, std::vector<int>>> cases = {
      {"2(x3),1", {2, 2, 2, 1}}, {"4", {4}},      {"1,2,3", {1, 2, 3}},
      {"8(x2)", {8, 8}},         {"0,2", {0, 2}},
  };
  for (const auto& [text, want] : cases) {
    Result<std::vector<int>> got = ParseSlurmTasksPerNode(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().ToString();
    EXPECT_EQ(*got, want) << text;
  }
}

TEST(ParseSlurmTasksPerNodeTest, RejectsMalformedCounts) {
  ExpectAllBad(
      {
          {"", {"SLURM_TASKS_PER_NODE ''", "empty"}},
          {"2(x3", {"'2(x3'", "expected 'N' or 'N(xM)'"}},
          {"2(3)", {"'2(3)'"}},
          {"2(x0)", {"'2(x0)'", "M >= 1"}},
          {"1,x", {"column 3", "'x'"}},
          {"1,,2", {"column 3", "''"}},
          {"-1", {"'-1'"}},
          {"2(xq)", {"'2(xq)'"}},
      },
      ParseSlurmTasksPerNode);
}

env::Environment SlurmEnv(std::map<std::string, std::string> vars) {
  return env::Environment::FromMap(std::move(vars));
}

TEST(SlurmAllocationTest, NotInSlurmIsNullopt) {
  Result<std::optional<Allocation>> got = SlurmAllocation(SlurmEnv({{"PATH", "/bin"}}));
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
}

TEST(SlurmAllocationTest, UsesNodeListTasksAndNtasks) {
  Result<std::optional<Allocation>> got = SlurmAllocation(SlurmEnv({
      {"SLURM_JOB_NODELIST", "node[01-03],gpu1"},
      {"SLURM_TASKS_PER_NODE", "2(x3),4"},
      {"SLURM_NTASKS", "9"},
  }));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  const Allocation& a = **got;
  EXPECT_THAT(a.hosts, ElementsAre(HostSlots{"node01", 2, {}}, HostSlots{"node02", 2, {}},
                                   HostSlots{"node03", 2, {}}, HostSlots{"gpu1", 4, {}}));
  EXPECT_EQ(a.num_proc, 9);
  EXPECT_EQ(a.source, "Slurm allocation (SLURM_JOB_NODELIST=node[01-03],gpu1)");
}

TEST(SlurmAllocationTest, FallsBackToOldNamesAndOneSlotPerNode) {
  Result<std::optional<Allocation>> got =
      SlurmAllocation(SlurmEnv({{"SLURM_NODELIST", "n[1-2]"}, {"SLURM_NPROCS", "2"}}));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_THAT((*got)->hosts, ElementsAre(HostSlots{"n1", 1, {}}, HostSlots{"n2", 1, {}}));
  EXPECT_EQ((*got)->num_proc, 2);
  EXPECT_THAT((*got)->source, HasSubstr("SLURM_NODELIST=n[1-2]"));
}

TEST(SlurmAllocationTest, DropsNodesWithoutTasksAndLeavesNumProcUnset) {
  Result<std::optional<Allocation>> got = SlurmAllocation(
      SlurmEnv({{"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2,0,1"}}));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT((*got)->hosts, ElementsAre(HostSlots{"n1", 2, {}}, HostSlots{"n3", 1, {}}));
  EXPECT_FALSE((*got)->num_proc.has_value());
}

TEST(SlurmAllocationTest, RejectsInconsistentEnvironment) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::vector<std::string>>> cases =
      {
          {{{"SLURM_JOB_NODELIST", "n[1-4]"}, {"SLURM_TASKS_PER_NODE", "2(x3)"}},
           {"SLURM_TASKS_PER_NODE='2(x3)' gives 3", "SLURM_JOB_NODELIST='n[1-4]' expands to 4"}},
          {{{"SLURM_JOB_NODELIST", "n[1-"}}, {"SLURM_JOB_NODELIST", "'n[1-'", "unmatched '['"}},
          {{{"SLURM_JOB_NODELIST", "n1"}, {"SLURM_NTASKS", "many"}},
           {"SLURM_NTASKS='many'", "not a positive integer"}},
          {{{"SLURM_JOB_NODELIST", "n1"}, {"SLURM_NTASKS", "0"}}, {"SLURM_NTASKS='0'"}},
          {{{"SLURM_JOB_NODELIST", "n1,n1"}}, {"names node 'n1' twice"}},
          {{{"SLURM_JOB_NODELIST", "n1"}, {"SLURM_TASKS_PER_NODE", "0"}}, {"no node with tasks"}},
          {{{"SLURM_JOB_NODELIST", ""}}, {"SLURM_JOB_NODELIST", "empty"}},
      };
  for (const auto& [vars, fragments] : cases) {
    Result<std::optional<Allocation>> got = SlurmAllocation(SlurmEnv(vars));
    ASSERT_FALSE(got.ok()) << fragments.front();
    for (const std::string& fragment : fragments) {
      EXPECT_THAT(got.status().message(), HasSubstr(fragment));
    }
  }
}

}  // namespace
}  // namespace hvd::discovery
