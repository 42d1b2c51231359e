#include "timeline/timeline.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <limits>
#include <map>

#include "test/unit/timeline/test_files.h"
#include "timeline/timeline_summary.h"

namespace hvd::timeline {
namespace {

using testing::ParseFile;
using testing::ReadFile;

constexpr int64_t kEpoch = 1'700'000'000'000'000;  // fake clock start, µs since epoch

class TimelineTest : public testing::TempDirTest {
 protected:
  // A clock that advances 10 µs per reading.
  Timeline::Clock FakeClock() {
    return [this] { return kEpoch + 10 * ticks_++; };
  }
  std::atomic<int64_t> ticks_{0};
};

// Horovod's sequence for one allreduce negotiated by 2 ranks.
void RecordAllreduce(Timeline& t, const std::string& tensor) {
  t.NegotiateStart(tensor, "ALLREDUCE");
  t.NegotiateRankReady(tensor, 0);
  t.NegotiateRankReady(tensor, 1);
  t.NegotiateEnd(tensor);
  t.Start(tensor, "ALLREDUCE");
  t.ActivityStart(tensor, "MEMCPY_IN_FUSION_BUFFER");
  t.ActivityStart(tensor, "GLOO_ALLREDUCE");  // closes the memcpy activity
  t.ActivityEnd(tensor);
  t.End(tensor, "float32", "[2, 3]");
}

std::vector<std::string> Names(const nlohmann::json& trace) {
  std::vector<std::string> names;
  for (const auto& e : trace)
    names.push_back(e["ph"].get<std::string>() + ":" + e["name"].get<std::string>());
  return names;
}

TEST_F(TimelineTest, WritesHorovodLayout) {
  // Given a started timeline that marks cycles
  Timeline t(FakeClock());
  const std::string path = Path("timeline.json");
  ASSERT_TRUE(t.Start(path, {.mark_cycles = true}).ok());
  // When one cycle negotiates and reduces a tensor
  t.MarkCycleStart();
  RecordAllreduce(t, "allreduce.test_allreduce");
  t.Stop();
  // Then the file holds Horovod's records in order
  nlohmann::json trace = ParseFile(path);
  EXPECT_EQ(Names(trace), (std::vector<std::string>{
                              "M:process_name", "M:process_sort_index", "i:CYCLE_START",
                              "M:process_name", "M:process_sort_index", "B:NEGOTIATE_ALLREDUCE",
                              "X:0", "X:1", "E:", "B:ALLREDUCE", "B:MEMCPY_IN_FUSION_BUFFER",
                              "E:", "B:GLOO_ALLREDUCE", "E:", "E:", "M:hvd_dropped_events"}));
  EXPECT_EQ(trace[0]["args"]["start_time_since_epoch_in_micros"], kEpoch);
  EXPECT_EQ(trace[2]["s"], "g");
  EXPECT_EQ(trace[2]["ts"], 10);  // one tick after Start read the clock
  // The tensor is its own process row
  EXPECT_EQ(trace[3]["args"]["name"], "allreduce.test_allreduce");
  const int pid = trace[3]["pid"];
  EXPECT_EQ(pid, 1);
  for (size_t i = 5; i + 1 < trace.size(); ++i) EXPECT_EQ(trace[i]["pid"], pid) << i;
  EXPECT_EQ(trace[6]["dur"], 0);
  // The final E carries dtype and shape
  EXPECT_EQ(trace[14]["args"]["dtype"], "float32");
  EXPECT_EQ(trace[14]["args"]["shape"], "[2, 3]");
  EXPECT_EQ(trace.back()["args"]["dropped_events"], 0);
}

TEST_F(TimelineTest, CyclesAreOnlyMarkedWhenAsked) {
  // Given a timeline without mark_cycles
  Timeline t(FakeClock());
  ASSERT_TRUE(t.Start(Path("t.json")).ok());
  // When cycles are marked
  t.MarkCycleStart();
  t.Stop();
  // Then no CYCLE_START is written
  EXPECT_EQ(ReadFile(Path("t.json")).find("CYCLE_START"), std::string::npos);
}

TEST_F(TimelineTest, InactiveTimelineIgnoresEvents) {
  // Given a timeline never started
  Timeline t(FakeClock());
  // When events arrive, then nothing happens (and no clock reads are wasted)
  RecordAllreduce(t, "x");
  EXPECT_FALSE(t.active());
  EXPECT_EQ(ticks_.load(), 0);
}

TEST_F(TimelineTest, RestartsIntoASecondFile) {
  // Given a timeline that wrote tensor a to one file
  Timeline t(FakeClock());
  ASSERT_TRUE(t.Start(Path("first.json")).ok());
  RecordAllreduce(t, "grad.a");
  // When it is started again on another file (without an explicit Stop) and sees tensor b
  ASSERT_TRUE(t.Start(Path("second.json")).ok());
  RecordAllreduce(t, "grad.b");
  t.Stop();
  // Then each file is complete, holds only its own tensor, and rows restart at pid 1
  const std::string first = ReadFile(Path("first.json"));
  const std::string second = ReadFile(Path("second.json"));
  EXPECT_NE(first.find("grad.a"), std::string::npos);
  EXPECT_EQ(first.find("grad.b"), std::string::npos);
  EXPECT_EQ(second.find("grad.a"), std::string::npos);
  nlohmann::json trace = ParseFile(Path("second.json"));
  EXPECT_EQ(trace[2]["args"]["name"], "grad.b");
  EXPECT_EQ(trace[2]["pid"], 1);
  EXPECT_EQ(ParseFile(Path("first.json")).back()["name"], "hvd_dropped_events");
}

TEST_F(TimelineTest, RestartingOnTheSameFileStartsItOver) {
  Timeline t(FakeClock());
  ASSERT_TRUE(t.Start(Path("running.json")).ok());
  RecordAllreduce(t, "grad.a");
  ASSERT_TRUE(t.Start(Path("running.json")).ok());
  RecordAllreduce(t, "grad.c");
  t.Stop();
  const std::string text = ReadFile(Path("running.json"));
  EXPECT_EQ(text.find("grad.a"), std::string::npos) << text;
  EXPECT_NE(text.find("grad.c"), std::string::npos) << text;
  ParseFile(Path("running.json"));
}

// The same file under another name (relative and absolute, "./", a symbolic link) is the same
// file: until 2026-12-01 the new writer truncated it under the running one, which then wrote its
// last records at their old offsets (a file of NUL bytes no parser or repair could read).
TEST_F(TimelineTest, RestartingOnTheSameFileUnderAnotherNameStartsItOver) {
  std::filesystem::create_symlink(Path("running.json"), Path("link.json"));
  for (const std::string& other : {dir_.string() + "/./running.json", Path("link.json")}) {
    Timeline t(FakeClock());
    ASSERT_TRUE(t.Start(Path("running.json")).ok());
    for (int i = 0; i < 3000; ++i) RecordAllreduce(t, "grad.a" + std::to_string(i % 7));
    ASSERT_TRUE(t.Start(other).ok()) << other;
    RecordAllreduce(t, "grad.c");
    t.Stop();
    const std::string text = ReadFile(Path("running.json"));
    EXPECT_EQ(text.find('\0'), std::string::npos) << other;
    EXPECT_EQ(text.find("grad.a"), std::string::npos) << other;
    EXPECT_NE(text.find("grad.c"), std::string::npos) << other;
    ParseFile(Path("running.json"));
  }
}

// A switch to a path that cannot be opened fails naming it, and the running file records on
// (a failed switch used to end it).
TEST_F(TimelineTest, AFailedSwitchKeepsTheRunningFile) {
  Timeline t(FakeClock());
  ASSERT_TRUE(t.Start(Path("kept.json")).ok());
  RecordAllreduce(t, "grad.a");
  Status failed = t.Start(Path("missing-dir/other.json"));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("missing-dir/other.json"), std::string::npos);
  EXPECT_TRUE(t.active());
  RecordAllreduce(t, "grad.b");
  t.Stop();
  const std::string text = ReadFile(Path("kept.json"));
  EXPECT_NE(text.find("grad.a"), std::string::npos);
  EXPECT_NE(text.find("grad.b"), std::string::npos) << text;
  ParseFile(Path("kept.json"));
}

// A timeline started (or switched) while a negotiation or an op was in flight used to begin
// with an E (and rank ticks) whose B it never held: "1 unmatched end events" in the summary.
TEST_F(TimelineTest, SpansInFlightAtStartOrSwitchLeaveNoOrphanEnd) {
  // Given a negotiation of tensor a and an op of tensor b begun while the timeline is off
  Timeline t(FakeClock());
  ASSERT_TRUE(t.Start(Path("before.json")).ok());
  t.Stop();
  t.NegotiateStart("a", "ALLREDUCE");
  t.NegotiateRankReady("a", 0);
  t.Start("b", "ALLREDUCE");
  t.ActivityStart("b", "MEMCPY_IN_FUSION_BUFFER");
  // When the timeline starts and both finish, and tensor c's negotiation is cut by a switch
  ASSERT_TRUE(t.Start(Path("first.json")).ok());
  t.NegotiateRankReady("a", 1);
  t.NegotiateEnd("a");
  t.ActivityStart("b", "GLOO_ALLREDUCE");
  t.ActivityEnd("b");
  t.End("b", "float32", "[4]");
  t.Start("a", "ALLREDUCE");
  t.ActivityStart("a", "GLOO_ALLREDUCE");
  t.End("a", "float32", "[4]");
  t.NegotiateStart("c", "ALLREDUCE");
  ASSERT_TRUE(t.Start(Path("second.json")).ok());
  t.NegotiateRankReady("c", 1);
  t.NegotiateEnd("c");
  RecordAllreduce(t, "d");
  t.Stop();
  // Then the first file holds a's op span and c's cut negotiation, nothing of b and no E
  // without its B
  EXPECT_EQ(Names(ParseFile(Path("first.json"))),
            (std::vector<std::string>{"M:process_name", "M:process_sort_index", "M:process_name",
                                      "M:process_sort_index", "B:ALLREDUCE", "B:GLOO_ALLREDUCE",
                                      "E:", "E:", "M:process_name", "M:process_sort_index",
                                      "B:NEGOTIATE_ALLREDUCE", "M:hvd_dropped_events"}));
  // And the second holds tensor d whole and nothing of c
  const std::string second = ReadFile(Path("second.json"));
  EXPECT_EQ(second.find("\"c\""), std::string::npos) << second;
  for (const char* file : {"first.json", "second.json"}) {
    Result<TimelineSummary> s = SummarizeFile(Path(file));
    ASSERT_TRUE(s.ok()) << file;
    EXPECT_EQ(s->unmatched_ends, 0) << file;
  }
  Result<TimelineSummary> s = SummarizeFile(Path("second.json"));
  EXPECT_EQ(s->open_spans, 0);
  EXPECT_EQ(s->by_op.at("ALLREDUCE").count, 1);
}

TEST_F(TimelineTest, AllRanksModePutsEachRankOnItsOwnRowWithClockOffsets) {
  // Given an all-ranks timeline whose rank 1 clock runs 500 µs ahead of rank 0's
  Timeline t([] { return kEpoch; });
  const std::string path = Path("all.json");
  ASSERT_TRUE(t.Start(path, {.all_ranks = true}).ok());
  t.SetClockOffset(1, -500);
  // When both ranks report the same op at the same true time (rank 1's events arrive
  // encoded, as if gathered to rank 0)
  auto op = [](int rank, int64_t t0) {
    auto event = [&](EventType type, int64_t dt, const char* name) {
      TimelineEvent e;
      e.type = type;
      e.rank = rank;
      e.time_us = t0 + dt;
      e.tensor = "grad.w";
      e.name = name;
      return e;
    };
    std::vector<TimelineEvent> events;
    events.push_back(event(EventType::kStart, 100, "ALLREDUCE"));
    events.push_back(event(EventType::kActivityStart, 110, "GLOO_ALLREDUCE"));
    events.push_back(event(EventType::kActivityEnd, 150, ""));
    TimelineEvent end = event(EventType::kEnd, 160, "");
    end.dtype = "float32";
    end.shape = "[4]";
    events.push_back(end);
    return events;
  };
  for (const TimelineEvent& e : op(0, kEpoch)) t.Record(e);
  Result<std::vector<TimelineEvent>> remote = DecodeEvents(EncodeEvents(op(1, kEpoch + 500)));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  for (const TimelineEvent& e : *remote) t.Record(e);
  t.Stop();
  // Then each rank is a process row ("rank N"), the tensor a thread row in both, and the
  // two spans line up in time
  nlohmann::json trace = ParseFile(path);
  std::map<int, std::string> process_names;
  std::map<int, std::vector<int64_t>> begin_ts;
  for (const auto& e : trace) {
    if (e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
    if (e["name"] == "thread_name") {
      EXPECT_EQ(e["args"]["name"], "grad.w");
    }
    if (e["ph"] == "B") begin_ts[e["pid"]].push_back(e["ts"]);
  }
  EXPECT_EQ(process_names[1], "rank 0");
  EXPECT_EQ(process_names[2], "rank 1");
  EXPECT_EQ(begin_ts[1], (std::vector<int64_t>{100, 110}));
  EXPECT_EQ(begin_ts[2], (std::vector<int64_t>{100, 110}));
  // And the summary sees two allreduces of grad.w, 160 µs each
  Result<TimelineSummary> s = SummarizeFile(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->by_op.at("ALLREDUCE").count, 2);
  EXPECT_DOUBLE_EQ(s->by_op.at("ALLREDUCE").op_us, 120.0);
}

// A shipment crosses hosts on the data connections: a time that cannot be placed on rank 0's
// clock (it overflows with the rank's offset) is left out, with the rest of its span, and the
// file stays a timeline (it was signed overflow before).
TEST_F(TimelineTest, AShippedTimeBeyondTheClockIsLeftOut) {
  Timeline t([] { return kEpoch; });
  const std::string path = Path("far.json");
  ASSERT_TRUE(t.Start(path, {.all_ranks = true}).ok());
  t.SetClockOffset(1, std::numeric_limits<int64_t>::max() - 10);
  auto span = [](int rank, int64_t begin) {
    std::vector<TimelineEvent> events(2);
    events[0].type = EventType::kStart;
    events[0].name = "ALLREDUCE";
    events[1].type = EventType::kEnd;
    for (int i = 0; i < 2; ++i) {
      events[i].rank = rank;
      events[i].time_us = begin + 5 * i;
      events[i].tensor = "grad.w";
    }
    return events;
  };
  const std::vector<TimelineEvent> far = span(1, kEpoch), near = span(2, kEpoch + 1);
  uint64_t dropped = 0;
  for (const auto& events : {far, near}) {
    auto shipped = DecodeShipment(EncodeShipment(0, events), &dropped);
    ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
    for (const TimelineEvent& e : *shipped) t.Record(e);
  }
  t.Stop();
  int begins = 0, ends = 0;
  for (const auto& e : ParseFile(path)) {
    begins += e["ph"] == "B";
    ends += e["ph"] == "E";
  }
  EXPECT_EQ(begins, 1) << "rank 2's span only";
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(DecodeShipment("12", &dropped).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeShipment("x\n", &dropped).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TimelineTest, CollectingKeepsEventsForShippingAndQueueSpansGetTheirOwnRow) {
  // Given rank 1 collecting (no file) with room for 3 events
  Timeline collector([] { return kEpoch + 1000; }, /*local_rank=*/1);
  collector.StartCollecting({.all_ranks = true, .queue_capacity = 3});
  ASSERT_TRUE(collector.active());
  // When it records a QUEUE span and an op, and marks a cycle
  collector.Queue("grad.w", "ALLREDUCE", kEpoch + 400);
  collector.MarkCycleStart();  // rank 0 marks the job's cycles; not collected
  collector.Start("grad.w", "ALLREDUCE");
  collector.End("grad.w", "float32", "[4]", 16);
  collector.End("grad.w", "float32", "[4]", 16);  // over capacity: dropped
  // Then the events come out once, with the drop counted
  std::vector<TimelineEvent> events;
  EXPECT_EQ(collector.TakeCollected(&events), 1u);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, EventType::kQueue);
  EXPECT_EQ(events[0].time_us, kEpoch + 400);
  EXPECT_EQ(events[0].dur_us, 600);
  EXPECT_EQ(events[0].rank, 1);
  EXPECT_EQ(collector.TakeCollected(&events), 0u);
  EXPECT_TRUE(events.empty());
  // And when rank 0 writes them (as shipped), the QUEUE span is a complete event on the
  // tensor's QUEUE thread row of rank 1's process, and the drop is in the final count
  Timeline writer([] { return kEpoch; });
  const std::string path = Path("shipped.json");
  ASSERT_TRUE(writer.Start(path, {.all_ranks = true}).ok());
  collector.StartCollecting({.all_ranks = true});
  collector.Queue("grad.w", "ALLREDUCE", kEpoch + 400);
  collector.TakeCollected(&events);
  Result<std::vector<TimelineEvent>> shipped = DecodeEvents(EncodeEvents(events));
  ASSERT_TRUE(shipped.ok());
  for (const TimelineEvent& e : *shipped) writer.Record(e);
  writer.AddDropped(1);
  writer.Stop();
  nlohmann::json trace = ParseFile(path);
  std::map<int, std::string> threads;
  const nlohmann::json* queue = nullptr;
  for (const auto& e : trace) {
    if (e["name"] == "thread_name") threads[e["tid"]] = e["args"]["name"];
    if (e["name"] == "QUEUE") queue = &e;
  }
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ((*queue)["ph"], "X");
  EXPECT_EQ((*queue)["pid"], 2);
  EXPECT_EQ((*queue)["ts"], 400);
  EXPECT_EQ((*queue)["dur"], 600);
  EXPECT_EQ((*queue)["args"]["op"], "ALLREDUCE");
  EXPECT_EQ(threads[(*queue)["tid"].get<int>()], "grad.w QUEUE");
  EXPECT_EQ(trace.back()["args"]["dropped_events"], 1);
}

// hvd.stop_timeline on a rank other than 0 (all-ranks mode) used to discard what it had
// collected since the last shipment, so rank 0's file lacked that rank's last ops, with no drop
// counted.
TEST_F(TimelineTest, CollectedEventsOutliveStopAndRestartUntilTaken) {
  // Given rank 1 collecting, with an op and a drop not yet shipped
  Timeline collector([] { return kEpoch; }, /*local_rank=*/1);
  collector.StartCollecting({.all_ranks = true, .queue_capacity = 2});
  collector.Start("grad.w", "ALLREDUCE");
  collector.End("grad.w", "float32", "[4]", 16);
  collector.End("grad.w", "float32", "[4]", 16);  // over capacity: dropped
  // When it is stopped, records nothing more, and is started again
  collector.Stop();
  EXPECT_FALSE(collector.active());
  collector.Start("grad.after_stop", "ALLREDUCE");
  collector.StartCollecting({.all_ranks = true});
  collector.Start("grad.v", "ALLREDUCE");
  // Then the next shipment still holds the op and the drop, then what came after the restart
  std::vector<TimelineEvent> events;
  EXPECT_EQ(collector.TakeCollected(&events), 1u);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].tensor, "grad.w");
  EXPECT_EQ(events[1].type, EventType::kEnd);
  EXPECT_EQ(events[2].tensor, "grad.v");
}

TEST_F(TimelineTest, TinyQueueDropsEventsButFileStaysValid) {
  // Given a timeline whose writer queue holds one record
  Timeline t(FakeClock());
  const std::string path = Path("tiny.json");
  ASSERT_TRUE(t.Start(path, {.queue_capacity = 1}).ok());
  // When a burst of tensors is recorded
  for (int i = 0; i < 2000; ++i) RecordAllreduce(t, "grad." + std::to_string(i % 50));
  t.Stop();
  // Then events were dropped and counted, the file parses, and its last record says so
  EXPECT_GT(t.dropped_events(), 0u);
  nlohmann::json trace = ParseFile(path);
  ASSERT_TRUE(trace.is_array());
  EXPECT_EQ(trace.back()["args"]["dropped_events"], t.dropped_events());
  // And the summary copes with the unbalanced spans that dropping leaves, and says how many
  Result<TimelineSummary> summary = SummarizeFile(path);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(static_cast<uint64_t>(summary->dropped_events), t.dropped_events());
  EXPECT_NE(FormatSummary(*summary).find(std::to_string(t.dropped_events()) +
                                         " events were dropped while recording"),
            std::string::npos);
}

// An E that cannot be queued (the queue is full) leaves its span open until the row's next
// event closes it: until 2026-12-01 the span stayed open for good and every later span of the
// tensor nested inside it (Chrome drew a staircase, the summary counted one op).
TEST_F(TimelineTest, ASpanWhoseEndWasDroppedIsClosedByTheRowsNextEvent) {
  Timeline t(FakeClock());
  const std::string path = Path("drops.json");
  ASSERT_TRUE(t.Start(path, {.queue_capacity = 16}).ok());
  // Bursts of 18 records into a queue of 16, the writer draining between them (it polls every
  // millisecond while busy): the ends of some spans are dropped, later spans are written.
  for (int i = 0; i < 500; ++i) {
    RecordAllreduce(t, "grad");
    if (i % 2 == 1) ::usleep(2000);
  }
  t.Stop();
  ASSERT_GT(t.dropped_events(), 0u);
  nlohmann::json trace = ParseFile(path);
  std::map<std::pair<int, int>, int> depth;
  int deepest = 0, ops = 0;
  for (const auto& e : trace) {
    const std::string ph = e["ph"];
    auto& d = depth[{e.value("pid", 0), e.value("tid", 0)}];
    if (ph == "B") deepest = std::max(deepest, ++d);
    if (ph == "B" && e["name"] == "ALLREDUCE") ++ops;
    if (ph == "E") {
      EXPECT_GT(d--, 0) << "an E without its B";
    }
  }
  // NEGOTIATE is closed before the op begins; an activity nests in the op: never deeper.
  EXPECT_LE(deepest, 2);
  Result<TimelineSummary> summary = SummarizeFile(path);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->unmatched_ends, 0);
  EXPECT_LE(summary->open_spans, 2);
  ASSERT_GT(ops, 1);
  EXPECT_GE(summary->by_op["ALLREDUCE"].count, ops - 1);
}

// A file that can no longer be written (a full disk: here the file size limit) turns the
// timeline off, as docs/timeline.md says, and leaves valid JSON; the job goes on. Run in a child
// process: the limit is the process's.
TEST_F(TimelineTest, AWriteFailureTurnsTheTimelineOffAndLeavesValidJson) {
  const std::string path = Path("full.json");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {200000, 200000};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    Timeline t(FakeClock());
    if (!t.Start(path).ok()) ::_exit(2);
    for (int i = 0; i < 30000 && t.active(); ++i) {
      RecordAllreduce(t, "grad." + std::to_string(i % 50));
      if (i % 100 == 0) ::usleep(1000);  // the writer drains: the failure, not the queue
    }
    const bool turned_off = !t.active();
    t.Stop();
    ::_exit(turned_off ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: the timeline stayed on after the write failed";
  nlohmann::json trace = ParseFile(path);
  EXPECT_TRUE(trace.is_array());
  EXPECT_GT(trace.size(), 100u);
}

TEST(TimelineEventTest, EncodeDecodeRoundTripsAwkwardNames) {
  TimelineEvent e;
  e.type = EventType::kEnd;
  e.rank = 3;
  e.time_us = -5;
  e.tensor = "a\tb\nc\\d";
  e.name = "";
  e.dtype = "float32";
  e.shape = "[2, 3]";
  e.bytes = 24;
  e.dur_us = 7;
  Result<std::vector<TimelineEvent>> back = DecodeEvents(EncodeEvents({e, e}));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].tensor, e.tensor);
  EXPECT_EQ((*back)[1].time_us, -5);
  EXPECT_EQ((*back)[1].dur_us, 7);
  EXPECT_EQ((*back)[1].shape, "[2, 3]");
  EXPECT_TRUE(DecodeEvents("").ok());
  EXPECT_EQ(DecodeEvents("end\t0\t1\tt\tn\t-1\t\t\t-1\t0\n").status().code(), StatusCode::kOk);
  EXPECT_EQ(DecodeEvents("end\t0\tx\tt\tn\t-1\t\t\t-1\t0\n").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeEvents("end\t0\t1\tt\\q\tn\t-1\t\t\t-1\t0\n").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(TimelineEventTest, DecodeRejectsMalformedInput) {
  const char* cases[] = {"not json", "{}", R"([["start",0,1,"t","n",-1,"","",-1,"extra"]])",
                         R"([["bogus",0,1,"t","n",-1,"","",-1]])",
                         R"([["start","0",1,"t","n",-1,"","",-1]])"};
  for (const char* text : cases) {
    SCOPED_TRACE(text);
    EXPECT_EQ(DecodeEvents(text).status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace hvd::timeline
