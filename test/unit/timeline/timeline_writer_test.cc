#include "timeline/timeline_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "test/unit/timeline/test_files.h"

namespace hvd::timeline {
namespace {

using testing::ParseFile;
using testing::ReadFile;

class TimelineWriterTest : public testing::TempDirTest {};

TraceRecord Begin(int i) { return TraceRecord{'B', "EVENT_" + std::to_string(i), 1, 0, i, {}}; }

std::vector<TraceRecord> Header() {
  return {TraceRecord{'M', "process_name", 0, 0, 0, {{"name", std::string("hvd")}}}};
}

TEST_F(TimelineWriterTest, FileIsAValidArrayBeforeDuringAndAfterWriting) {
  // Given an open writer
  TimelineWriter writer(1024);
  const std::string path = Path("t.json");
  ASSERT_TRUE(writer.Open(path, Header()).ok());
  // Then the file already parses, holding the header
  EXPECT_EQ(ParseFile(path).size(), 1u);
  // When records are queued and the writer has caught up
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(writer.Enqueue(Begin(i)));
  for (int spin = 0; writer.written() < 11 && spin < 5000; ++spin) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Then the file parses while the writer is still open
  nlohmann::json during = ParseFile(path);
  EXPECT_EQ(during.size(), 11u);
  // When closed, the dropped-events record is appended
  writer.Close();
  nlohmann::json after = ParseFile(path);
  ASSERT_EQ(after.size(), 12u);
  EXPECT_EQ(after[1]["name"], "EVENT_0");
  EXPECT_EQ(after.back()["name"], "hvd_dropped_events");
  EXPECT_EQ(after.back()["args"]["dropped_events"], 0);
  EXPECT_FALSE(writer.Enqueue(Begin(99))) << "closed writers refuse records";
  writer.Close();  // idempotent
}

TEST_F(TimelineWriterTest, FullQueueDropsAndCountsInsteadOfBlocking) {
  // Given a tiny queue
  TimelineWriter writer(2);
  const std::string path = Path("t.json");
  ASSERT_TRUE(writer.Open(path, Header()).ok());
  // When a burst far larger than the queue is produced
  constexpr int kBurst = 50000;
  int accepted = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBurst; ++i) accepted += writer.Enqueue(Begin(i)) ? 1 : 0;
  auto elapsed = std::chrono::steady_clock::now() - start;
  writer.Close();
  // Then some events were dropped, every accepted one is in the file, the count adds up,
  // and the final record reports it
  EXPECT_GT(writer.dropped(), 0u);
  EXPECT_EQ(writer.dropped() + accepted, static_cast<uint64_t>(kBurst));
  nlohmann::json trace = ParseFile(path);
  ASSERT_EQ(trace.size(), 1u + accepted + 1u);
  EXPECT_EQ(trace.back()["args"]["dropped_events"], writer.dropped());
  // (the producer never waited on the writer: 50k pushes take well under a second)
  EXPECT_LT(elapsed, std::chrono::seconds(5));
}

TEST_F(TimelineWriterTest, OpenFailureNamesThePath) {
  // Given a path in a directory that does not exist
  TimelineWriter writer(8);
  const std::string path = Path("missing/dir/t.json");
  // When opening, then the error names it
  Status s = writer.Open(path, Header());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_FALSE(writer.Enqueue(Begin(0)));
}

// A child process writes a timeline and dies without Stop(); the file must still parse.
TEST_F(TimelineWriterTest, AbandonedMidRunLeavesParseableFile) {
  struct Case {
    const char* name;
    bool sigkill;  // else the child calls _exit() with records still queued
  };
  for (const Case c : {Case{"SIGKILL while writing", true}, Case{"_exit without Close", false}}) {
    SCOPED_TRACE(c.name);
    const std::string path =
        Path(std::string("abandoned_") + (c.sigkill ? "kill" : "exit") + ".json");
    // Given a child that writes records as fast as it can
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      TimelineWriter writer(4096);
      if (!writer.Open(path, Header()).ok()) ::_exit(3);
      for (int i = 0;; ++i) {
        writer.Enqueue(Begin(i));
        if (!c.sigkill && writer.written() > 2000) ::_exit(0);
      }
    }
    // When it has written something (and, for SIGKILL, is killed mid-run): the file starts
    // as a 64 KiB region of spaces and grows once the records fill it
    if (c.sigkill) {
      for (int spin = 0; spin < 5000; ++spin) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path, ec);  // (uintmax_t)-1 on error
        if (!ec && size > 96 * 1024) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ::kill(child, SIGKILL);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    if (c.sigkill) {
      EXPECT_TRUE(WIFSIGNALED(status));
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    // Then the file is a valid JSON array holding the header and many records, unless the
    // death fell between the two writes that grow the region of spaces (TimelineWriter): then
    // the file ends on a page boundary in a second closing bracket, after the first one and
    // spaces, and everything up to the first bracket is intact.
    const std::string content = ReadFile(path);
    const std::string ending = content.substr(content.size() > 300 ? content.size() - 300 : 0);
    nlohmann::json trace = nlohmann::json::parse(content, nullptr, false);
    if (trace.is_discarded()) {
      ASSERT_EQ(content.size() % 4096, 0u)
          << "torn away from a page boundary, ending in: " << ending;
      ASSERT_EQ(content.substr(content.size() - 3), "\n]\n") << ending;
      const size_t first = content.find_last_not_of(' ', content.size() - 4);
      ASSERT_NE(first, std::string::npos) << ending;
      trace = nlohmann::json::parse(content.substr(0, first + 1), nullptr, false);
      ASSERT_FALSE(trace.is_discarded())
          << "not valid up to the first bracket, ending in: " << ending;
    }
    ASSERT_TRUE(trace.is_array()) << content.size() << " bytes, ending in: " << ending;
    EXPECT_GT(trace.size(), 100u) << ReadFile(path).size() << " bytes";
    EXPECT_EQ(trace[0]["name"], "process_name");
  }
}

// Records are written in runs of many pages at once; a SIGKILL can stop such a write only
// between two pages, so no record may cross a page boundary and a file cut at any page boundary
// of its records (the rest still spaces) must parse.
TEST_F(TimelineWriterTest, NoRecordCrossesAPageSoAWriteTornBetweenPagesLeavesWholeRecords) {
  // Given records of irregular lengths, and one longer than a page (the documented exception)
  TimelineWriter writer(1 << 14);
  const std::string path = Path("t.json");
  ASSERT_TRUE(writer.Open(path, Header()).ok());
  constexpr int kRecords = 3000;
  for (int i = 0; i < kRecords; ++i) {
    TraceRecord r = Begin(i);
    r.name += std::string(static_cast<size_t>(i * 7 % 61), 'x');
    if (i == 1234) r.name = std::string(5000, 'L');
    ASSERT_TRUE(writer.Enqueue(std::move(r)));
  }
  // When the writer has written them all
  writer.Close();
  const std::string content = ReadFile(path);
  ASSERT_EQ(ParseFile(path).size(), 1u + kRecords + 1u);
  // Then every record but the long one lies inside one 4 KiB page
  size_t records = 0;
  size_t long_begin = 0, long_end = 0;
  for (size_t at = content.find("\n{"); at != std::string::npos; at = content.find("\n{", at)) {
    const size_t begin = at + 1;
    const size_t end = content.find('}', begin);  // the names hold no braces
    ASSERT_NE(end, std::string::npos);
    ++records;
    if (end - begin + 1 <= 4096) {
      EXPECT_EQ(begin / 4096, end / 4096) << "record at byte " << begin << " crosses a page";
    } else {
      EXPECT_EQ((begin - 2) % 4096, 0u)
          << "a record longer than a page starts a page (its \",\\n\" first)";
      long_begin = begin;
      long_end = end;
    }
    at = end;
  }
  EXPECT_EQ(records, 1u + kRecords + 1u);
  ASSERT_GT(long_end, long_begin) << "the long record was found";
  // And a write torn at any page boundary of the records leaves a valid array of whole records
  const size_t last = content.rfind('}');
  for (size_t cut = 4096; cut < last; cut += 4096) {
    std::string torn = content;
    std::fill(torn.begin() + static_cast<std::ptrdiff_t>(cut),
              torn.begin() + static_cast<std::ptrdiff_t>(last + 1), ' ');
    if (cut > long_begin && cut <= long_end) continue;  // inside the long record: torn there
    const nlohmann::json trace = nlohmann::json::parse(torn, nullptr, false);
    ASSERT_FALSE(trace.is_discarded()) << "cut at " << cut << " leaves a partial record";
  }
}

}  // namespace
}  // namespace hvd::timeline
