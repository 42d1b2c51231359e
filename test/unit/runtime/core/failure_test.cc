// Failure paths: stalls, aborts, dead peers, shutdown and re-initialization. Nothing may hang:
// every wait here has a deadline well inside the test timeout.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/transports/single_rank_communicator.h"
#include "test/unit/runtime/core/rank_harness.h"

namespace hvd::testing {
namespace {

using runtime::DataType;
using Clock = std::chrono::steady_clock;

Result<int64_t> EnqueueOnes(runtime::Runtime& rt, std::vector<float>* buf,
                            const std::string& name) {
  runtime::OpOptions o;
  o.name = name;
  auto spec = Spec(buf->data(), DataType::kFloat32, {static_cast<int64_t>(buf->size())});
  return rt.EnqueueAllreduce({spec}, {spec}, o, false);
}

TEST(FailureTest, NotInitializedUsesHorovodsMessage) {
  runtime::Runtime rt;
  std::vector<float> buf(1);
  auto h = EnqueueOnes(rt, &buf, "x");
  EXPECT_EQ(h.status().code(), StatusCode::kNotInitialized);
  EXPECT_EQ(h.status().message(), "Horovod has not been initialized; use hvd.init().");
  EXPECT_EQ(rt.topology().status().code(), StatusCode::kNotInitialized);
}

TEST(FailureTest, SingleRankInitShutdownAndReinit) {
  runtime::Runtime rt;  // production factory: size 1 needs no rendezvous
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(rt.Init(TestConfig(0, 1)).ok());
    std::vector<float> buf = {2.0f};
    auto h = EnqueueOnes(rt, &buf, "reinit");
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
    EXPECT_EQ(buf[0], 2.0f);
    ASSERT_TRUE(rt.Shutdown().ok());
    EXPECT_FALSE(rt.initialized());
  }
}

TEST(FailureTest, MultiRankReinitAfterShutdown) {
  InProcessWorld world(std::chrono::seconds(20));
  for (int round = 0; round < 2; ++round) {
    RunRanks(
        2,
        [](int rank, runtime::Runtime& rt) {
          std::vector<float> buf(2, 1.0f);
          auto h = EnqueueOnes(rt, &buf, "again");
          ASSERT_TRUE(h.ok());
          ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
          EXPECT_EQ(buf[0], 2.0f);
        },
        nullptr, &world);
  }
}

// An elastic reset: rank 0 is a survivor (its Runtime, and the unnamed ops it counted, live on)
// and rank 1 a replacement (a new process). Their next unnamed allreduce must get one name;
// until 2026-11-30 the survivor's count went on (allreduce.noname.2 against .1), and the op
// never matched (a stall, then a hang).
TEST(FailureTest, GeneratedNamesStartOverAtEveryInit) {
  InProcessWorld world(std::chrono::seconds(20));
  runtime::Runtime survivor(world.Factory());
  for (int round = 0; round < 2; ++round) {
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        std::unique_ptr<runtime::Runtime> replacement;
        if (r == 1) replacement = std::make_unique<runtime::Runtime>(world.Factory());
        runtime::Runtime& rt = r == 0 ? survivor : *replacement;
        runtime::RuntimeConfig config = TestConfig(r, 2);
        config.rendezvous_round = round + 1;  // as hvdrun's elastic driver numbers its rounds
        ASSERT_TRUE(rt.Init(config).ok());
        std::vector<float> buf(2, 1.0f);
        auto h = EnqueueOnes(rt, &buf, "");  // a generated name
        ASSERT_TRUE(h.ok());
        EXPECT_TRUE(WaitAndRelease(rt, *h, 10).ok()) << "round " << round << ", rank " << r;
        EXPECT_EQ(buf[0], 2.0f);
        EXPECT_TRUE(rt.Shutdown().ok());
      });
    }
    for (auto& t : threads) t.join();
  }
}

// Knobs that decide how an op runs on every member (fusing grouped ops, the autotuner's round,
// the hierarchy, the GPU path's per-op choices and completion) set on one rank only: every rank
// fails init naming the variable and both values. Until 2026-11-30 only the negotiation's sizes
// were compared, and such a job ran different collectives on different ranks (a hang).
TEST(FailureTest, KnobsThatShapeEveryOpMustBeTheSameEverywhere) {
  const std::vector<std::pair<std::string, ConfigTweak>> cases = {
      {"HVD_DISABLE_GROUP_FUSION",
       [](runtime::RuntimeConfig* c) { c->disable_group_fusion = true; }},
      {"HVD_AUTOTUNE", [](runtime::RuntimeConfig* c) { c->autotune.enabled = true; }},
      {"HVD_HIERARCHICAL_ALLREDUCE (0 auto, 1 on, 2 off)",
       [](runtime::RuntimeConfig* c) { c->hierarchical_allreduce = "off"; }},
      {"HVD_GPU_ALLGATHER (1: staged)",
       [](runtime::RuntimeConfig* c) { c->gpu_staged.allgather = true; }},
      {"HVD_GPU_ASYNC_COMPLETION",
       [](runtime::RuntimeConfig* c) { c->gpu_async_completion = true; }},
      {"HVD_DYNAMIC_PROCESS_SETS",
       [](runtime::RuntimeConfig* c) { c->dynamic_process_sets = true; }},
  };
  for (const auto& knob : cases) {
    // Not a structured binding: clang 14 cannot capture one in the lambda below.
    const std::string& name = knob.first;
    const ConfigTweak& tweak = knob.second;
    InProcessWorld world(std::chrono::seconds(20));
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        runtime::Runtime rt(world.Factory());
        runtime::RuntimeConfig config = TestConfig(r, 2);
        if (r == 1) tweak(&config);
        Status s = rt.Init(config);
        errors[r] = s.ok() ? "" : s.message();
        if (s.ok()) (void)rt.Shutdown();
      });
    }
    for (auto& t : threads) t.join();
    const int64_t other = name.starts_with("HVD_HIERARCHICAL_ALLREDUCE") ? 2 : 1;
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(errors[r], name + " differs between ranks: rank 0 has 0, rank 1 has " +
                               std::to_string(other) +
                               "; every rank of a job needs the same value (export it before "
                               "hvdrun: its ranks inherit it)")
          << "rank " << r;
    }
  }
}

TEST(FailureTest, ShutdownOnOneRankShutsDownItsPeers) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    if (rank == 0) {
      ASSERT_TRUE(rt.Shutdown().ok());
      return;
    }
    std::vector<float> buf(1, 1.0f);
    auto h = EnqueueOnes(rt, &buf, "orphan");
    if (h.ok()) {
      Status s = WaitAndRelease(rt, *h, 20);
      EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
      EXPECT_NE(s.message().find("Shut down by rank 0 "), std::string::npos) << s.message();
    }
    // Later enqueues fail with Horovod's shut-down message, naming who shut down.
    Status later;
    for (int i = 0; i < 200 && later.ok(); ++i) {
      auto again = EnqueueOnes(rt, &buf, "later");
      later = again.ok() ? WaitAndRelease(rt, *again, 20) : again.status();
    }
    EXPECT_EQ(later.code(), StatusCode::kAborted);
    EXPECT_NE(later.message().find("Horovod has been shut down"), std::string::npos);
    EXPECT_NE(later.message().find("Shut down by rank 0 "), std::string::npos) << later.message();
  });
}

TEST(FailureTest, StallWarnsThenShutsDown) {
  std::vector<int64_t> warnings(2);
  RunRanks(
      2,
      [&](int rank, runtime::Runtime& rt) {
        if (rank == 1) {
          // Rank 1 never submits "lonely"; it only waits for the shutdown to reach it.
          std::vector<float> buf(1);
          for (int i = 0; i < 100; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            if (!EnqueueOnes(rt, &buf, "probe." + std::to_string(i)).ok()) break;
          }
          return;
        }
        std::vector<float> buf(1, 1.0f);
        auto start = Clock::now();
        auto h = EnqueueOnes(rt, &buf, "lonely");
        ASSERT_TRUE(h.ok());
        Status s = WaitAndRelease(rt, *h, 20);
        EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
        EXPECT_NE(s.message().find("Horovod has been shut down"), std::string::npos);
        EXPECT_NE(s.message().find("1!: [lonely]"), std::string::npos) << s.message();
        EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
      },
      [](runtime::RuntimeConfig* c) {
        c->stall_check_time = std::chrono::milliseconds(200);
        c->stall_shutdown_time = std::chrono::milliseconds(600);
      });
}

// A process set's stall shutdown reaches the ranks outside the set with the set's reason, not
// as a member's hvd.shutdown(): until 2026-12-01 rank 2 failed with "Shut down by rank 0
// (hvd.shutdown(), or its process exiting)", rank 0 having only passed the set's verdict on.
TEST(FailureTest, AProcessSetsStallShutdownGivesItsReasonToEveryRank) {
  RunRanks(
      3,
      [&](int rank, runtime::Runtime& rt) {
        // Rank 0 submits "set.lonely" to set 1 = {0, 1}; rank 1 never does. Meanwhile every
        // rank runs the same global allreduces, so only the set stalls.
        std::vector<float> buf(1, 1.0f), lonely(1, 1.0f);
        int64_t set_op = -1;
        if (rank == 0) {
          runtime::OpOptions o;
          o.name = "set.lonely";
          o.process_set_id = 1;
          auto spec = Spec(lonely.data(), DataType::kFloat32, {1});
          auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
          ASSERT_TRUE(h.ok());
          set_op = *h;
        }
        // Every rank, rank 2 outside the set included, learns why the job stopped.
        Status later;
        for (int i = 0; i < 400 && later.ok(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          auto again = EnqueueOnes(rt, &buf, "probe." + std::to_string(i));
          later = again.ok() ? WaitAndRelease(rt, *again, 20) : again.status();
        }
        EXPECT_EQ(later.code(), StatusCode::kAborted) << later.ToString();
        EXPECT_NE(later.message().find("Horovod has been shut down"), std::string::npos);
        EXPECT_NE(later.message().find("set.lonely"), std::string::npos) << later.message();
        EXPECT_EQ(later.message().find("Shut down by rank"), std::string::npos) << later.message();
        if (set_op >= 0) {
          Status s = WaitAndRelease(rt, set_op, 20);
          EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
        }
      },
      [](runtime::RuntimeConfig* c) {
        c->stall_check_time = std::chrono::milliseconds(200);
        c->stall_shutdown_time = std::chrono::milliseconds(600);
      },
      nullptr, {{0, 1}});
}

TEST(FailureTest, AbortingTheTransportFailsEveryPendingHandleOnEveryRank) {
  InProcessWorld world(std::chrono::seconds(20));
  std::atomic<int> enqueued{0};
  std::thread aborter([&] {
    while (enqueued.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    world.AbortAll();
  });
  RunRanks(
      2,
      [&](int rank, runtime::Runtime& rt) {
        // Each rank submits a tensor the other never submits: both stay pending.
        std::vector<float> buf(1, 1.0f);
        auto h = EnqueueOnes(rt, &buf, "pending." + std::to_string(rank));
        ASSERT_TRUE(h.ok());
        ++enqueued;
        auto start = Clock::now();
        Status s = WaitAndRelease(rt, *h, 10);
        EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
        EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
        auto later = EnqueueOnes(rt, &buf, "later");
        EXPECT_EQ(later.status().code(), StatusCode::kAborted);
        EXPECT_NE(later.status().message().find("Horovod has been shut down"), std::string::npos);
      },
      nullptr, &world);
  aborter.join();
}

TEST(FailureTest, RuntimeAbortFailsLocalHandlesAndBreaksThePeers) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    std::vector<float> buf(1, 1.0f);
    auto h = EnqueueOnes(rt, &buf, "never." + std::to_string(rank));
    ASSERT_TRUE(h.ok());
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ASSERT_TRUE(rt.Abort("user abort").ok());
      Status s = WaitAndRelease(rt, *h, 5);
      EXPECT_EQ(s.code(), StatusCode::kAborted);
      EXPECT_NE(s.message().find("user abort"), std::string::npos);
    } else {
      Status s = WaitAndRelease(rt, *h, 10);
      EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
    }
  });
}

TEST(FailureTest, MissingPeerTimesOutAtInit) {
  InProcessWorld world(std::chrono::milliseconds(300));
  runtime::Runtime rt(world.Factory());
  auto start = Clock::now();
  Status s = rt.Init(TestConfig(0, 2));  // rank 1 never shows up
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.ToString();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(rt.initialized());
}

TEST(FailureTest, PeerAbortFailsThePendingOpsOfTheSurvivor) {
  InProcessWorld world(std::chrono::milliseconds(500));
  runtime::Runtime r0(world.Factory()), r1(world.Factory());
  std::thread t1([&] { ASSERT_TRUE(r1.Init(TestConfig(1, 2)).ok()); });
  ASSERT_TRUE(r0.Init(TestConfig(0, 2)).ok());
  t1.join();
  // Given rank 0 waiting for a tensor rank 1 never submits
  std::vector<float> buf(1, 1.0f);
  auto h = EnqueueOnes(r0, &buf, "to_dead_peer");
  ASSERT_TRUE(h.ok());
  Status s = WaitAndRelease(r0, *h, 0.2);
  EXPECT_EQ(s.code(), StatusCode::kInProgress);  // still waiting for rank 1's tensor
  // When rank 1 aborts (its transport breaks the shared group)
  ASSERT_TRUE(r1.Abort("rank 1 dies").ok());
  // Then rank 0's handle fails promptly
  s = WaitAndRelease(r0, *h, 10);
  EXPECT_TRUE(s.code() == StatusCode::kAborted || s.code() == StatusCode::kTimeout) << s.ToString();
  (void)r0.Shutdown();
  (void)r1.Shutdown();
}

}  // namespace
}  // namespace hvd::testing
