#include "launcher/local/exit_order.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace hvd::launcher {
namespace {

constexpr int kExit0 = 0;
constexpr int kExit1 = 1 << 8;
constexpr int kKilled = SIGKILL;
constexpr int kTerminated = SIGTERM;

TEST(ExitOrderTest, AnUnsentSignalComesFirstThenFailuresThenSuccessesKeepingTheirOrder) {
  std::vector<std::pair<int, int>> exits = {
      {0, kExit0}, {1, kExit1}, {2, kTerminated}, {3, kKilled}, {4, kExit1}};
  const std::set<int> signalled = {2};  // hvdrun's SIGTERM: a plain failure
  OrderExits(exits, [&](int id) { return signalled.count(id) != 0; });
  EXPECT_EQ(exits, (std::vector<std::pair<int, int>>{
                       {3, kKilled}, {1, kExit1}, {2, kTerminated}, {4, kExit1}, {0, kExit0}}));
}

// Takes through hooks that record what they are asked.
class PendingExitsTest : public ::testing::Test {
 protected:
  void Take() {
    PendingExits::Hooks hooks;
    hooks.signalled = [](int) { return false; };
    hooks.unreported = [this] { return unreported_; };
    hooks.on_hold = [this](int failed, int waited) { holds_.emplace_back(failed, waited); };
    hooks.take = [this](int id, int status) { taken_.emplace_back(id, status); };
    pending_.Take(hooks);
  }

  PendingExits pending_;
  std::optional<int> unreported_;           // what hooks.unreported answers
  std::vector<std::pair<int, int>> taken_;  // (id, wait status)
  std::vector<std::pair<int, int>> holds_;  // (failed, waited for)
};

TEST_F(PendingExitsTest, APlainFailureWaitsForAnUnreportedRankAndThenTakesItFirst) {
  unreported_ = 2;
  pending_.Add(0, kExit1);
  Take();
  Take();
  EXPECT_TRUE(taken_.empty());
  EXPECT_EQ(holds_, (std::vector<std::pair<int, int>>{{0, 2}}));  // said once
  ASSERT_TRUE(pending_.hold_deadline().has_value());
  pending_.Add(2, kKilled);  // its guardian reports
  Take();
  EXPECT_EQ(taken_, (std::vector<std::pair<int, int>>{{2, kKilled}, {0, kExit1}}));
  EXPECT_FALSE(pending_.hold_deadline().has_value());
  EXPECT_TRUE(pending_.empty());
}

TEST_F(PendingExitsTest, NothingWaitsWithoutAnUnreportedRankOrForASignalDeath) {
  pending_.Add(1, kExit1);
  Take();
  EXPECT_EQ(taken_.size(), 1u);
  unreported_ = 0;
  pending_.Add(2, kKilled);
  Take();
  EXPECT_EQ(taken_.size(), 2u);
  EXPECT_TRUE(holds_.empty());
}

TEST_F(PendingExitsTest, StopHoldingTakesWhatWasSeen) {
  unreported_ = 3;
  pending_.Add(0, kExit1);
  Take();
  EXPECT_TRUE(taken_.empty());
  pending_.StopHolding();
  Take();
  EXPECT_EQ(taken_, (std::vector<std::pair<int, int>>{{0, kExit1}}));
}

TEST_F(PendingExitsTest, StopHoldingWithoutAWaitLeavesNoDeadline) {
  pending_.StopHolding();
  EXPECT_FALSE(pending_.hold_deadline().has_value());
}

TEST(RankProcessWatchTest, SeesItsProcessEndBeforeAnyoneReapsIt) {
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(go[1]);
    char c;
    (void)!read(go[0], &c, 1);
    _exit(0);
  }
  close(go[0]);
  RankProcessWatch watch(child, getpid());
  EXPECT_FALSE(watch.Ended());
  close(go[1]);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(watch.Ended());
  RankProcessWatch moved = std::move(watch);
  EXPECT_TRUE(moved.Ended());
  EXPECT_FALSE(watch.Ended());  // NOLINT(bugprone-use-after-move): a moved-from watch is empty
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(RankProcessWatch(child, getpid()).Ended());  // gone before the watch began
}

TEST(RankProcessWatchTest, WatchesNothingWithoutAProcessOfItsOwn) {
  EXPECT_FALSE(RankProcessWatch(getpid(), getpid()).Ended());  // no guardian
  EXPECT_FALSE(RankProcessWatch(-1, getpid()).Ended());        // unknown
  EXPECT_FALSE(RankProcessWatch().Ended());
}

}  // namespace
}  // namespace hvd::launcher
