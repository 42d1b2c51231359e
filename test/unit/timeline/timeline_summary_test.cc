#include "timeline/timeline_summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test/unit/timeline/hand_trace.h"
#include "test/unit/timeline/test_files.h"

namespace hvd::timeline {
namespace {

using testing::kHandTrace;

class TimelineSummaryTest : public testing::TempDirTest {};

TEST_F(TimelineSummaryTest, MatchesAHandCount) {
  // Given the hand-counted trace
  Result<TimelineSummary> r = Summarize(nlohmann::json::parse(kHandTrace));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TimelineSummary& s = *r;
  // Then per op type
  struct Expected {
    const char* op;
    int64_t count;
    double op_us, negotiate_us, transfer_us, memcpy_us, other_us;
    int64_t bytes, negotiations;
  };
  const Expected expected[] = {
      {"ALLREDUCE", 2, 30 + 20, 10 + 4, 20 + 14, 3 + 2, 2, 24 + 1000, 2},
      {"BROADCAST", 1, 20, 6, 10, 0, 0, 40, 1},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.op);
    ASSERT_TRUE(s.by_op.count(e.op));
    const SpanStats& st = s.by_op.at(e.op);
    EXPECT_EQ(st.count, e.count);
    EXPECT_DOUBLE_EQ(st.op_us, e.op_us);
    EXPECT_DOUBLE_EQ(st.mean_us(), e.op_us / e.count);
    EXPECT_DOUBLE_EQ(st.negotiate_us, e.negotiate_us);
    EXPECT_DOUBLE_EQ(st.transfer_us, e.transfer_us);
    EXPECT_DOUBLE_EQ(st.memcpy_us, e.memcpy_us);
    EXPECT_DOUBLE_EQ(st.other_activity_us, e.other_us);
    EXPECT_EQ(st.bytes, e.bytes);
    EXPECT_EQ(st.negotiations, e.negotiations);
    const double life = e.op_us + e.negotiate_us;
    EXPECT_DOUBLE_EQ(st.negotiate_share(), e.negotiate_us / life);
    EXPECT_DOUBLE_EQ(st.transfer_share(), e.transfer_us / life);
    EXPECT_DOUBLE_EQ(st.memcpy_share(), e.memcpy_us / life);
  }
  EXPECT_EQ(s.by_op.size(), 2u) << "the unfinished ALLGATHER is not an operation";
  // And per tensor (one op type each here, so the same numbers)
  EXPECT_EQ(s.by_tensor.at({"grad.a", "ALLREDUCE"}).count, 2);
  EXPECT_EQ(s.by_tensor.at({"grad.b", "BROADCAST"}).bytes, 40);
  EXPECT_EQ(s.unmatched_ends, 1);
  EXPECT_EQ(s.open_spans, 1);
  // And the table shows them
  const std::string table = FormatSummary(s);
  EXPECT_NE(table.find("ALLREDUCE"), std::string::npos) << table;
  EXPECT_NE(table.find("grad.a (ALLREDUCE)"), std::string::npos) << table;
  EXPECT_NE(table.find("21.9%"), std::string::npos) << "negotiate share 14/64\n" << table;
  EXPECT_NE(table.find("1 unmatched end events, 1 spans never closed"), std::string::npos) << table;
}

TEST_F(TimelineSummaryTest, CountsQueueTimeAndTotalsAllRanksTracesPerRank) {
  // Given an all-ranks trace by hand: grad.w on rank 0 (pid 1) and rank 1 (pid 2), each an
  // ALLREDUCE of 10 us; rank 0 waited 50 us in the queue (QUEUE row tid 3), rank 1 5 us; plus
  // a Horovod-layout QUEUE row ("QUEUE" thread of process grad.v) of 7 us
  const char* trace = R"([
{"name":"process_name","ph":"M","pid":1,"args":{"name":"rank 0"}},
{"name":"process_name","ph":"M","pid":2,"args":{"name":"rank 1"}},
{"name":"process_name","ph":"M","pid":5,"args":{"name":"grad.v"}},
{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"grad.w"}},
{"name":"thread_name","ph":"M","pid":1,"tid":3,"args":{"name":"grad.w QUEUE"}},
{"name":"thread_name","ph":"M","pid":2,"tid":2,"args":{"name":"grad.w"}},
{"name":"thread_name","ph":"M","pid":2,"tid":3,"args":{"name":"grad.w QUEUE"}},
{"name":"thread_name","ph":"M","pid":5,"tid":1,"args":{"name":"QUEUE"}},
{"ph":"X","name":"QUEUE","pid":1,"tid":3,"ts":0,"dur":50,"args":{"op":"ALLREDUCE"}},
{"ph":"X","name":"QUEUE","pid":2,"tid":3,"ts":45,"dur":5,"args":{"op":"ALLREDUCE"}},
{"ph":"X","name":"QUEUE","pid":5,"tid":1,"ts":0,"dur":7,"args":{"op":"BROADCAST"}},
{"ph":"B","name":"ALLREDUCE","pid":1,"tid":2,"ts":50},
{"ph":"B","name":"ALLREDUCE","pid":2,"tid":2,"ts":50},
{"ph":"E","pid":1,"tid":2,"ts":60,"args":{"dtype":"float32","shape":"[4]","bytes":16}},
{"ph":"E","pid":2,"tid":2,"ts":60,"args":{"dtype":"float32","shape":"[4]","bytes":16}}
])";
  // When summarized
  Result<TimelineSummary> r = Summarize(nlohmann::json::parse(trace));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Then queue time is per op, per tensor and per rank; the op totals are unchanged by it
  EXPECT_EQ(r->by_op.at("ALLREDUCE").count, 2);
  EXPECT_DOUBLE_EQ(r->by_op.at("ALLREDUCE").op_us, 20.0);
  EXPECT_DOUBLE_EQ(r->by_op.at("ALLREDUCE").queue_us, 55.0);
  EXPECT_EQ(r->by_op.at("ALLREDUCE").queued, 2);
  EXPECT_DOUBLE_EQ(r->by_tensor.at({"grad.w", "ALLREDUCE"}).queue_us, 55.0);
  EXPECT_DOUBLE_EQ(r->by_tensor.at({"grad.v", "BROADCAST"}).queue_us, 7.0);
  EXPECT_DOUBLE_EQ(r->by_rank.at({"rank 0", "ALLREDUCE"}).queue_us, 50.0);
  EXPECT_DOUBLE_EQ(r->by_rank.at({"rank 1", "ALLREDUCE"}).queue_us, 5.0);
  EXPECT_EQ(r->by_rank.at({"rank 1", "ALLREDUCE"}).bytes, 16);
  EXPECT_EQ(r->by_rank.size(), 2u) << "grad.v is not a rank row";
  // And the table has the queue column and the per-rank section
  const std::string table = FormatSummary(*r);
  EXPECT_NE(table.find("queue_ms"), std::string::npos) << table;
  EXPECT_NE(table.find("rank 0 (ALLREDUCE)"), std::string::npos) << table;
}

TEST_F(TimelineSummaryTest, AOneRankTracesTensorNamedLikeARankIsNoRankRow) {
  // Given a one-rank trace (each tensor a process, its op on thread 0, its QUEUE on thread 1)
  // whose tensor a C API program named "rank 3" (until 2026-12-01 counted as a rank row)
  const char* trace = R"([
{"name":"process_name","ph":"M","pid":1,"args":{"name":"rank 3"}},
{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"QUEUE"}},
{"ph":"X","name":"QUEUE","pid":1,"tid":1,"ts":0,"dur":4,"args":{"op":"ALLREDUCE"}},
{"ph":"B","name":"ALLREDUCE","pid":1,"tid":0,"ts":4},
{"ph":"B","name":"GLOO_ALLREDUCE","pid":1,"tid":0,"ts":5},
{"ph":"E","pid":1,"tid":0,"ts":9},
{"ph":"E","pid":1,"tid":0,"ts":10,"args":{"dtype":"float32","shape":"[4]","bytes":16}}
])";
  Result<TimelineSummary> r = Summarize(nlohmann::json::parse(trace));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Then it is a tensor, with no per-rank section, and its transfer is the trace's own row's
  EXPECT_EQ(r->by_tensor.at({"rank 3", "ALLREDUCE"}).count, 1);
  EXPECT_TRUE(r->by_rank.empty());
  EXPECT_EQ(r->gaps.count(""), 1u);
  EXPECT_EQ(r->gaps.count("rank 3"), 0u);
}

TEST_F(TimelineSummaryTest, GapsBetweenCollectivesAreQueuedWhenATensorWaitedAcrossThem) {
  // Given an all-ranks trace by hand. Rank 0 (pid 1): grad.a and grad.b fused into one
  // ALLREDUCE 10-40 (its SHM transfer 12-38 on both rows); grad.c enqueued at 30, before that
  // transfer ended, its op 50-70 (transfer 55-65): a queued gap of 55 - 38 = 17 us; grad.d
  // enqueued at 100, after, its transfer 106-118: an idle gap of 106 - 65 = 41 us. Rank 1
  // (pid 2): one transfer, no gap.
  const char* trace = R"([
{"name":"process_name","ph":"M","pid":1,"args":{"name":"rank 0"}},
{"name":"process_name","ph":"M","pid":2,"args":{"name":"rank 1"}},
{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"grad.a"}},
{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"grad.b"}},
{"name":"thread_name","ph":"M","pid":1,"tid":3,"args":{"name":"grad.c"}},
{"name":"thread_name","ph":"M","pid":1,"tid":4,"args":{"name":"grad.d"}},
{"name":"thread_name","ph":"M","pid":1,"tid":5,"args":{"name":"grad.c QUEUE"}},
{"name":"thread_name","ph":"M","pid":1,"tid":6,"args":{"name":"grad.d QUEUE"}},
{"name":"thread_name","ph":"M","pid":2,"tid":1,"args":{"name":"grad.a"}},
{"ph":"B","name":"ALLREDUCE","pid":1,"tid":1,"ts":10},
{"ph":"B","name":"ALLREDUCE","pid":1,"tid":2,"ts":10},
{"ph":"B","name":"ALLREDUCE","pid":2,"tid":1,"ts":10},
{"ph":"B","name":"SHM_ALLREDUCE","pid":1,"tid":1,"ts":12},
{"ph":"B","name":"SHM_ALLREDUCE","pid":1,"tid":2,"ts":12},
{"ph":"B","name":"SHM_ALLREDUCE","pid":2,"tid":1,"ts":12},
{"ph":"E","pid":1,"tid":1,"ts":38},
{"ph":"E","pid":1,"tid":2,"ts":38},
{"ph":"E","pid":2,"tid":1,"ts":38},
{"ph":"E","pid":1,"tid":1,"ts":40},
{"ph":"E","pid":1,"tid":2,"ts":40},
{"ph":"E","pid":2,"tid":1,"ts":40},
{"ph":"X","name":"QUEUE","pid":1,"tid":5,"ts":30,"dur":20,"args":{"op":"ALLREDUCE"}},
{"ph":"B","name":"ALLREDUCE","pid":1,"tid":3,"ts":50},
{"ph":"B","name":"SHM_ALLREDUCE","pid":1,"tid":3,"ts":55},
{"ph":"E","pid":1,"tid":3,"ts":65},
{"ph":"E","pid":1,"tid":3,"ts":70},
{"ph":"X","name":"QUEUE","pid":1,"tid":6,"ts":100,"dur":5,"args":{"op":"ALLREDUCE"}},
{"ph":"B","name":"ALLREDUCE","pid":1,"tid":4,"ts":105},
{"ph":"B","name":"SHM_ALLREDUCE","pid":1,"tid":4,"ts":106},
{"ph":"E","pid":1,"tid":4,"ts":118},
{"ph":"E","pid":1,"tid":4,"ts":120}
])";
  // When summarized
  Result<TimelineSummary> r = Summarize(nlohmann::json::parse(trace));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Then rank 0 has three transfers (the fused one once) and one gap of each kind
  ASSERT_EQ(r->gaps.size(), 2u);
  const GapStats& g0 = r->gaps.at("rank 0");
  EXPECT_EQ(g0.transfers, 3);
  EXPECT_EQ(g0.gaps, 2);
  EXPECT_EQ(g0.queued_gaps, 1);
  EXPECT_DOUBLE_EQ(g0.queued_us, 17.0);
  EXPECT_DOUBLE_EQ(g0.queued_median_us, 17.0);
  EXPECT_DOUBLE_EQ(g0.queued_max_us, 17.0);
  EXPECT_DOUBLE_EQ(g0.idle_us, 41.0);
  const GapStats& g1 = r->gaps.at("rank 1");
  EXPECT_EQ(g1.transfers, 1);
  EXPECT_EQ(g1.gaps, 0);
  // And the table has a row per rank
  const std::string table = FormatSummary(*r);
  EXPECT_NE(table.find("gaps between collectives"), std::string::npos) << table;
  EXPECT_NE(table.find("rank 0               3       2       1      0.017      0.017      0.017"),
            std::string::npos)
      << table;
}

TEST_F(TimelineSummaryTest, GapsOfAOneRankTraceMergeOverlappingTransfers) {
  // Given the hand-counted trace (one rank's, Horovod's layout): transfers 6-16 (MPI_BCAST) and
  // 15-35 (GLOO) overlap, then 106-120 (NCCL); no QUEUE span (its QUEUE is an activity)
  Result<TimelineSummary> r = Summarize(nlohmann::json::parse(kHandTrace));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Then they are two transfers with one idle gap of 106 - 35 us, on the trace's row
  ASSERT_EQ(r->gaps.size(), 1u);
  const GapStats& g = r->gaps.at("");
  EXPECT_EQ(g.transfers, 2);
  EXPECT_EQ(g.gaps, 1);
  EXPECT_EQ(g.queued_gaps, 0);
  EXPECT_DOUBLE_EQ(g.idle_us, 71.0);
  EXPECT_NE(FormatSummary(*r).find("\ntrace "), std::string::npos) << FormatSummary(*r);
}

TEST_F(TimelineSummaryTest, AnEventNestedAMillionDeepIsRefusedWithoutOverflowingTheStack) {
  // Given a valid trace whose event has a non-integer pid and an argument nested a million
  // arrays deep (until 2026-12-01 the error message dumped the whole event, recursing once per
  // level: a stack overflow)
  const int depth = 1000000;
  std::string text = R"([{"ph":"B","pid":0.5,"tid":0,"name":"x","args":)";
  text += std::string(depth, '[') + std::string(depth, ']') + "}]";
  // When summarized
  Result<TimelineSummary> r = SummarizeText(std::move(text), "deep.json");
  // Then it is refused, naming the event and its fields
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("event 0: its pid (0.5) and tid (0) must be integers"),
            std::string::npos)
      << r.status().message();
}

TEST_F(TimelineSummaryTest, AcceptsTraceEventsObjectAndRejectsOtherShapes) {
  struct Case {
    const char* name;
    std::string text;
    bool ok;
  };
  const Case cases[] = {
      {"array", kHandTrace, true},
      {"traceEvents object", std::string(R"({"traceEvents":)") + kHandTrace + "}", true},
      {"empty array", "[]", true},
      {"object without events", R"({"foo":1})", false},
      {"number", "42", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Summarize(nlohmann::json::parse(c.text)).ok(), c.ok);
  }
}

TEST_F(TimelineSummaryTest, FileErrorsNameTheFile) {
  struct Case {
    const char* name;
    const char* content;  // nullptr: no file
    StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"missing.json", nullptr, StatusCode::kNotFound, "cannot open"},
      {"truncated.json", "[{\"ph\":\"B\"", StatusCode::kInvalidArgument,
       "before its first complete event"},
      {"garbage.json", "\x8f\x01 x", StatusCode::kInvalidArgument, "is not a timeline: not JSON"},
      {"empty.json", "", StatusCode::kInvalidArgument, "is empty (0 bytes)"},
      {"object.json", "{\"a\":1}", StatusCode::kInvalidArgument, "not a trace"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Path(c.name);
    if (c.content) testing::WriteFile(path, c.content);
    Result<TimelineSummary> r = SummarizeFile(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
  }
}

TEST(DtypeSizeTest, KnowsHorovodTorchAndNumpySpellings) {
  const std::pair<const char*, int64_t> cases[] = {
      {"float32", 4},  {"HOROVOD_FLOAT32", 4}, {"torch.float16", 2},
      {"bfloat16", 2}, {"HOROVOD_INT64", 8},   {"uint8", 1},
      {"bool", 1},     {"float64", 8},         {"complex_thing", 0},
  };
  for (const auto& [dtype, size] : cases) EXPECT_EQ(DtypeSize(dtype), size) << dtype;
}

}  // namespace
}  // namespace hvd::timeline
