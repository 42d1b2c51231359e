#include <gtest/gtest.h>

#include <chrono>

#include "runtime/transports/shm/shm_single_copy.h"

namespace hvd::runtime {
namespace {

using std::chrono::microseconds;
constexpr int64_t kMiB = int64_t{1} << 20;

// Runs `ops` allreduces of `bytes` through `c`, each taking `single` or `staged` as the chooser
// picked, and returns how many went single copy.
int RunOps(ShmSingleCopyChooser& c, int64_t bytes, int ops, microseconds single,
           microseconds staged) {
  int direct = 0;
  for (int i = 0; i < ops; ++i) {
    const bool s = c.Prefer(bytes);
    direct += s ? 1 : 0;
    c.Record(bytes, s, s ? single : staged);
  }
  return direct;
}

TEST(ShmSingleCopyChooserTest, TriesEachWayTwiceThenKeepsTheFaster) {
  ShmSingleCopyChooser c;
  const int64_t bytes = 16 * kMiB;
  // Given single copy at 2 ms and the halves at 4 ms: single, single, staged, staged, then
  // single copy but for one op in kExplore.
  std::vector<bool> ways;
  for (int i = 0; i < 4; ++i) {
    ways.push_back(c.Prefer(bytes));
    c.Record(bytes, ways.back(), ways.back() ? microseconds(2000) : microseconds(4000));
  }
  EXPECT_EQ(ways, (std::vector<bool>{true, true, false, false}));
  const int ops = 10 * ShmSingleCopyChooser::kExplore;
  EXPECT_EQ(RunOps(c, bytes, ops, microseconds(2000), microseconds(4000)), ops - 10);
}

TEST(ShmSingleCopyChooserTest, KeepsTheHalvesWhenTheyAreFaster) {
  // The evening on the 2-vCPU VM: 16 MiB 1.86 ms staged, 3.4 ms single copy.
  ShmSingleCopyChooser c;
  const int ops = 10 * ShmSingleCopyChooser::kExplore;
  const int direct = RunOps(c, 16 * kMiB, ops, microseconds(3400), microseconds(1860));
  EXPECT_EQ(direct, 2 + 10);  // the two tries, then one exploration per kExplore ops
}

TEST(ShmSingleCopyChooserTest, TheFirstOpOfEachWayIsNotCounted) {
  // A first single-copy op slowed by first touches (50 ms) does not make the halves win:
  // single copy's counted op (1 ms) beats the halves (2 ms).
  ShmSingleCopyChooser c;
  const int64_t bytes = 4 * kMiB;
  c.Record(bytes, c.Prefer(bytes), microseconds(50000));
  EXPECT_TRUE(c.Prefer(bytes));
  c.Record(bytes, true, microseconds(1000));
  EXPECT_FALSE(c.Prefer(bytes));
  c.Record(bytes, false, microseconds(2000));
  EXPECT_FALSE(c.Prefer(bytes));
  c.Record(bytes, false, microseconds(2000));
  EXPECT_TRUE(c.Prefer(bytes));
}

TEST(ShmSingleCopyChooserTest, FollowsAMachineThatChanges) {
  // Single copy wins, then slows down threefold: within four ops of it (its best of the last
  // four is then slow) the halves take over; when single copy recovers, the next exploration
  // brings it back.
  ShmSingleCopyChooser c;
  const int64_t bytes = 64 * kMiB;
  const int ops = 2 * ShmSingleCopyChooser::kExplore;
  RunOps(c, bytes, ops, microseconds(10000), microseconds(15000));
  int direct = 0;
  for (int i = 0; i < 8; ++i) {
    const bool s = c.Prefer(bytes);
    direct += s ? 1 : 0;
    c.Record(bytes, s, s ? microseconds(30000) : microseconds(15000));
  }
  EXPECT_EQ(direct, 4);
  EXPECT_FALSE(c.Prefer(bytes));
  c.Record(bytes, false, microseconds(15000));
  RunOps(c, bytes, ShmSingleCopyChooser::kExplore, microseconds(10000), microseconds(15000));
  EXPECT_TRUE(c.Prefer(bytes));
}

TEST(ShmSingleCopyChooserTest, SizeClassesChooseApart) {
  // 2 MiB faster staged, 32 MiB faster single copy: each class keeps its own answer.
  ShmSingleCopyChooser c;
  for (int i = 0; i < 8; ++i) {
    for (int64_t bytes : {2 * kMiB, 32 * kMiB}) {
      const bool s = c.Prefer(bytes);
      const bool small = bytes == 2 * kMiB;
      c.Record(bytes, s, microseconds(small ? (s ? 500 : 200) : (s ? 3000 : 6000)));
    }
  }
  EXPECT_FALSE(c.Prefer(2 * kMiB + 100));
  EXPECT_TRUE(c.Prefer(48 * kMiB));
}

}  // namespace
}  // namespace hvd::runtime
