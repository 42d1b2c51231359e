#include "runtime/transports/host_layout.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace hvd::runtime {
namespace {

TEST(HostLayoutTest, RanksOnTheSameMachineAreCountedByMachineId) {
  // The kernel's boot id: a 36-character UUID, the same on every call.
  const std::string id = MachineId();
  EXPECT_EQ(id.size(), 36u) << id;
  EXPECT_EQ(MachineId(), id);
  // Two netns "hosts" of machine m and one of machine n.
  const std::vector<std::string> machines = {"m", "m", "n", "m"};
  EXPECT_EQ(CountSameMachine(machines, 0), 3);
  EXPECT_EQ(CountSameMachine(machines, 2), 1);
  // An unreadable id counts only the member itself.
  EXPECT_EQ(CountSameMachine({"", "", "m"}, 1), 1);
}

TEST(HostLayoutTest, EvenHostMajorGroupIsUniform) {
  const std::vector<std::string> hosts = {"a", "a", "b", "b", "c", "c"};
  const HostLayout l = ComputeHostLayout(hosts, 3);
  EXPECT_TRUE(l.uniform);
  EXPECT_EQ(l.hosts, 3);
  EXPECT_EQ(l.host_index, 1);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_size, 2);
  EXPECT_EQ(l.local_members, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(l.cross_members, (std::vector<int32_t>{1, 3, 5}));
  EXPECT_EQ(l.summary, "a x2, b x2, c x2");
}

TEST(HostLayoutTest, UnevenOrInterleavedGroupsAreNotUniform) {
  // Given 3 + 1 members, or 2 + 2 interleaved (a, b, a, b), the hierarchy does not apply.
  const HostLayout uneven = ComputeHostLayout({"a", "a", "a", "b"}, 3);
  EXPECT_FALSE(uneven.uniform);
  EXPECT_EQ(uneven.local_size, 1);
  EXPECT_TRUE(uneven.cross_members.empty());
  EXPECT_EQ(uneven.summary, "a x3, b x1");
  const HostLayout interleaved = ComputeHostLayout({"a", "b", "a", "b"}, 2);
  EXPECT_FALSE(interleaved.uniform);
  EXPECT_EQ(interleaved.local_members, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(interleaved.local_rank, 1);
}

TEST(HostLayoutTest, OneHostAndOneRankPerHost) {
  const HostLayout one = ComputeHostLayout({"a", "a", "a"}, 2);
  EXPECT_EQ(one.hosts, 1);
  EXPECT_TRUE(one.uniform);
  EXPECT_EQ(one.cross_members, (std::vector<int32_t>{2}));
  const HostLayout spread = ComputeHostLayout({"a", "b", "c"}, 1);
  EXPECT_TRUE(spread.uniform);
  EXPECT_EQ(spread.local_size, 1);
  EXPECT_EQ(spread.cross_members, (std::vector<int32_t>{0, 1, 2}));
}

TEST(HostLayoutTest, RanksPerCpuRoundsUp) {
  // Given this machine's online CPUs, ranks up to one per CPU have a CPU each, then each CPU
  // is shared by the ranks over it, rounded up.
  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  ASSERT_GT(cpus, 0);
  EXPECT_EQ(RanksPerCpu(0), 1);
  EXPECT_EQ(RanksPerCpu(1), 1);
  EXPECT_EQ(RanksPerCpu(cpus), 1);
  EXPECT_TRUE(CpuPerRank(cpus));
  EXPECT_EQ(RanksPerCpu(cpus + 1), 2);
  EXPECT_FALSE(CpuPerRank(cpus + 1));
  EXPECT_EQ(RanksPerCpu(2 * cpus), 2);
  EXPECT_EQ(RanksPerCpu(2 * cpus + 1), 3);
  EXPECT_EQ(RanksPerCpu(8 * cpus), 8);
}

}  // namespace
}  // namespace hvd::runtime
