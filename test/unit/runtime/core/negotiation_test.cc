// Coordinator behaviour across thread-ranks: validation errors reach every rank and the
// runtime stays usable; duplicate names; cache invalidation; process sets.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/core/negotiation/coordinator.h"
#include "runtime/core/negotiation/stall_inspector.h"
#include "test/unit/runtime/core/rank_harness.h"

namespace hvd::testing {
namespace {

using runtime::DataType;
using runtime::ReduceOp;

// Enqueues an allreduce of `n` floats (value rank+1) and returns the handle's status.
Status Allreduce(runtime::Runtime& rt, const std::string& name, int64_t n,
                 DataType dt = DataType::kFloat32, runtime::OpOptions o = {}) {
  std::vector<double> buf(static_cast<size_t>(n) + 1, 1.0);
  o.name = name;
  auto spec = Spec(buf.data(), dt, {n});
  auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
  if (!h.ok()) return h.status();
  return WaitAndRelease(rt, *h);
}

void ExpectWorks(runtime::Runtime& rt, const std::string& name) {
  std::vector<float> buf(4, 1.0f);
  runtime::OpOptions o;
  o.name = name;
  auto spec = Spec(buf.data(), DataType::kFloat32, {4});
  auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  Status s = WaitAndRelease(rt, *h);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

struct MismatchCase {
  std::string label;
  std::function<Status(int rank, runtime::Runtime&)> op;
  std::string message;
};

TEST(NegotiationTest, EveryMismatchReachesAllRanksAndTheNextOpWorks) {
  std::vector<MismatchCase> cases = {
      {"dtype",
       [](int r, runtime::Runtime& rt) {
         return Allreduce(rt, "m.dtype", 2, r == 0 ? DataType::kFloat32 : DataType::kInt32);
       },
       "Mismatched data types: One rank had type float32, but another rank had type int32."},
      {"shape", [](int r, runtime::Runtime& rt) { return Allreduce(rt, "m.shape", 2 + r); },
       "Mismatched allreduce tensor shapes"},
      {"op",
       [](int r, runtime::Runtime& rt) {
         runtime::OpOptions o;
         o.reduce_op = r == 0 ? ReduceOp::kSum : ReduceOp::kMax;
         return Allreduce(rt, "m.op", 2, DataType::kFloat32, o);
       },
       "Mismatched reduction operations: One rank requested Sum, but another rank requested Max."},
      {"prescale",
       [](int r, runtime::Runtime& rt) {
         runtime::OpOptions o;
         o.prescale = 1.0 + r;
         return Allreduce(rt, "m.prescale", 2, DataType::kFloat32, o);
       },
       "Mismatched prescale factors"},
      {"postscale",
       [](int r, runtime::Runtime& rt) {
         runtime::OpOptions o;
         o.postscale = 1.0 + r;
         return Allreduce(rt, "m.postscale", 2, DataType::kFloat32, o);
       },
       "Mismatched postscale factors"},
      {"root",
       [](int r, runtime::Runtime& rt) {
         std::vector<float> buf(2);
         runtime::OpOptions o;
         o.name = "m.root";
         o.root_rank = r;
         auto spec = Spec(buf.data(), DataType::kFloat32, {2});
         auto h = rt.EnqueueBroadcast(spec, spec, o);
         return h.ok() ? WaitAndRelease(rt, *h) : h.status();
       },
       "Mismatched broadcast root ranks"},
      {"optype",
       [](int r, runtime::Runtime& rt) {
         std::vector<float> buf(2);
         runtime::OpOptions o;
         o.name = "m.optype";
         auto spec = Spec(buf.data(), DataType::kFloat32, {2});
         auto h = r == 0 ? rt.EnqueueAllreduce({spec}, {spec}, o, false)
                         : rt.EnqueueAllgather({spec}, o, false);
         return h.ok() ? WaitAndRelease(rt, *h) : h.status();
       },
       "Mismatched operations: One rank did an allreduce, while another rank did an allgather."},
      {"group size",  // rank 0 groups 2 tensors under the name, the others 3
       [](int r, runtime::Runtime& rt) {
         std::vector<std::vector<float>> bufs(3, std::vector<float>(2, 1.0f));
         std::vector<runtime::TensorSpec> specs;
         for (int m = 0; m < (r == 0 ? 2 : 3); ++m)
           specs.push_back(Spec(bufs[m].data(), DataType::kFloat32, {2}));
         runtime::OpOptions o;
         o.name = "m.group";
         auto h = rt.EnqueueAllreduce(specs, specs, o, true);
         return h.ok() ? WaitAndRelease(rt, *h) : h.status();
       },
       "Mismatched grouped operations"},
      {"scalar allgather",
       [](int r, runtime::Runtime& rt) {
         float x = 1;
         runtime::OpOptions o;
         o.name = "m.scalar";
         auto h = rt.EnqueueAllgather({Spec(&x, DataType::kFloat32, {})}, o, false);
         return h.ok() ? WaitAndRelease(rt, *h) : h.status();
       },
       "Rank zero tried to allgather a rank-zero tensor."},
  };
  RunRanks(3, [&](int rank, runtime::Runtime& rt) {
    for (const auto& c : cases) {
      Status s = c.op(rank, rt);
      EXPECT_EQ(s.code(), StatusCode::kRemoteError) << c.label << ": " << s.ToString();
      EXPECT_NE(s.message().find(c.message), std::string::npos) << c.label << ": " << s.message();
      ExpectWorks(rt, "after." + c.label);
    }
  });
}

// A request list rank 0 cannot decode (a data connection altered on its way, a rank of another
// build): every rank stops at once with the reason, instead of rank 0 dropping the list and the
// ranks waiting for its requests until the stall check.
TEST(NegotiationTest, AnUnreadableRequestListStopsEveryRankNamingTheSender) {
  InProcessWorld world;
  std::atomic<bool> tampered{false};
  world.TamperGatherBytes([&](int rank, std::string* bytes) {
    if (rank == 1 && bytes->find("victim") != std::string::npos && !tampered.exchange(true)) {
      (*bytes)[0] = '\x7f';  // the version byte
    }
  });
  RunRanks(
      2,
      [&](int rank, runtime::Runtime& rt) {
        const auto start = std::chrono::steady_clock::now();
        Status s = Allreduce(rt, "victim", 4);
        EXPECT_FALSE(s.ok());
        EXPECT_NE(s.message().find("rank 1 of process set 0 sent a request list rank 0 cannot "
                                   "read (malformed request list"),
                  std::string::npos)
            << s.ToString();
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
      },
      [](runtime::RuntimeConfig* c) { c->stall_check_time = std::chrono::seconds(60); }, &world);
  EXPECT_TRUE(tampered.load());
}

TEST(NegotiationTest, DuplicateInFlightNameFailsOnlyOnThatRank) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    std::vector<float> a(2, 1.0f), b(2, 1.0f);
    runtime::OpOptions o;
    o.name = "dup";
    auto sa = Spec(a.data(), DataType::kFloat32, {2});
    auto sb = Spec(b.data(), DataType::kFloat32, {2});
    if (rank == 0) {
      auto first = rt.EnqueueAllreduce({sa}, {sa}, o, false);
      ASSERT_TRUE(first.ok());
      auto second = rt.EnqueueAllreduce({sb}, {sb}, o, false);
      ASSERT_FALSE(second.ok());
      EXPECT_NE(second.status().message().find("same name as another tensor that is currently "
                                               "being processed"),
                std::string::npos);
      ASSERT_TRUE(WaitAndRelease(rt, *first).ok());
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      auto h = rt.EnqueueAllreduce({sa}, {sa}, o, false);
      ASSERT_TRUE(h.ok());
      ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
    }
    EXPECT_EQ(a[0], 2.0f);
  });
}

TEST(NegotiationTest, NameStaysReservedUntilItsHandleIsReleasedOnEveryRank) {
  // Regression (Horovod's duplicate-name test failed on some ranks only): whether the first op
  // has already run or not, a second op under its name fails until the first handle is
  // released, on every rank alike; afterwards the name is free again.
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    std::vector<float> a(2, 1.0f), b(2, 1.0f);
    runtime::OpOptions o;
    o.name = "reserved";
    auto sa = Spec(a.data(), DataType::kFloat32, {2});
    auto sb = Spec(b.data(), DataType::kFloat32, {2});
    auto first = rt.EnqueueAllreduce({sa}, {sa}, o, false);
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(rt.handles().Wait(*first, std::chrono::seconds(30)).ok());  // it has run
    auto refused = rt.EnqueueAllreduce({sb}, {sb}, o, false);
    ASSERT_FALSE(refused.ok()) << "rank " << rank;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    // The message says why, where Horovod (which frees the name once the op ran) would not fail.
    EXPECT_NE(refused.status().message().find(
                  "(tensor 'reserved'; an earlier op under this name has run but its handle was "
                  "never synchronized, and hvd keeps the name reserved until it is)"),
              std::string::npos)
        << refused.status().message();
    ASSERT_TRUE(rt.ReleaseHandle(*first).ok());
    auto again = rt.EnqueueAllreduce({sb}, {sb}, o, false);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    ASSERT_TRUE(WaitAndRelease(rt, *again).ok());
    EXPECT_EQ(b[0], 2.0f);
  });
}

TEST(NegotiationTest, ChangedShapeUnderACachedNameRenegotiates) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    for (int n : {4, 4, 4, 6, 6, 3}) {
      Status s = Allreduce(rt, "reshaped", n);
      EXPECT_TRUE(s.ok()) << n << ": " << s.ToString();
    }
    // One rank changes shape, the other does not: an error on both, then both recover.
    Status s = Allreduce(rt, "reshaped", rank == 0 ? 3 : 5);
    EXPECT_EQ(s.code(), StatusCode::kRemoteError) << s.ToString();
    ExpectWorks(rt, "reshaped.after");
  });
}

// A cached tensor that one rank enqueues long after the other (longer than the stall-check
// time: a rank saving a checkpoint): the late rank's op must complete as soon as it enqueues.
// Until 2026-11-30 the early rank's aged copy went uncached but the cache entry stayed, so the
// late rank's copy, a hit, waited for the early rank's bit until it aged too: one more
// stall-check time (here 1 s; 60 s by default).
TEST(NegotiationTest, AStalledCachedTensorIsRenegotiatedOnEveryRank) {
  RunRanks(
      2,
      [](int rank, runtime::Runtime& rt) {
        ASSERT_TRUE(Allreduce(rt, "cached.late", 4).ok());  // cached now
        ASSERT_TRUE(Allreduce(rt, "cached.late", 4).ok());
        if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        const auto start = std::chrono::steady_clock::now();
        EXPECT_TRUE(Allreduce(rt, "cached.late", 4).ok());
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (rank == 1) {
          EXPECT_LT(waited, 0.6) << "the late rank waited for its copy to age";
        }
        ASSERT_TRUE(Allreduce(rt, "cached.late", 4).ok());  // and cached again after
      },
      [](runtime::RuntimeConfig* c) {
        c->stall_check_time = std::chrono::seconds(1);
        c->stall_shutdown_time = std::chrono::milliseconds(0);
      });
}

// Ten float32 allgathers; rank 1 sends 3 rows of every odd tensor once `changed`.
std::vector<GatherCase> Gathers(bool changed) {
  std::vector<GatherCase> cases;
  for (int t = 0; t < 10; ++t) {
    GatherCase c;
    c.name = "reshaped.ag." + std::to_string(t);
    c.cols = 2;
    c.rows = [t, changed](int r) -> int64_t {
      return changed && r == 1 && t % 2 ? 3 : (r + t) % 3;
    };
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(NegotiationTest, ChangedRowsUnderCachedFusedAllgathersRenegotiate) {
  for (int64_t capacity : {1024, 4, 0}) {
    // Given 3 ranks gathering ten tensors together, twice the same (the second time from the
    // cache), then with rank 1 sending more rows of half of them, twice; with a roomy cache, one
    // that evicts, and none
    RunRanks(
        3,
        [](int rank, runtime::Runtime& rt) {
          for (int step = 0; step < 4; ++step) {
            // Then only rank 1's cache entries are invalid, every rank renegotiates them, and
            // each step's outputs hold the rows every rank sent that step
            AllgatherAndCheck(rt, rank, 3, Gathers(step >= 2));
          }
          ExpectWorks(rt, "reshaped.ag.after");
        },
        [capacity](runtime::RuntimeConfig* c) {
          c->cache_capacity = capacity;
          c->cycle_time = std::chrono::milliseconds(5);
        });
  }
}

TEST(NegotiationTest, GroupWithOneChangedMemberUnderTheCacheRenegotiatesWhole) {
  // Given a grouped allgather of three members, twice the same (the second time all members
  // are cache hits), then with only rank 1's rows of member 1 changed: its entry goes invalid
  // while the other members are still hits
  RunRanks(3, [](int rank, runtime::Runtime& rt) {
    std::vector<GatherCase> cases(3);
    for (int m = 0; m < 3; ++m) {
      cases[m].name = "regroup.ag." + std::to_string(m);
      cases[m].cols = 2;
    }
    for (int step = 0; step < 4; ++step) {
      const bool changed = step >= 2;
      cases[0].rows = [](int r) -> int64_t { return r; };
      cases[1].rows = [changed](int r) -> int64_t { return changed && r == 1 ? 4 : 1; };
      cases[2].rows = [](int) -> int64_t { return 2; };
      // Then the group is negotiated as a whole again (rank 0 never waits for members that
      // were run from the cache) and every step's outputs are right
      AllgatherAndCheck(rt, rank, 3, cases, true);
    }
  });
}

TEST(NegotiationTest, GroupedAllreduceWithOneResizedMemberUnderTheCacheRenegotiatesWhole) {
  // Given a grouped allreduce of [2] and [3] floats, twice (then cache hits), then with the
  // second member resized to [5] on every rank
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    for (int step = 0; step < 4; ++step) {
      std::vector<float> a(2, 1.0f), b(step >= 2 ? 5 : 3, 2.0f);
      runtime::OpOptions o;
      o.name = "regroup.ar";
      auto sa = Spec(a.data(), DataType::kFloat32, {static_cast<int64_t>(a.size())});
      auto sb = Spec(b.data(), DataType::kFloat32, {static_cast<int64_t>(b.size())});
      auto h = rt.EnqueueAllreduce({sa, sb}, {sa, sb}, o, true);
      ASSERT_TRUE(h.ok()) << h.status().ToString();
      // Then the whole group renegotiates and completes with the sums
      Status s = WaitAndRelease(rt, *h);
      ASSERT_TRUE(s.ok()) << "step " << step << ": " << s.ToString();
      EXPECT_EQ(a, std::vector<float>(2, 2.0f));
      EXPECT_EQ(b, std::vector<float>(b.size(), 4.0f));
    }
  });
}

TEST(NegotiationTest, StaticProcessSets) {
  RunRanks(3,
           [](int rank, runtime::Runtime& rt) {
             auto ids = rt.ProcessSetIds();
             ASSERT_TRUE(ids.ok());
             EXPECT_EQ(*ids, (std::vector<int32_t>{0, 1, 2}));
             // Set 1 = {0, 1}, set 2 = {1, 2}: each member sums its set's ranks.
             for (int32_t set : {1, 2}) {
               auto ranks = rt.ProcessSetRanks(set);
               ASSERT_TRUE(ranks.ok());
               bool member = std::find(ranks->begin(), ranks->end(), rank) != ranks->end();
               std::vector<float> buf = {static_cast<float>(rank)};
               runtime::OpOptions o;
               o.name = "ps";
               o.process_set_id = set;
               o.reduce_op = ReduceOp::kAverage;
               auto spec = Spec(buf.data(), DataType::kFloat32, {1});
               auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
               if (!member) {
                 EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
                 continue;
               }
               ASSERT_TRUE(h.ok());
               Status s = WaitAndRelease(rt, *h);
               ASSERT_TRUE(s.ok()) << s.ToString();
               EXPECT_EQ(buf[0], set == 1 ? 0.5f : 1.5f);
             }
             // A rank that shuts down shuts its peers down: leave together.
             auto b = rt.EnqueueBarrier(0);
             ASSERT_TRUE(b.ok());
             EXPECT_TRUE(WaitAndRelease(rt, *b).ok());
           },
           nullptr, nullptr, {{0, 1}, {1, 2}});
}

TEST(NegotiationTest, DynamicProcessSetsAddAndRemove) {
  RunRanks(
      3,
      [](int rank, runtime::Runtime& rt) {
        auto id = rt.AddProcessSet({2, 0});
        ASSERT_TRUE(id.ok()) << id.status().ToString();
        EXPECT_EQ(*id, 1);
        auto ranks = rt.ProcessSetRanks(*id);
        EXPECT_EQ(*ranks, (std::vector<int32_t>{0, 2}));
        if (rank != 1) {
          std::vector<int32_t> buf = {rank};
          runtime::OpOptions o;
          o.name = "dyn";
          o.process_set_id = *id;
          auto spec = Spec(buf.data(), DataType::kInt32, {1});
          auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
          ASSERT_TRUE(h.ok());
          ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
          EXPECT_EQ(buf[0], 2);
        }
        auto again = rt.AddProcessSet({0, 2});
        EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
        ASSERT_TRUE(rt.RemoveProcessSet(*id).ok());
        EXPECT_EQ(rt.ProcessSetRanks(*id).status().code(), StatusCode::kNotFound);
        ExpectWorks(rt, "after.remove");
      },
      [](runtime::RuntimeConfig* c) { c->dynamic_process_sets = true; });
}

// Ops enqueued on a set and not waited for before its removal complete (every member enqueued
// them before asking for the removal); until 2026-12-02 they failed "process set 1 was
// removed" whenever the removal's cycle came first (about half the time). Ten rounds, so the
// race it had would show.
TEST(NegotiationTest, OpsInFlightOnASetCompleteBeforeItIsRemoved) {
  RunRanks(
      3,
      [](int rank, runtime::Runtime& rt) {
        for (int round = 0; round < 10; ++round) {
          auto id = rt.AddProcessSet({0, 2});
          ASSERT_TRUE(id.ok()) << id.status().ToString();
          std::vector<std::vector<int32_t>> bufs(4, std::vector<int32_t>{rank});
          std::vector<int64_t> handles;
          if (rank != 1) {
            for (size_t i = 0; i < bufs.size(); ++i) {
              runtime::OpOptions o;
              o.name = "inflight." + std::to_string(i);
              o.process_set_id = *id;
              auto spec = Spec(bufs[i].data(), DataType::kInt32, {1});
              auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
              ASSERT_TRUE(h.ok()) << h.status().ToString();
              handles.push_back(*h);
            }
          }
          ASSERT_TRUE(rt.RemoveProcessSet(*id).ok());
          for (size_t i = 0; i < handles.size(); ++i) {
            Status s = WaitAndRelease(rt, handles[i]);
            EXPECT_TRUE(s.ok()) << "round " << round << " op " << i << ": " << s.ToString();
            EXPECT_EQ(bufs[i][0], 2);
          }
        }
        ExpectWorks(rt, "after.inflight");
      },
      [](runtime::RuntimeConfig* c) { c->dynamic_process_sets = true; });
}

TEST(NegotiationTest, DynamicProcessSetsNeedTheFlag) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    auto id = rt.AddProcessSet({0});
    EXPECT_EQ(id.status().code(), StatusCode::kPreconditionFailed);
  });
}

TEST(NegotiationTest, CacheDisabledStillWorks) {
  RunRanks(
      2,
      [](int rank, runtime::Runtime& rt) {
        for (int i = 0; i < 5; ++i) ExpectWorks(rt, "nocache");
      },
      [](runtime::RuntimeConfig* c) { c->cache_capacity = 0; });
}

TEST(NegotiationTest, TinyCacheEvictsAndStaysConsistent) {
  RunRanks(
      2,
      [](int rank, runtime::Runtime& rt) {
        for (int step = 0; step < 4; ++step) {
          for (int t = 0; t < 5; ++t) ExpectWorks(rt, "evict." + std::to_string(t));
        }
      },
      [](runtime::RuntimeConfig* c) { c->cache_capacity = 2; });
}

// The ranks a warning names for the first time are handed out once (hvdrun asks them for their
// stacks); a rank still missing at the next warning is not, one missing again after the stall
// ended is.
TEST(StallInspectorTest, NamesEachMissingRankOncePerStall) {
  using std::chrono::milliseconds;
  runtime::StallInspector inspector(true, milliseconds(10), milliseconds(0), {10, 11, 12, 13});
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<runtime::PendingTensor> pending = {{"grad", t0, {true, false, true, true}}};
  EXPECT_EQ(inspector.Check(t0 + milliseconds(5), pending), "");  // not waited long enough
  EXPECT_TRUE(inspector.TakeNewlyMissing().empty());
  EXPECT_EQ(inspector.Check(t0 + milliseconds(20), pending), "");
  EXPECT_EQ(inspector.warnings(), 1);
  EXPECT_EQ(inspector.TakeNewlyMissing(), (std::vector<int32_t>{11}));
  EXPECT_TRUE(inspector.TakeNewlyMissing().empty());
  // Still missing, and now rank 13 too: only 13 is new.
  pending[0].reported[3] = false;
  inspector.Check(t0 + milliseconds(40), pending);
  EXPECT_EQ(inspector.warnings(), 2);
  EXPECT_EQ(inspector.TakeNewlyMissing(), (std::vector<int32_t>{13}));
  // The stall ends (nothing has waited past the check time), then rank 11 is missing again.
  const auto t1 = t0 + milliseconds(60);
  inspector.Check(t1, {{"next", t1, {true, false, true, true}}});
  EXPECT_TRUE(inspector.TakeNewlyMissing().empty());
  inspector.Check(t1 + milliseconds(20), {{"next", t1, {true, false, true, true}}});
  EXPECT_EQ(inspector.TakeNewlyMissing(), (std::vector<int32_t>{11}));
}

// Ranks that group different counts of tensors under one name: no member fails before every
// rank that will submit it has (rank 2's requests come after the others disagreed; until
// 2026-12-02 its members failed early and rank 2 waited for them until the stall shutdown), a
// member only some ranks have fails once the others have all of theirs in, and the name works
// again afterwards.
TEST(CoordinatorTest, AMismatchedGroupFailsEachMemberOnceEveryRankIsIn) {
  runtime::Coordinator coordinator(3);
  const auto now = std::chrono::steady_clock::now();
  auto submit = [&](int rank, int members) {
    for (int m = 0; m < members; ++m) {
      runtime::Request r;
      r.rank = rank;
      r.type = runtime::OpType::kAllreduce;
      r.name = "g." + std::to_string(m);
      r.dtype = DataType::kFloat32;
      r.shape = {2};
      r.group = "g";
      r.group_size = members;
      coordinator.Add(r, now);
    }
  };
  auto names = [](const std::vector<runtime::Response>& responses, runtime::OpType type) {
    std::vector<std::string> out;
    for (const runtime::Response& r : responses) {
      EXPECT_EQ(r.type, type) << r.error;
      if (type == runtime::OpType::kError) {
        EXPECT_NE(r.error.find("Mismatched grouped"), std::string::npos) << r.error;
      }
      out.insert(out.end(), r.names.begin(), r.names.end());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  submit(0, 2);
  submit(1, 3);
  EXPECT_TRUE(coordinator.TakeReady().empty());  // rank 2 will still submit g.0 and g.1
  submit(2, 2);
  EXPECT_EQ(names(coordinator.TakeReady(), runtime::OpType::kError),
            (std::vector<std::string>{"g.0", "g.1", "g.2"}));
  EXPECT_TRUE(coordinator.empty());
  for (int r = 0; r < 3; ++r) submit(r, 2);
  EXPECT_EQ(names(coordinator.TakeReady(), runtime::OpType::kAllreduce),
            (std::vector<std::string>{"g.0", "g.1"}));
  EXPECT_TRUE(coordinator.empty());
}

}  // namespace
}  // namespace hvd::testing
