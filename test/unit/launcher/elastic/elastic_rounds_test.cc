// The elastic driver's resets (elastic_rounds.cc): members that re-initialize, could not join,
// leave with their host or never reach the reset, and new workers beyond --max-np.
#include <gtest/gtest.h>

#include "launcher/elastic/elastic_driver.h"
#include "test/unit/launcher/elastic/elastic_driver_harness.h"

namespace hvd::launcher {
namespace {

using namespace testing;  // the harness: recorder, fixture, exit statuses, matchers

// A host missing from discovery for one poll while the others could go on without it: its
// members are told at their next commit (one reset) but keep their places when the host is
// listed again before that reset; no worker is removed or started. Until 2026-12-01 they were
// removed at the poll, and the host, listed again, got new workers beside the leaving ones
// (two resets, the workers restarted).
TEST_F(ElasticDriverTest, AHostMissingForOnePollKeepsItsWorkers) {
  StartRound1({{"a", 2, {}}, {"b", 2, {}}}, 4, 2);
  Hosts({{"a", 2, {}}});
  ASSERT_THAT(rec_.notified, ElementsAre(std::make_pair(int64_t{1}, elastic::kHostsRemoved)));
  EXPECT_THAT(rec_.steps, Contains(HasSubstr("worker 2 (rank 2) leaves at the next reset: host b "
                                             "is no longer available")));
  Hosts({{"a", 2, {}}, {"b", 2, {}}});
  EXPECT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2, 3)) << "its slots are still taken";
  Ready({0, 1, 2, 3});
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(driver_->reset_count(), 1);
  EXPECT_EQ(Ranks({0, 1, 2, 3}), (std::vector<int>{0, 1, 2, 3}));
  for (int id : {2, 3}) EXPECT_FALSE(rec_.Removed(id)) << id;
  EXPECT_TRUE(rec_.terminated.empty());
  // Gone again, and still gone at the reset: removed then.
  Hosts({{"a", 2, {}}});
  Ready({0, 1, 2, 3});
  ASSERT_EQ(driver_->round(), 3);
  for (int id : {2, 3}) EXPECT_TRUE(rec_.Removed(id)) << id;
  EXPECT_EQ(Ranks({0, 1}), (std::vector<int>{0, 1}));
}

// A drained host's members are not waited for while their host is still gone (one of them may
// be hung there): the others re-form once they are ready, and those members read their removal
// or are stopped after the grace period.
TEST_F(ElasticDriverTest, MembersOfAHostStillGoneAreNotWaitedFor) {
  StartRound1({{"a", 2, {}}, {"b", 2, {}}}, 4, 2);
  Hosts({{"a", 2, {}}});
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(Ranks({0, 1}), (std::vector<int>{0, 1}));
  for (int id : {2, 3}) EXPECT_TRUE(rec_.Removed(id)) << id;
  now_ += seconds(6);
  driver_->OnTick(now_);
  EXPECT_THAT(rec_.terminated, ElementsAre(2, 3));
}

// A leaving member kept (its host listed again) beside a new worker started for its slots under
// --max-np: the new worker does not fit and is let go at the reset; it is not announced and cut
// again at every commit.
TEST_F(ElasticDriverTest, ANewWorkerBeyondMaxNpBesideAKeptMemberIsLetGo) {
  StartRound1({{"a", 2, {}}, {"b", 1, {}}, {"c", 1, {}}}, 3, 2, 3);
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2));
  Hosts({{"a", 2, {}}, {"c", 1, {}}});  // b missing: worker 2 leaving, worker 3 on c
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2, 3));
  Hosts({{"a", 2, {}}, {"b", 1, {}}, {"c", 1, {}}});  // b back before the reset
  Ready({3});
  Ready({0, 1, 2});
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(Ranks({0, 1, 2}), (std::vector<int>{0, 1, 2}));
  ASSERT_TRUE(rec_.Removed(3));
  EXPECT_THAT(rec_.mail[3].back().reason, HasSubstr("--max-np 3"));
  const size_t notified = rec_.notified.size();
  now_ += seconds(60);
  driver_->OnTick(now_);
  EXPECT_EQ(rec_.notified.size(), notified) << "nothing new to announce";
  EXPECT_EQ(driver_->reset_count(), 1);
  EXPECT_THAT(rec_.terminated, ElementsAre(3));
}

// Members waiting at a reset for one that never reaches it (hung): after --elastic-timeout plus
// a minute it is stopped, without blacklisting its host, and the others re-form; its slot gets a
// new worker.
TEST_F(ElasticDriverTest, AMemberThatNeverReachesTheResetIsStoppedAfterTheElasticTimeout) {
  ElasticDriverOptions o = Options(3, 2);
  o.elastic_timeout = seconds(10);
  Make(o);
  Hosts({{"a", 3, {}}});
  Ready({0, 1, 2});
  ASSERT_EQ(driver_->round(), 1);
  Ready({1});  // a member re-initializes: a reset
  Ready({0});
  ASSERT_EQ(driver_->NextDeadline(), now_ + seconds(70));
  now_ += seconds(69);
  driver_->OnTick(now_);
  EXPECT_TRUE(rec_.terminated.empty());
  now_ += seconds(1);
  driver_->OnTick(now_);
  ASSERT_THAT(rec_.terminated, ElementsAre(2));
  EXPECT_THAT(rec_.warnings,
              Contains(HasSubstr("worker 2 (rank 2) on a did not reach round 1's "
                                 "reset within 70 s (--elastic-timeout plus a minute)")));
  driver_->OnExit(2, SIGTERM, now_);
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(Ranks({0, 1}), (std::vector<int>{0, 1}));
  EXPECT_FALSE(driver_->failure_seen());
  EXPECT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2, 3)) << "its slot gets a new worker";
}

// A member whose init comes back on its own (a timeout, a manual shutdown/init) makes the
// round re-form once the others notice.
TEST_F(ElasticDriverTest, AMemberReinitializingStartsANewRound) {
  StartRound1({{"a", 3, {}}}, 3, 1);
  Ready({1});
  EXPECT_EQ(driver_->round(), 1);
  Ready({0, 2});
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(Ranks({0, 1, 2}), (std::vector<int>{0, 1, 2}));
}

// A member whose init failed to join the current round (its ready report names the round) gives
// that round up at once, so the members waiting in its rendezvous move on instead of waiting
// out their timeout, which counted against their own tries; a member that leaves a formed round
// by itself (a host change's reset) does not, and neither does a report naming an older round.
TEST_F(ElasticDriverTest, AMemberThatCouldNotJoinGivesTheRoundUpAtOnce) {
  StartRound1({{"a", 3, {}}}, 3, 1);
  Ready({1});
  EXPECT_TRUE(rec_.aborted.empty()) << "the others may still be in round 1's collectives";
  Ready({0, 2});
  ASSERT_EQ(driver_->round(), 2);
  ASSERT_THAT(rec_.aborted, ElementsAre(1));  // forming round 2 gave round 1 up
  const auto mail = [&](int id) { return static_cast<int64_t>(rec_.mail[id].size()); };
  driver_->OnReady(1, elastic::ReadyReport{mail(1), 0, 1}, now_);  // an older round: a re-init
  EXPECT_THAT(rec_.aborted, ElementsAre(1));
  driver_->OnReady(2, elastic::ReadyReport{mail(2), 0, 2}, now_);
  EXPECT_THAT(rec_.aborted, ElementsAre(1, 2)) << "members 0 and 1 stop waiting for worker 2";
  EXPECT_THAT(rec_.steps, Contains(HasSubstr("worker 2 (rank 2) could not join round 2")));
  driver_->OnReady(2, elastic::ReadyReport{mail(2), 0, 2}, now_);
  EXPECT_THAT(rec_.aborted, ElementsAre(1, 2)) << "once";
  Ready({0});
  ASSERT_EQ(driver_->round(), 3);
  EXPECT_EQ(Ranks({0, 1, 2}), (std::vector<int>{0, 1, 2}));
}

// A new worker that never becomes ready does not hold up the first round for more than the
// start timeout; it joins later.
TEST_F(ElasticDriverTest, SlowWorkerJoinsLater) {
  Make(Options(2, 2));
  Hosts({{"a", 3, {}}});
  Ready({0, 1});
  EXPECT_EQ(driver_->round(), 0);
  now_ += seconds(30);
  driver_->OnTick(now_);
  ASSERT_EQ(driver_->round(), 1);
  EXPECT_EQ(rec_.Assigned(0).size, 2);
  Ready({2});
  ASSERT_EQ(rec_.notified.size(), 1u);
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(rec_.Assigned(2).rank, 2);
}

}  // namespace
}  // namespace hvd::launcher
