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

struct Recorded {
  std::vector<std::pair<int, int>> taken;
  std::vector<std::pair<int, int>> holds;  // (failed, waited for)
  std::optional<int> unreported;
  PendingExits::Hooks Hooks() {
    PendingExits::Hooks hooks;
    hooks.signalled = [](int) { return false; };
    hooks.unreported = [this] { return unreported; };
    hooks.on_hold = [this](int failed, int waited) { holds.emplace_back(failed, waited); };
    hooks.take = [this](int id, int status) { taken.emplace_back(id, status); };
    return hooks;
  }
};

TEST(PendingExitsTest, APlainFailureWaitsForAnUnreportedRankAndThenTakesItFirst) {
  PendingExits pending;
  Recorded r;
  r.unreported = 2;
  pending.Add(0, kExit1);
  pending.Take(r.Hooks());
  pending.Take(r.Hooks());
  EXPECT_TRUE(r.taken.empty());
  EXPECT_EQ(r.holds, (std::vector<std::pair<int, int>>{{0, 2}}));  // said once
  ASSERT_TRUE(pending.hold_deadline().has_value());
  pending.Add(2, kKilled);  // its guardian reports
  pending.Take(r.Hooks());
  EXPECT_EQ(r.taken, (std::vector<std::pair<int, int>>{{2, kKilled}, {0, kExit1}}));
  EXPECT_FALSE(pending.hold_deadline().has_value());
  EXPECT_TRUE(pending.empty());
}

TEST(PendingExitsTest, NothingWaitsWithoutAnUnreportedRankOrForASignalDeath) {
  PendingExits pending;
  Recorded r;
  pending.Add(1, kExit1);
  pending.Take(r.Hooks());
  EXPECT_EQ(r.taken.size(), 1u);
  r.unreported = 0;
  pending.Add(2, kKilled);
  pending.Take(r.Hooks());
  EXPECT_EQ(r.taken.size(), 2u);
  EXPECT_TRUE(r.holds.empty());
}

TEST(PendingExitsTest, StopHoldingTakesWhatWasSeen) {
  PendingExits pending;
  Recorded r;
  r.unreported = 3;
  pending.Add(0, kExit1);
  pending.Take(r.Hooks());
  EXPECT_TRUE(r.taken.empty());
  pending.StopHolding();
  pending.Take(r.Hooks());
  EXPECT_EQ(r.taken, (std::vector<std::pair<int, int>>{{0, kExit1}}));
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
