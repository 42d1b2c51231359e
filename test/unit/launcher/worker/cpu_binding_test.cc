#include "launcher/worker/cpu_binding.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

TEST(CpuBindingTest, EvenSharesInOrderOfTheAllowedCpus) {
  const std::vector<int> allowed = {0, 2, 3, 5, 6, 7};
  EXPECT_EQ(CpuShare(allowed, 0, 2), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(CpuShare(allowed, 1, 2), (std::vector<int>{5, 6, 7}));
  EXPECT_EQ(CpuShare(allowed, 0, 4), (std::vector<int>{0}));
  EXPECT_EQ(CpuShare(allowed, 1, 4), (std::vector<int>{2, 3}));
  EXPECT_EQ(CpuShare(allowed, 3, 4), (std::vector<int>{6, 7}));
  EXPECT_EQ(CpuShare(allowed, 5, 6), (std::vector<int>{7}));
}

TEST(CpuBindingTest, NoShareWhenRanksOutnumberCpusOrTheRankIsOutOfRange) {
  EXPECT_TRUE(CpuShare({0, 1}, 0, 3).empty());
  EXPECT_TRUE(CpuShare({0, 1}, 2, 2).empty());
  EXPECT_TRUE(CpuShare({0, 1}, -1, 2).empty());
  EXPECT_TRUE(CpuShare({}, 0, 1).empty());
}

TEST(CpuBindingTest, PolicyFromTheRanksEnvironment) {
  const std::vector<int> allowed = {0, 1, 2, 3};
  std::map<std::string, std::string> env = {{"HVD_LOCAL_RANK", "1"}, {"HVD_LOCAL_SIZE", "2"}};
  EXPECT_FALSE(RankCpuSet(env, allowed)->has_value());  // default: none
  env["HVD_BIND_TO"] = "core";
  auto set = RankCpuSet(env, allowed);
  ASSERT_TRUE(set.ok());
  ASSERT_TRUE(set->has_value());
  EXPECT_EQ(CPU_COUNT(&**set), 2);
  EXPECT_TRUE(CPU_ISSET(2, &**set) && CPU_ISSET(3, &**set));

  env["HVD_BIND_TO"] = "none";
  EXPECT_FALSE(RankCpuSet(env, allowed)->has_value());
  env["HVD_BIND_TO"] = "core";
  env.erase("HVD_LOCAL_SIZE");  // unknown local size: not bound
  EXPECT_FALSE(RankCpuSet(env, allowed)->has_value());

  env["HVD_BIND_TO"] = "socket";
  auto bad = RankCpuSet(env, allowed);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("HVD_BIND_TO: unknown value 'socket'"), std::string::npos);
}

}  // namespace
}  // namespace hvd::launcher
