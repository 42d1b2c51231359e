// The elastic driver's decisions: rounds, failures, blacklists, hosts that come and go (the
// resets' own cases are in elastic_rounds_test.cc).
#include "launcher/elastic/elastic_driver.h"

#include "test/unit/launcher/elastic/elastic_driver_harness.h"

namespace hvd::launcher {
namespace {

using namespace testing;  // the harness: recorder, fixture, exit statuses, matchers

TEST_F(ElasticDriverTest, FirstRoundOnEverySlotOnceAllAreReady) {
  Make(Options(2, 2, 3));
  Hosts({{"a", 2, {}}, {"b", 2, {}}});
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2));  // capped by --max-np
  EXPECT_EQ(rec_.spawned[2].host, "b");
  Ready({0, 1});
  EXPECT_EQ(driver_->round(), 0) << "waits for every worker it started";
  Ready({2});
  ASSERT_EQ(driver_->round(), 1);
  elastic::Assignment a0 = rec_.Assigned(0), a2 = rec_.Assigned(2);
  EXPECT_EQ(a0.rank, 0);
  EXPECT_EQ(a0.size, 3);
  EXPECT_EQ(a0.local_size, 2);
  EXPECT_EQ(a0.cross_size, 2);
  EXPECT_EQ(a2.rank, 2);
  EXPECT_EQ(a2.local_rank, 0);
  EXPECT_EQ(a2.local_size, 1);
  EXPECT_EQ(a2.cross_rank, 1);
  EXPECT_EQ(a2.cross_size, 2);
  EXPECT_EQ(rec_.Assigned(1).cross_size, 1) << "local rank 1 exists on host a only";
  EXPECT_TRUE(a0.joined);
  EXPECT_EQ(driver_->reset_count(), 0);
}

TEST_F(ElasticDriverTest, NothingStartsBeforeNpSlotsAndTheWaitIsBounded) {
  ElasticDriverOptions o = Options(4, 4);
  o.elastic_timeout = seconds(10);
  Make(o);
  Hosts({{"a", 2, {}}});
  EXPECT_TRUE(rec_.spawned.empty());
  EXPECT_THAT(rec_.warnings,
              ElementsAre("only 2 workers can run, fewer than -np 4; waiting up to 10 s "
                          "(--elastic-timeout) for hosts"));
  now_ += seconds(5);
  Hosts({{"a", 2, {}}, {"b", 1, {}}});
  EXPECT_TRUE(rec_.spawned.empty());
  ASSERT_TRUE(driver_->NextDeadline().has_value());
  now_ += seconds(6);
  driver_->OnTick(now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 124);
  EXPECT_THAT(driver_->end()->message, HasSubstr("waiting for 4 slots (-np) to start"));
}

// F02/F03/F10: a failed worker blacklists its host; the host's other worker is drained; the
// survivors re-form with the lowest surviving rank as rank 0.
TEST_F(ElasticDriverTest, FailureBlacklistsAndDrainsTheHost) {
  StartRound1({{"a", 2, {}}, {"b", 2, {}}}, 4, 2);
  driver_->OnExit(0, kKilled, now_);
  EXPECT_THAT(rec_.aborted, ElementsAre(1)) << "members stuck in the rendezvous move on";
  EXPECT_TRUE(rec_.Removed(1));
  EXPECT_THAT(rec_.mail[1].back().reason, HasSubstr("host a is blacklisted"));
  ASSERT_EQ(rec_.warnings.size(), 1u);
  EXPECT_THAT(rec_.warnings[0], HasSubstr("worker 0 (rank 0 of round 1) on a failed: SIGKILL"));
  EXPECT_EQ(rec_.spawn_order.size(), 4u) << "no replacement on a blacklisted host";
  Ready({2});
  EXPECT_EQ(driver_->round(), 1) << "waits for every surviving member";
  Ready({3});
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(Ranks({2, 3}), (std::vector<int>{0, 1}));
  EXPECT_EQ(rec_.Assigned(2).size, 2);
  EXPECT_FALSE(rec_.Assigned(2).joined);
  EXPECT_EQ(driver_->reset_count(), 1);
  EXPECT_FALSE(driver_->end().has_value());
}

// Horovod #3852: one worker exiting 0 does not stop the others.
TEST_F(ElasticDriverTest, AWorkerExitingZeroDoesNotStopTheOthers) {
  StartRound1({{"a", 2, {}}}, 2, 1);
  driver_->OnExit(1, kExit0, now_);
  EXPECT_FALSE(driver_->end().has_value());
  EXPECT_TRUE(rec_.terminated.empty());
  Ready({0});  // its collectives failed; it re-forms alone
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(rec_.Assigned(0).size, 1);
  EXPECT_EQ(rec_.spawn_order.size(), 2u) << "a finishing job adds no worker";
  driver_->OnExit(0, kExit0, now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_TRUE(driver_->end()->success);
  EXPECT_EQ(driver_->end()->exit_code, 0);
}

TEST_F(ElasticDriverTest, WorkersExitingZeroBeforeAnyRoundSucceed) {
  // Workers that never call hvd.init (no round forms) and exit 0: the job succeeded
  Make(Options(2, 1));
  Hosts({{"a", 2, {}}});
  ASSERT_EQ(rec_.spawn_order.size(), 2u);
  driver_->OnExit(0, kExit0, now_);
  EXPECT_FALSE(driver_->end().has_value());
  driver_->OnExit(1, kExit0, now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_TRUE(driver_->end()->success);
  // One of them failing fails it, naming the failure
  Recorder rec;
  ElasticDriver failing(Options(2, 1), &rec);
  failing.OnHosts({{"a", 2, {}}}, now_);
  failing.OnExit(0, kExit0, now_);
  failing.OnExit(1, kExit1, now_);
  ASSERT_TRUE(failing.end().has_value());
  EXPECT_FALSE(failing.end()->success);
  EXPECT_THAT(failing.end()->message, HasSubstr("exit code 1"));
}

// With --min-np equal to -np (its default) a worker exiting 0 left the others below it: the
// job waited --elastic-timeout for workers a finishing job never adds, then failed (124).
TEST_F(ElasticDriverTest, AFinishingJobBelowMinNpGoesOnWithoutWaiting) {
  StartRound1({{"a", 1, {}}, {"b", 1, {}}}, 2, 2);
  driver_->OnExit(1, kExit0, now_);
  Ready({0});
  ASSERT_EQ(driver_->round(), 2) << "the survivor re-forms at once";
  EXPECT_EQ(rec_.Assigned(0).size, 1);
  EXPECT_FALSE(driver_->NextDeadline().has_value()) << "no --elastic-timeout is running";
  ASSERT_EQ(rec_.warnings.size(), 1u);
  EXPECT_THAT(rec_.warnings[0], HasSubstr("1 worker(s) left, fewer than --min-np 2: they go on"));
  driver_->OnExit(0, kExit0, now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_TRUE(driver_->end()->success);
}

// The start timeout passes with fewer than --min-np workers ready: nothing can be done until
// the next report, and the next deadline must not be one already past (hvdrun's loop polled
// without waiting, a core at 100 %, until the first round formed).
TEST_F(ElasticDriverTest, APassedStartTimeoutIsNoNextDeadline) {
  Make(Options(2, 2));
  Hosts({{"a", 2, {}}});
  Ready({0});
  now_ += seconds(31);
  driver_->OnTick(now_);
  ASSERT_EQ(driver_->round(), 0);
  const std::optional<ElasticDriver::TimePoint> next = driver_->NextDeadline();
  if (next) {
    EXPECT_GT(*next, now_);
  }
  Ready({1});
  EXPECT_EQ(driver_->round(), 1) << "the late report forms the round";
}

// A new worker (host b grew a slot) fails before it joined: b is blacklisted, and b's member
// (worker 1) must learn of its removal at the members' next commit, as from discovery. Until
// 2026-11-30 nothing told the members: worker 1 trained on the blacklisted host.
TEST_F(ElasticDriverTest, ANewWorkersFailureRemovesItsHostsMembersWithAnAnnouncement) {
  StartRound1({{"a", 1, {}}, {"b", 1, {}}}, 2, 1);
  Hosts({{"a", 1, {}}, {"b", 2, {}}});
  ASSERT_EQ(rec_.spawned.size(), 3u);
  driver_->OnExit(2, kExit1, now_);
  ASSERT_FALSE(rec_.notified.empty()) << "the members were not told";
  EXPECT_EQ(rec_.notified.back().second & elastic::kHostsRemoved, elastic::kHostsRemoved);
  ASSERT_FALSE(rec_.mail[1].empty());
  EXPECT_TRUE(rec_.mail[1].back().removed);
  Ready({0});  // the survivor, after its HostsUpdatedInterrupt, re-forms alone
  EXPECT_EQ(driver_->round(), 2);
  EXPECT_EQ(rec_.Assigned(0).size, 1);
}

// Workers started for a new host that have not joined yet are let go once the job is
// finishing.
TEST_F(ElasticDriverTest, AFinishingJobLetsPendingWorkersGo) {
  StartRound1({{"a", 2, {}}}, 2, 1);
  Hosts({{"a", 2, {}}, {"b", 1, {}}});
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2));
  driver_->OnExit(1, kExit0, now_);
  EXPECT_TRUE(rec_.Removed(2));
  EXPECT_THAT(rec_.mail[2].back().reason, HasSubstr("the job is finishing"));
  Ready({0});
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(rec_.Assigned(0).size, 1);
}

// F01: hosts added then removed. New workers start at once; the members are interrupted only
// when all new workers are ready, and a removal lets the survivors skip nothing but the sync.
TEST_F(ElasticDriverTest, ScaleUpThenDown) {
  StartRound1({{"localhost", 2, {}}}, 2, 2, 4);
  Hosts({{"localhost", 2, {}}, {"127.0.0.1", 2, {}}});
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2, 3));
  Ready({2});
  EXPECT_TRUE(rec_.notified.empty()) << "waits for every new worker";
  Ready({3});
  ASSERT_THAT(rec_.notified, ElementsAre(std::make_pair(int64_t{1}, elastic::kHostsAdded)));
  EXPECT_EQ(driver_->round(), 1);
  Ready({0, 1});  // HostsUpdatedInterrupt at their commit
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(Ranks({0, 1, 2, 3}), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(rec_.Assigned(0).joined);
  EXPECT_EQ(rec_.Assigned(0).hosts_timestamp, 1);

  Hosts({{"127.0.0.1", 2, {}}});
  EXPECT_FALSE(rec_.Removed(0)) << "members leave at the reset, not at the poll";
  ASSERT_EQ(rec_.notified.size(), 2u);
  EXPECT_EQ(rec_.notified[1], std::make_pair(int64_t{2}, elastic::kHostsRemoved));
  Ready({2, 3});
  ASSERT_EQ(driver_->round(), 3) << "does not wait for members whose host is still gone";
  EXPECT_TRUE(rec_.Removed(0));
  EXPECT_TRUE(rec_.Removed(1));
  EXPECT_EQ(Ranks({2, 3}), (std::vector<int>{0, 1}));
  EXPECT_FALSE(rec_.Assigned(2).joined);
  EXPECT_EQ(driver_->reset_count(), 2);
  // The removed workers read their removal; one that lingers is stopped after the grace period.
  driver_->OnExit(0, kExit1, now_);
  EXPECT_FALSE(driver_->end().has_value()) << "a removed worker's exit is expected";
  EXPECT_TRUE(rec_.warnings.empty());
  now_ += seconds(6);
  driver_->OnTick(now_);
  EXPECT_THAT(rec_.terminated, ElementsAre(1));
}

// F07, with Horovod's message.
TEST_F(ElasticDriverTest, ResetLimit) {
  ElasticDriverOptions o = Options(2, 2, 4);
  o.reset_limit = 1;
  Make(o);
  Hosts({{"localhost", 2, {}}});
  Ready({0, 1});
  Hosts({{"localhost", 2, {}}, {"127.0.0.1", 2, {}}});
  Ready({2, 3});
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 2);
  Hosts({{"127.0.0.1", 2, {}}});
  Ready({0, 1, 2, 3});
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->message,
            "Horovod was shutdown because number of resets during elastic job exceeded limit: 1");
  EXPECT_THAT(rec_.terminated, ::testing::UnorderedElementsAre(0, 1, 2, 3));
}

// F05: the failed workers' hosts are all blacklisted; the drained workers read their removal.
TEST_F(ElasticDriverTest, AllHostsBlacklisted) {
  StartRound1({{"a", 2, {}}, {"b", 2, {}}}, 4, 1);
  driver_->OnExit(0, kExit1, now_);
  driver_->OnExit(2, kExit1, now_);
  EXPECT_FALSE(driver_->end().has_value()) << "the drained workers are still leaving";
  for (int id : {1, 3}) {
    driver_->OnReady(id, static_cast<int64_t>(rec_.mail[id].size()) - 1, now_);
    driver_->OnExit(id, kExit1, now_);
  }
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 1);
  EXPECT_THAT(driver_->end()->message, HasSubstr("all hosts are blacklisted (a, b)"));
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("the first failure: worker 0 (rank 0 of round 1)"));
}

// F04: every worker fails on its own, drained ones included (they never read their removal).
TEST_F(ElasticDriverTest, AllWorkersFail) {
  StartRound1({{"a", 2, {}}, {"b", 2, {}}}, 4, 1);
  driver_->OnExit(1, kKilled, now_);
  for (int id : {0, 2, 3}) driver_->OnExit(id, kExit1, now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 137);
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("every worker of round 1 failed; the first failure: worker 1 (rank 1 of "
                        "round 1) on a: SIGKILL"));
}

// Enough workers alive, one of them never ready (stuck before hvd.init()): the timeout names
// it, where it said "only 4 workers can run, fewer than --min-np 4" (until 2026-12-01).
TEST_F(ElasticDriverTest, ATimeoutNamesTheWorkersThatNeverBecameReady) {
  ElasticDriverOptions o = Options(4, 4);
  o.elastic_timeout = seconds(1);
  Make(o);
  Hosts({{"a", 2, {}}, {"b", 2, {}}});
  Ready({0, 1, 2});      // worker 3 never calls hvd.init()
  now_ += seconds(400);  // past the start timeout's share too
  driver_->OnTick(now_);
  now_ += seconds(1);
  driver_->OnTick(now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 124);
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("4 workers are alive, but 1 never became ready for the next round "
                        "(worker 3 on b)"));
}

// F06: below --min-np for --elastic-timeout.
TEST_F(ElasticDriverTest, BelowMinNpTimesOut) {
  ElasticDriverOptions o = Options(4, 4);
  o.elastic_timeout = seconds(1);
  Make(o);
  Hosts({{"a", 2, {}}, {"b", 2, {}}});
  Ready({0, 1, 2, 3});
  driver_->OnExit(0, kExit1, now_);
  Ready({2, 3});
  EXPECT_FALSE(driver_->end().has_value());
  // Said at once, not only when the timeout (600 s by default) ends the job.
  ASSERT_EQ(rec_.warnings.size(), 2u);
  EXPECT_EQ(rec_.warnings[1],
            "only 2 workers can run, fewer than --min-np 4 (blacklisted: a); waiting up to 1 s "
            "(--elastic-timeout) for hosts (--min-np is -np here, its default: a lower --min-np "
            "lets the job go on without the lost workers)");
  now_ += seconds(1);
  driver_->OnTick(now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 124);
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("Timed out waiting for the minimum number of slots"));
  EXPECT_THAT(driver_->end()->message, HasSubstr("fewer than --min-np 4 (blacklisted: a)"));
}

// A discovery script that lists no host for one poll: the members go on (until 2026-12-01 they
// were removed, and with nobody left to hold the state the job ended).
TEST_F(ElasticDriverTest, ADiscoveryFlapBelowMinNpKeepsTheMembers) {
  ElasticDriverOptions o = Options(2, 2);
  o.elastic_timeout = seconds(10);
  Make(o);
  Hosts({{"a", 1, {}}, {"b", 1, {}}});
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 1);
  Hosts({});
  EXPECT_FALSE(rec_.Removed(0));
  EXPECT_FALSE(rec_.Removed(1));
  EXPECT_TRUE(rec_.notified.empty()) << "no member is interrupted";
  ASSERT_EQ(rec_.warnings.size(), 1u);
  EXPECT_THAT(rec_.warnings[0], HasSubstr("only 0 workers can run, fewer than --min-np 2"));
  now_ += seconds(3);
  Hosts({{"a", 1, {}}});  // one back: still below --min-np, the clock goes on
  EXPECT_FALSE(rec_.Removed(1));
  Hosts({{"a", 1, {}}, {"b", 1, {}}});
  EXPECT_FALSE(rec_.Removed(0));
  EXPECT_FALSE(rec_.Removed(1));
  EXPECT_EQ(driver_->round(), 1);
  EXPECT_FALSE(driver_->NextDeadline().has_value()) << "the --elastic-timeout clock stopped";
  now_ += seconds(20);
  driver_->OnTick(now_);
  EXPECT_FALSE(driver_->end().has_value());
  EXPECT_TRUE(rec_.terminated.empty());
  // A second flap warns again, with a clock of its own.
  Hosts({});
  EXPECT_EQ(rec_.warnings.size(), 2u);
  now_ += seconds(9);
  driver_->OnTick(now_);
  EXPECT_FALSE(driver_->end().has_value());
  Hosts({{"a", 1, {}}, {"b", 1, {}}});
  now_ += seconds(9);
  driver_->OnTick(now_);
  EXPECT_FALSE(driver_->end().has_value());
}

// Hosts that stay away: the job ends after --elastic-timeout as any job below --min-np.
TEST_F(ElasticDriverTest, HostsGoneForGoodTimeOut) {
  ElasticDriverOptions o = Options(2, 2);
  o.elastic_timeout = seconds(10);
  Make(o);
  Hosts({{"a", 2, {}}});
  Ready({0, 1});
  Hosts({});
  ASSERT_EQ(driver_->NextDeadline(), now_ + seconds(10));
  now_ += seconds(10);
  driver_->OnTick(now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 124);
  EXPECT_THAT(driver_->end()->message, HasSubstr("only 0 workers can run, fewer than --min-np 2"));
  EXPECT_THAT(rec_.terminated, ElementsAre(0, 1));
}

// Gone hosts whose slots others offer instead: their members are removed then, and the state
// goes on from the survivors.
TEST_F(ElasticDriverTest, GoneHostsMembersLeaveOnceOthersCanTakeTheirPlace) {
  ElasticDriverOptions o = Options(3, 3);
  o.elastic_timeout = seconds(10);
  Make(o);
  Hosts({{"a", 2, {}}, {"b", 1, {}}});
  Ready({0, 1, 2});
  Hosts({{"a", 2, {}}});
  EXPECT_FALSE(rec_.Removed(2)) << "2 slots left, fewer than --min-np 3";
  now_ += seconds(5);
  Hosts({{"a", 2, {}}, {"c", 1, {}}});
  EXPECT_FALSE(rec_.Removed(2)) << "it leaves at the reset";
  ASSERT_EQ(rec_.spawned[3].host, "c");
  ASSERT_THAT(rec_.notified, ElementsAre(std::make_pair(int64_t{1}, elastic::kHostsRemoved)));
  Ready({3});
  Ready({0, 1, 2});
  EXPECT_TRUE(rec_.Removed(2));
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_EQ(Ranks({0, 1, 3}), (std::vector<int>{0, 1, 2}));
  now_ += seconds(20);
  driver_->OnTick(now_);
  EXPECT_FALSE(driver_->end().has_value());
}

// F08: a blacklisted host is used again after its cooldown, while discovery still lists it.
TEST_F(ElasticDriverTest, BlacklistedHostComesBackAfterTheCooldown) {
  ElasticDriverOptions o = Options(4, 2);
  o.cooldown_range_s = std::make_pair(1, 2);
  Make(o);
  Hosts({{"a", 2, {}}, {"b", 2, {}}});
  Ready({0, 1, 2, 3});
  driver_->OnExit(3, kExit1, now_);
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 2);
  ASSERT_TRUE(driver_->NextDeadline().has_value());
  now_ = *driver_->NextDeadline();
  driver_->OnTick(now_);
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(rec_.spawned[4].host, "b");
  Ready({4, 5});
  ASSERT_EQ(rec_.notified.size(), 1u);
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 3);
  EXPECT_EQ(Ranks({0, 1, 4, 5}), (std::vector<int>{0, 1, 2, 3}));
}

// A healthy host that discovery stops listing is drained, not failed: its workers are
// removed, it is not blacklisted, and once they are gone it is released (its agent session
// closed); listed again, it gets new workers at once.
TEST_F(ElasticDriverTest, ADrainedHostIsReleasedAndComesBackWithoutCooldown) {
  ElasticDriverOptions o = Options(4, 2, 4);
  o.cooldown_range_s = std::make_pair(5, 10);
  Make(o);
  Hosts({{"a", 2, {}}, {"b", 2, {}}});
  Ready({0, 1, 2, 3});
  Hosts({{"a", 2, {}}});
  Ready({0, 1, 2, 3});
  EXPECT_TRUE(rec_.Removed(2));
  EXPECT_TRUE(rec_.Removed(3));
  ASSERT_EQ(driver_->round(), 2);
  driver_->OnExit(2, kExit1, now_);
  EXPECT_TRUE(rec_.released.empty()) << "worker 3 is still alive on b";
  driver_->OnExit(3, kExit1, now_);
  EXPECT_THAT(rec_.released, ElementsAre("b"));
  EXPECT_TRUE(rec_.warnings.empty()) << "nothing failed";
  Hosts({{"a", 2, {}}, {"b", 2, {}}});
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2, 3, 4, 5)) << "no cooldown to wait out";
  EXPECT_EQ(rec_.spawned[4].host, "b");
  Ready({4, 5});
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 3);
  EXPECT_EQ(rec_.Assigned(4).size, 4);
  EXPECT_THAT(rec_.released, ElementsAre("b")) << "a host in the job is not released";
}

// A lost host (its agent went silent) fails its workers with the reason, is blacklisted for
// the cooldown, and is admitted again after it while discovery lists it.
TEST_F(ElasticDriverTest, ALostHostIsReadmittedAfterItsCooldown) {
  ElasticDriverOptions o = Options(4, 2, 4);
  o.cooldown_range_s = std::make_pair(1, 2);
  Make(o);
  Hosts({{"a", 2, {}}, {"b", 2, {}}});
  Ready({0, 1, 2, 3});
  const std::string lost = "host b lost: no sign of life from its hvd-agent for 5 s";
  driver_->OnExit(2, 255 << 8, now_, lost);
  driver_->OnExit(3, 255 << 8, now_, lost);
  ASSERT_EQ(rec_.warnings.size(), 1u);
  EXPECT_THAT(rec_.warnings[0], HasSubstr("on b failed: " + lost + "; host b is blacklisted for"));
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_TRUE(rec_.released.empty()) << "b is still listed: it may come back";
  ASSERT_TRUE(driver_->NextDeadline().has_value());
  now_ = *driver_->NextDeadline();
  driver_->OnTick(now_);
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2, 3, 4, 5));
  Ready({4, 5});
  Ready({0, 1});
  ASSERT_EQ(driver_->round(), 3);
  EXPECT_EQ(Ranks({0, 1, 4, 5}), (std::vector<int>{0, 1, 2, 3}));
}

// Every host of the round lost: the job ends at once, saying so.
TEST_F(ElasticDriverTest, EveryHostLostEndsTheJob) {
  ElasticDriverOptions o = Options(2, 1);
  o.cooldown_range_s = std::make_pair(1, 2);
  Make(o);
  Hosts({{"a", 1, {}}, {"b", 1, {}}});
  Ready({0, 1});
  driver_->OnExit(1, 255 << 8, now_, "host b lost: x");
  now_ += seconds(3);  // a's cooldown would be over by now
  driver_->OnExit(0, 255 << 8, now_, "host a lost: y");
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 255);
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("every host of round 1 was lost (a, b): no worker is left to go on; the "
                        "first: worker 1 (rank 1 of round 1) on b: host b lost: x"));
}

// Without a cooldown a failed host is blacklisted for good: it is released once its workers
// are gone.
TEST_F(ElasticDriverTest, AHostBlacklistedForGoodIsReleased) {
  StartRound1({{"a", 1, {}}, {"b", 2, {}}}, 3, 1);
  driver_->OnExit(1, kExit1, now_);
  EXPECT_TRUE(rec_.released.empty()) << "worker 2 on b is still alive";
  driver_->OnExit(2, kExit1, now_);
  EXPECT_THAT(rec_.released, ElementsAre("b"));
}

// Horovod: "No hosts from previous set remaining, unable to broadcast state."
TEST_F(ElasticDriverTest, NoSurvivorToHandOverTheState) {
  StartRound1({{"a", 1, {}}, {"b", 1, {}}}, 1, 1, 1);
  ASSERT_EQ(rec_.spawn_order.size(), 1u);
  Hosts({{"b", 1, {}}});  // a is gone: worker 0 leaves at the reset
  // No worker is started on b: it could never be handed the state (until 2026-11-27 one was,
  // and stopped again after the grace period).
  ASSERT_EQ(rec_.spawn_order.size(), 1u);
  EXPECT_EQ(driver_->round(), 1);
  Ready({0});  // at its commit; then it reads its removal
  ASSERT_TRUE(rec_.Removed(0));
  driver_->OnExit(0, kExit1, now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("No hosts from previous set remaining, unable to broadcast state"));
}

// The only worker holding the state dies during the reset that admits a new worker (before the
// new round's sync): the new worker is a member of that round but never got the state, so the
// job ends as when the holder dies earlier, instead of re-forming around the joiner and
// restarting training from its initial state (found by a user's-eye pass, 2026-11-27).
TEST_F(ElasticDriverTest, AJoinerThatNeverSyncedIsNoStateHolder) {
  StartRound1({{"a", 1, {}}}, 1, 1);
  Hosts({{"a", 1, {}}, {"b", 1, {}}});
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1));
  Ready({1});
  // Worker 0 synced in round 1 and says so when it re-forms for the joiner.
  driver_->OnReady(0, static_cast<int64_t>(rec_.mail[0].size()), 1, now_);
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_TRUE(rec_.Assigned(1).joined);
  // It dies in its reset callback; worker 1's sync fails and it is ready again, unsynced.
  driver_->OnExit(0, kExit1, now_);
  Ready({1});
  EXPECT_EQ(driver_->round(), 2) << "no round is formed around a worker without the state";
  now_ += seconds(5);
  driver_->OnTick(now_);
  EXPECT_THAT(rec_.terminated, ElementsAre(1));
  driver_->OnExit(1, SIGTERM, now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_FALSE(driver_->end()->success);
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("No hosts from previous set remaining, unable to broadcast state"));
}

// A round that admits a joiner fails before its sync (its rendezvous aborted; ElasticSession
// retries it without the script seeing it) and the next round forms with the same members: the
// joiner still has no state, so that round must say `joined` too, or the holders skip the sync
// while the joiner broadcasts (Horovod's #3494 deadlock). Until 2026-12-01 `joined` meant a
// member never assigned a round, and the joiner had been assigned one.
TEST_F(ElasticDriverTest, ARoundAfterAnAbortedOneWithAJoinerStillSaysJoined) {
  StartRound1({{"a", 2, {}}}, 2, 2);
  Hosts({{"a", 2, {}}, {"b", 1, {}}});
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1, 2));
  Ready({2});
  for (int id : {0, 1}) {  // the holders synced in round 1
    driver_->OnReady(id, static_cast<int64_t>(rec_.mail[id].size()), 1, now_);
  }
  ASSERT_EQ(driver_->round(), 2);
  EXPECT_TRUE(rec_.Assigned(2).joined);
  // Round 2 fails before its sync: every member is ready again, the holders still at round 1.
  for (int id : {0, 1}) {
    driver_->OnReady(id, static_cast<int64_t>(rec_.mail[id].size()), 1, now_);
  }
  Ready({2});
  ASSERT_EQ(driver_->round(), 3);
  for (int id : {0, 1, 2}) EXPECT_TRUE(rec_.Assigned(id).joined) << id;
}

// The same with the joiner synced: it holds the state and goes on alone.
TEST_F(ElasticDriverTest, AJoinerThatSyncedHandsTheStateOn) {
  StartRound1({{"a", 1, {}}}, 1, 1);
  Hosts({{"a", 1, {}}, {"b", 1, {}}});
  Ready({1});
  driver_->OnReady(0, static_cast<int64_t>(rec_.mail[0].size()), 1, now_);
  ASSERT_EQ(driver_->round(), 2);
  driver_->OnExit(0, kExit1, now_);
  driver_->OnReady(1, static_cast<int64_t>(rec_.mail[1].size()), 2, now_);
  ASSERT_EQ(driver_->round(), 3);
  EXPECT_EQ(rec_.Assigned(1).rank, 0);
  EXPECT_FALSE(driver_->end().has_value());
}

// Every worker dies. Host b's failure leaves workers 0 and 1 waiting for a round (below
// --min-np); then both are killed at once, and the event loop takes worker 0's end first, whose
// failure removes worker 1 from the job. Worker 1 had ended before its removal was sent, so
// it cannot have read it: its death is its own failure, and every worker of the round failed.
TEST_F(ElasticDriverTest, ARemovalSentAfterTheWorkerEndedWasNeverRead) {
  StartRound1({{"a", 2, {}}, {"b", 1, {}}}, 3, 3);
  driver_->OnExit(2, kExit1, now_);
  Ready({0, 1});
  EXPECT_EQ(driver_->round(), 1) << "fewer than --min-np";
  driver_->OnEnded(0);
  driver_->OnEnded(1);
  driver_->OnExit(0, kKilled, now_);
  ASSERT_TRUE(rec_.Removed(1));
  driver_->OnExit(1, kKilled, now_);
  EXPECT_FALSE(driver_->LeftWhenAsked(1));
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 1);
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("every worker of round 1 failed; the first failure: worker 2 (rank 2 of "
                        "round 1) on b: exit code 1"));
}

// A worker seen ending while its end waits in the event loop (behind a likelier first failure)
// is not stopped when its grace period runs out: the stop would pass its failure off as
// hvdrun's doing.
TEST_F(ElasticDriverTest, AWorkerSeenEndingIsNotStopped) {
  Make(Options(1, 1));
  Hosts({{"a", 1, {}}});
  Ready({0});
  ASSERT_EQ(driver_->round(), 1);
  Hosts({{"a", 1, {}}, {"b", 1, {}}});
  ASSERT_THAT(rec_.spawn_order, ElementsAre(0, 1));
  Hosts({{"a", 1, {}}});  // b is gone before worker 1 joined
  ASSERT_TRUE(rec_.Removed(1));
  driver_->OnEnded(1);
  EXPECT_FALSE(driver_->NextDeadline().has_value()) << "nothing left to stop";
  now_ += seconds(10);
  driver_->OnTick(now_);
  EXPECT_TRUE(rec_.terminated.empty());
  driver_->OnExit(1, kExit1, now_);
  EXPECT_FALSE(driver_->LeftWhenAsked(1));
  EXPECT_THAT(rec_.steps,
              Contains(HasSubstr("worker 1 on b failed after its removal was sent: exit code 1")));
}

// Its counterpart: a removed worker that read its removal and exits left when asked.
TEST_F(ElasticDriverTest, ARemovedWorkerThatReadItsRemovalLeftWhenAsked) {
  StartRound1({{"a", 1, {}}, {"b", 1, {}}}, 2, 1);
  Hosts({{"a", 1, {}}});
  Ready({0, 1});  // at their commit; worker 1 then reads its removal
  ASSERT_TRUE(rec_.Removed(1));
  driver_->OnEnded(1);
  driver_->OnExit(1, kExit1, now_);
  EXPECT_TRUE(driver_->LeftWhenAsked(1));
  EXPECT_TRUE(rec_.warnings.empty());
}

// Workers 0 and 2 fail on worker 1's shutdown (their runtimes named it) and end first; worker 1
// then fails on its own: it is the first failure, with its own code.
TEST_F(ElasticDriverTest, TheWorkerWhoseEndFailedThePeersIsTheFirstFailure) {
  StartRound1({{"a", 2, {}}, {"b", 1, {}}}, 3, 3);
  ASSERT_EQ(driver_->RoundAndRankOf(1), std::make_pair(int64_t{1}, 1));
  ASSERT_EQ(driver_->WorkerOfRankIn(1, 1), 1);
  driver_->OnExit(2, kExit1, now_, "", "", 1);
  driver_->OnExit(0, kExit1, now_, "", "", 1);
  EXPECT_EQ(driver_->first_failure_worker(), 2);
  driver_->OnExit(1, 5 << 8, now_, "", "RuntimeError: boom");
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->end()->exit_code, 5);
  EXPECT_EQ(driver_->first_failure_worker(), 1);
  EXPECT_THAT(driver_->end()->message,
              HasSubstr("the first failure: worker 1 (rank 1 of round 1) on a: exit code 5: "
                        "RuntimeError: boom (its end failed worker 2, which ended first)"));
}

// The named worker did not fail on its own (the driver stopped it, or it exited 0): the first
// worker to fail stays the first failure.
TEST_F(ElasticDriverTest, ANamedWorkerThatDidNotFailLeavesTheFirstFailureAsItIs) {
  StartRound1({{"a", 1, {}}, {"b", 1, {}}}, 2, 1);
  driver_->OnExit(1, kExit1, now_, "", "", 0);
  driver_->OnExit(0, kExit0, now_);
  ASSERT_TRUE(driver_->end().has_value());
  EXPECT_EQ(driver_->first_failure_worker(), 1);
  EXPECT_THAT(driver_->end()->message, HasSubstr("the first failure: worker 1"));
}

}  // namespace
}  // namespace hvd::launcher
