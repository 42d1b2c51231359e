// The runtime's timeline: rank 0 records negotiation and execution of 2 thread-ranks into a
// Chrome trace (HVD_TIMELINE=<path>), and the dynamic start/stop API (HVD_TIMELINE=DYNAMIC).
#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test/unit/runtime/core/rank_harness.h"
#include "test/unit/timeline/test_files.h"

namespace hvd::testing {
namespace {

using runtime::DataType;
using TimelineDirTest = hvd::timeline::testing::TempDirTest;
using hvd::timeline::testing::ParseFile;

Status Allreduce(runtime::Runtime& rt, const std::string& name, int n = 4) {
  std::vector<float> data(n, 1.0f);
  runtime::OpOptions o;
  o.name = name;
  auto spec = Spec(data.data(), DataType::kFloat32, {n});
  auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
  if (!h.ok()) return h.status();
  return WaitAndRelease(rt, *h);
}

// A grouped allreduce always fuses, so it exercises the fusion-buffer activities.
Status GroupedAllreduce(runtime::Runtime& rt, const std::string& prefix) {
  std::vector<float> a(3, 1.0f), b(5, 2.0f);
  runtime::OpOptions o;
  o.name = prefix;
  std::vector<runtime::TensorSpec> specs = {Spec(a.data(), DataType::kFloat32, {3}),
                                            Spec(b.data(), DataType::kFloat32, {5})};
  auto h = rt.EnqueueAllreduce(specs, specs, o, true);
  if (!h.ok()) return h.status();
  return WaitAndRelease(rt, *h);
}

std::set<std::string> EventNames(const nlohmann::json& trace) {
  std::set<std::string> names;
  for (const auto& e : trace) {
    if (e.contains("name")) names.insert(e["name"].get<std::string>());
    if (e.value("name", "") == "process_name" && e.contains("args") && e["args"].contains("name")) {
      names.insert("row:" + e["args"]["name"].get<std::string>());
    }
  }
  return names;
}

bool HasHeader(const nlohmann::json& trace) {
  for (const auto& e : trace) {
    if (e.contains("args") && e["args"].contains("start_time_since_epoch_in_micros")) return true;
  }
  return false;
}

TEST_F(TimelineDirTest, RankZeroRecordsNegotiationOpsAndCycles) {
  // Given HVD_TIMELINE=<path> with cycle marks on 2 ranks
  const std::string path = Path("timeline.json");
  // When both ranks run allreduces (twice, so the second is a cache hit), a grouped
  // allreduce and a broadcast, then shut down
  RunRanks(
      2,
      [](int rank, runtime::Runtime& rt) {
        for (int step = 0; step < 2; ++step) {
          ASSERT_TRUE(Allreduce(rt, "grad.weight").ok());
          ASSERT_TRUE(GroupedAllreduce(rt, "grouped").ok());
        }
        std::vector<int32_t> v(3, rank);
        runtime::OpOptions o;
        o.name = "bcast.x";
        auto spec = Spec(v.data(), DataType::kInt32, {3});
        auto h = rt.EnqueueBroadcast(spec, spec, o);
        ASSERT_TRUE(h.ok());
        ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
      },
      [&](runtime::RuntimeConfig* c) {
        c->timeline_path = path;
        c->timeline_mark_cycles = true;
      });
  // Then rank 0's file is valid JSON with Horovod's rows and events
  nlohmann::json trace = ParseFile(path);
  ASSERT_TRUE(trace.is_array());
  EXPECT_TRUE(HasHeader(trace));
  const std::set<std::string> names = EventNames(trace);
  for (const char* expected :
       {"NEGOTIATE_ALLREDUCE", "ALLREDUCE", "FAKE_ALLREDUCE", "MEMCPY_IN_FUSION_BUFFER",
        "MEMCPY_OUT_FUSION_BUFFER", "NEGOTIATE_BROADCAST", "BROADCAST", "FAKE_BCAST", "CYCLE_START",
        "row:grad.weight", "row:bcast.x"}) {
    EXPECT_TRUE(names.count(expected)) << "missing " << expected;
  }
  // Every ready rank ticks inside the negotiation; the op's End carries dtype and shape.
  bool rank_tick = false, end_args = false;
  for (const auto& e : trace) {
    if (e.value("ph", "") == "X" && (e.value("name", "") == "0" || e.value("name", "") == "1")) {
      rank_tick = true;
    }
    if (e.value("ph", "") == "E" && e.contains("args") && e["args"].value("shape", "") == "[4]" &&
        e["args"].value("dtype", "") == "float32") {
      end_args = true;
    }
  }
  EXPECT_TRUE(rank_tick);
  EXPECT_TRUE(end_args);
}

// The B-event names on the row of tensor `name`, in trace order.
std::vector<std::string> RowActivities(const nlohmann::json& trace, const std::string& name) {
  int64_t pid = -1;
  for (const auto& e : trace) {
    if (e.value("name", "") == "process_name" && e.contains("args") &&
        e["args"].value("name", "") == name) {
      pid = e.value("pid", int64_t{-1});
    }
  }
  std::vector<std::string> out;
  for (const auto& e : trace) {
    if (e.value("ph", "") == "B" && e.value("pid", int64_t{-2}) == pid) {
      out.push_back(e.value("name", ""));
    }
  }
  return out;
}

TEST_F(TimelineDirTest, FusedAllgatherRecordsTheFusionBufferActivities) {
  // Given a timeline and a grouped allgather of two float32 members (one fused gather), twice
  const std::string path = Path("fused_allgather.json");
  RunRanks(
      2,
      [](int rank, runtime::Runtime& rt) {
        std::vector<GatherCase> cases(2);  // the members are "tl.ag.0" and "tl.ag.1"
        for (int m = 0; m < 2; ++m) {
          cases[m].name = m == 0 ? "tl.ag" : "tl.ag.1";
          cases[m].cols = 2;
          cases[m].rows = [m](int r) -> int64_t { return r + m + 1; };
        }
        for (int step = 0; step < 2; ++step) AllgatherAndCheck(rt, rank, 2, cases, true);
      },
      [&](runtime::RuntimeConfig* c) { c->timeline_path = path; });
  // Then each member's ALLGATHER span holds the output allocation, the copies through the
  // fusion buffer around one backend gather, and ends with the member's own shape
  nlohmann::json trace = ParseFile(path);
  for (const char* member : {"tl.ag.0", "tl.ag.1"}) {
    std::vector<std::string> got = RowActivities(trace, member);
    std::erase(got, "INIT_FUSION_BUFFER");  // only when the buffer grows
    const std::vector<std::string> step = {"NEGOTIATE_ALLGATHER", "ALLGATHER",
                                           "ALLOCATE_OUTPUT",     "MEMCPY_IN_FUSION_BUFFER",
                                           "FAKE_ALLGATHER",      "MEMCPY_OUT_FUSION_BUFFER"};
    ASSERT_GE(got.size(), step.size()) << member;
    EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + step.size()), step) << member;
  }
  std::set<std::string> shapes;
  for (const auto& e : trace) {
    if (e.value("ph", "") == "E" && e.contains("args")) shapes.insert(e["args"].value("shape", ""));
  }
  EXPECT_TRUE(shapes.count("[1, 2]")) << "tl.ag.0's input shape on rank 0";
  EXPECT_TRUE(shapes.count("[2, 2]")) << "tl.ag.1's input shape on rank 0";
}

TEST_F(TimelineDirTest, GroupedReducescatterRunsAsOneFusedCollective) {
  // Given a timeline and, twice, a grouped reducescatter on 3 thread-ranks of float32 [7, 2]
  // (rows 3, 2, 2 to ranks 0, 1, 2) and [2] (rows 1, 1, 0: rank 2 gets nothing), Average with
  // prescale 2 and postscale 0.5
  const std::string path = Path("fused_reducescatter.json");
  constexpr int kRanks = 3;
  RunRanks(
      kRanks,
      [](int rank, runtime::Runtime& rt) {
        for (int step = 0; step < 2; ++step) {
          std::vector<float> a(14), b(2);
          for (int i = 0; i < 14; ++i) a[i] = static_cast<float>(rank * 100 + i);
          for (int i = 0; i < 2; ++i) b[i] = static_cast<float>(rank * 100 + 50 + i);
          runtime::OpOptions o;
          o.name = "tl.rs";
          o.reduce_op = runtime::ReduceOp::kAverage;
          o.prescale = 2.0;
          o.postscale = 0.5;
          std::vector<runtime::TensorSpec> specs = {Spec(a.data(), DataType::kFloat32, {7, 2}),
                                                    Spec(b.data(), DataType::kFloat32, {2})};
          auto h = rt.EnqueueReducescatter(specs, o, true);
          ASSERT_TRUE(h.ok()) << h.status().ToString();
          ASSERT_TRUE(rt.Wait(*h, std::chrono::seconds(30)).ok());
          // Then each rank holds its rows of the average of the inputs (times 2 * 0.5): element
          // i of a's average is 100 + i (ranks 0..2 add 0, 100, 200), of b's 150 + i
          const int64_t a_rows[] = {3, 2, 2}, a_first[] = {0, 3, 5};
          auto out_a = rt.handles().TakeOutput(*h, 0);
          auto out_b = rt.handles().TakeOutput(*h, 1);
          ASSERT_TRUE(out_a.ok() && out_b.ok());
          EXPECT_EQ(out_a->shape.ToVector(), (std::vector<int64_t>{a_rows[rank], 2}));
          for (int64_t i = 0; i < a_rows[rank] * 2; ++i) {
            EXPECT_FLOAT_EQ(static_cast<const float*>(out_a->data)[i],
                            100.0f + static_cast<float>(a_first[rank] * 2 + i))
                << "rank " << rank << " a[" << i << "]";
          }
          EXPECT_EQ(out_b->shape.ToVector(), (std::vector<int64_t>{rank < 2 ? 1 : 0}));
          if (rank < 2) {
            EXPECT_FLOAT_EQ(static_cast<const float*>(out_b->data)[0], 150.0f + rank);
          }
          runtime::FreeOutput(out_a->data);
          runtime::FreeOutput(out_b->data);
          EXPECT_TRUE(rt.ReleaseHandle(*h).ok());
        }
      },
      [&](runtime::RuntimeConfig* c) { c->timeline_path = path; });
  // Then each member's REDUCESCATTER span holds the outputs' allocation and the copies through
  // the fusion buffer around one backend reducescatter (Horovod fuses them too)
  nlohmann::json trace = ParseFile(path);
  for (const char* member : {"tl.rs.0", "tl.rs.1"}) {
    std::vector<std::string> got = RowActivities(trace, member);
    std::erase(got, "INIT_FUSION_BUFFER");  // only when the buffer grows
    const std::vector<std::string> step = {"NEGOTIATE_REDUCESCATTER", "REDUCESCATTER",
                                           "ALLOCATE_OUTPUT",         "MEMCPY_IN_FUSION_BUFFER",
                                           "FAKE_REDUCESCATTER",      "MEMCPY_OUT_FUSION_BUFFER"};
    ASSERT_GE(got.size(), step.size()) << member;
    EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + step.size()), step) << member;
  }
}

TEST_F(TimelineDirTest, AllRanksModeShipsEveryRanksEventsWithAlignedClocks) {
  // Given HVD_TIMELINE_ALL_RANKS on 3 thread-ranks, rank 2's clock 3 s ahead
  const std::string path = Path("all.json");
  constexpr int64_t kSkewUs = 3'000'000;
  // When every rank runs a few allreduces and shuts down
  RunRanks(
      3,
      [](int, runtime::Runtime& rt) {
        for (int step = 0; step < 3; ++step) ASSERT_TRUE(Allreduce(rt, "grad.w").ok());
      },
      [&](runtime::RuntimeConfig* c) {
        c->timeline_path = path;
        c->timeline_all_ranks = true;
        if (c->rank == 2) c->timeline_clock_skew_us = kSkewUs;
      });
  // Then rank 0's file has a process row per rank, each with its own op spans and QUEUE
  // spans, and rank 2's spans are shifted back onto rank 0's clock
  nlohmann::json trace = ParseFile(path);
  std::map<int, std::string> rows;
  std::map<int, std::vector<int64_t>> starts;
  std::map<int, int> queues;
  for (const auto& e : trace) {
    if (e.value("name", "") == "process_name") rows[e["pid"]] = e["args"]["name"];
    if (e.value("ph", "") == "B" && e.value("name", "") == "ALLREDUCE") {
      starts[e["pid"]].push_back(e["ts"]);
    }
    if (e.value("ph", "") == "X" && e.value("name", "") == "QUEUE") ++queues[e["pid"]];
  }
  for (int rank = 0; rank < 3; ++rank) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(rows[rank + 1], "rank " + std::to_string(rank));
    ASSERT_EQ(starts[rank + 1].size(), 3u);
    EXPECT_EQ(queues[rank + 1], 3);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_LT(std::abs(starts[rank + 1][i] - starts[1][i]), 500'000) << "step " << i;
    }
  }
  EXPECT_EQ(trace.back()["args"]["dropped_events"], 0);
}

TEST_F(TimelineDirTest, NoTimelineMeansNoFileAndTheApiIsRefused) {
  // Given no HVD_TIMELINE
  RunRanks(2, [&](int, runtime::Runtime& rt) {
    // When the API is used, Then it is refused with Horovod's hint
    Status s = rt.StartTimeline(Path("x.json"), false);
    EXPECT_EQ(s.code(), StatusCode::kPreconditionFailed);
    EXPECT_NE(s.message().find("HVD_TIMELINE=DYNAMIC"), std::string::npos) << s.message();
    EXPECT_EQ(rt.StopTimeline().code(), StatusCode::kPreconditionFailed);
    ASSERT_TRUE(Allreduce(rt, "t").ok());
  });
  EXPECT_FALSE(std::filesystem::exists(Path("x.json")));
  // And before init it says "not initialized"
  runtime::Runtime idle;
  EXPECT_EQ(idle.StartTimeline(Path("y.json"), false).code(), StatusCode::kNotInitialized);
  EXPECT_EQ(idle.StopTimeline().code(), StatusCode::kNotInitialized);
}

TEST_F(TimelineDirTest, DynamicStartStopAndRestartIntoANewFile) {
  // Given HVD_TIMELINE=DYNAMIC
  const std::string first = Path("first.json"), second = Path("second.json");
  std::barrier sync(2);
  RunRanks(
      2,
      [&](int rank, runtime::Runtime& rt) {
        // Init alone creates nothing (both ranks look before either starts the timeline)
        EXPECT_FALSE(std::filesystem::exists(first));
        sync.arrive_and_wait();
        // When the timeline is started, an op runs, it is stopped, another op runs, and it
        // is restarted into a second file (rank 1 names its own path: it must not write)
        const std::string mine = rank == 0 ? first : Path("rank1.json");
        ASSERT_TRUE(rt.StartTimeline(mine, true).ok());
        sync.arrive_and_wait();
        ASSERT_TRUE(Allreduce(rt, "in.first").ok());
        ASSERT_TRUE(rt.StopTimeline().ok());
        sync.arrive_and_wait();
        ASSERT_TRUE(Allreduce(rt, "between").ok());
        sync.arrive_and_wait();
        ASSERT_TRUE(rt.StartTimeline(rank == 0 ? second : mine, false).ok());
        sync.arrive_and_wait();
        ASSERT_TRUE(Allreduce(rt, "in.second").ok());
        sync.arrive_and_wait();
        ASSERT_TRUE(rt.StopTimeline().ok());
      },
      [](runtime::RuntimeConfig* c) { c->timeline_path = runtime::kDynamicTimeline; });
  // Then each file holds only its own window, and rank 1 wrote nothing
  const std::set<std::string> a = EventNames(ParseFile(first));
  const std::set<std::string> b = EventNames(ParseFile(second));
  EXPECT_TRUE(a.count("row:in.first"));
  EXPECT_TRUE(a.count("ALLREDUCE"));
  EXPECT_FALSE(a.count("row:between"));
  EXPECT_FALSE(a.count("row:in.second"));
  EXPECT_TRUE(b.count("row:in.second"));
  EXPECT_FALSE(b.count("row:between"));
  EXPECT_FALSE(b.count("CYCLE_START"));
  EXPECT_FALSE(std::filesystem::exists(Path("rank1.json")));
}

}  // namespace
}  // namespace hvd::testing
