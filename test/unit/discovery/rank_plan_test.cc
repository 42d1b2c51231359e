#include "discovery/rank_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hvd::discovery {
namespace {

using ::testing::HasSubstr;

struct Case {
  std::string name;
  std::vector<HostSlots> hosts;
  int num_proc;
  std::vector<RankInfo> want;  // {rank, local_rank, local_size, cross_rank, cross_size, host,
                               //  host_index, host_count}
};

TEST(PlanRanksTest, AssignsLikeHorovod) {
  const std::vector<Case> cases = {
      {"heterogeneous hosts a:2,b:1,c:2 (Horovod's placement)",
       {{"a", 2, {}}, {"b", 1, {}}, {"c", 2, {}}},
       5,
       {{0, 0, 2, 0, 3, "a", 0, 3},
        {1, 1, 2, 0, 2, "a", 0, 3},
        {2, 0, 1, 1, 3, "b", 1, 3},
        {3, 0, 2, 2, 3, "c", 2, 3},
        {4, 1, 2, 1, 2, "c", 2, 3}}},
      {"np smaller than slots starts np ranks (Horovod's Gloo bug fixed)",
       {{"localhost", 4, {}}},
       2,
       {{0, 0, 2, 0, 1, "localhost", 0, 1}, {1, 1, 2, 0, 1, "localhost", 0, 1}}},
      {"np stops inside the second host",
       {{"a", 2, {}}, {"b", 2, {}}},
       3,
       {{0, 0, 2, 0, 2, "a", 0, 2}, {1, 1, 2, 0, 1, "a", 0, 2}, {2, 0, 1, 1, 2, "b", 1, 2}}},
      {"hosts without ranks are left out",
       {{"a", 2, {}}, {"b", 2, {}}, {"c", 2, {}}},
       2,
       {{0, 0, 2, 0, 1, "a", 0, 1}, {1, 1, 2, 0, 1, "a", 0, 1}}},
      {"a later host has the most slots",
       {{"a", 1, {}}, {"b", 3, {}}},
       4,
       {{0, 0, 1, 0, 2, "a", 0, 2},
        {1, 0, 3, 1, 2, "b", 1, 2},
        {2, 1, 3, 0, 1, "b", 1, 2},
        {3, 2, 3, 0, 1, "b", 1, 2}}},
      {"homogeneous",
       {{"a", 2, {}}, {"b", 2, {}}},
       4,
       {{0, 0, 2, 0, 2, "a", 0, 2},
        {1, 1, 2, 0, 2, "a", 0, 2},
        {2, 0, 2, 1, 2, "b", 1, 2},
        {3, 1, 2, 1, 2, "b", 1, 2}}},
  };
  for (const Case& c : cases) {
    Result<std::vector<RankInfo>> got = PlanRanks(c.hosts, c.num_proc);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.name;
  }
}

TEST(PlanRanksTest, RejectsImpossibleRequests) {
  struct Bad {
    std::vector<HostSlots> hosts;
    int num_proc;
    std::vector<std::string> fragments;
  };
  const std::vector<Bad> cases = {
      {{{"a", 2, {}}, {"b", 2, {}}},
       5,
       {"requested 5 processes but the hosts provide only 4 slots", "(a:2,b:2)"}},
      {{{"a", 2, {}}}, 0, {"at least 1, got 0"}},
      {{{"a", 2, {}}}, -1, {"at least 1, got -1"}},
      {{}, 1, {"no hosts"}},
      {{{"a", 0, {}}}, 1, {"host 'a' has 0 slots"}},
  };
  for (const Bad& c : cases) {
    Result<std::vector<RankInfo>> got = PlanRanks(c.hosts, c.num_proc);
    ASSERT_FALSE(got.ok()) << c.fragments.front();
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    for (const std::string& fragment : c.fragments) {
      EXPECT_THAT(got.status().message(), HasSubstr(fragment));
    }
  }
}

}  // namespace
}  // namespace hvd::discovery
